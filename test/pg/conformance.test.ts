/**
 * Every conformance suite against the Postgres Layers, as two instances: two
 * `PgStores` bundles, each with its own pool, on one schema of this run.
 */
import { Conformance } from "../../src/testing/index.ts"
import { PgStores } from "../../layers/pg/index.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("conformance")
const instance = () => PgStores.layer({ url, schema, maxConnections: 4, wakeups: false })

const setup = { name: "postgres, two pools on one schema", layer: instance(), second: instance() }

Conformance.everyStoreSuite(setup)
