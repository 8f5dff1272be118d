/**
 * The ScheduleStore conformance suite on Postgres: two pools on one schema.
 */
import { PgStores } from "../../layers/pg/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("schedules")
const instance = () => PgStores.layer({ url, schema, maxConnections: 4, wakeups: false })

Conformance.scheduleStoreSuite({ name: "postgres, two pools on one schema", layer: instance(), second: instance() })
