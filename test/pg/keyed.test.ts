/**
 * Keyed concurrency and debounce on Postgres, three instances over one schema (see backendScenario).
 */
import { describe } from "@effect/vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { backendScenario } from "../runtime/keyed/backendScenario.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("keyed")

describe("keyed starts on Postgres", () => {
  backendScenario("postgres", () => PgStores.layer({ url, schema, maxConnections: 4, wakeups: false }))
})
