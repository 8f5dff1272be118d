/**
 * Sleeps and signals on Postgres, two instances over one schema (see backendScenario).
 */
import { describe } from "@effect/vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { backendScenario } from "../runtime/timers/backendScenario.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("timers")

describe("sleeps and signals on Postgres", () => {
  backendScenario("postgres", () => PgStores.layer({ url, schema, maxConnections: 4, wakeups: false }))
})
