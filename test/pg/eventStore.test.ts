/**
 * The EventStore conformance suite against the Postgres Layers: two
 * `PgStores` bundles, each with its own pool, on one schema of this run.
 */
import { PgStores } from "../../layers/pg/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("events")
const instance = () => PgStores.layer({ url, schema, maxConnections: 4, wakeups: false })

Conformance.eventStoreSuite({ name: "postgres, two pools on one schema", layer: instance(), second: instance() })
