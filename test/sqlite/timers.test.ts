/**
 * Sleeps and signals on a real SQLite file, two instances over it (see backendScenario).
 */
import { describe } from "@effect/vitest"
import { sqliteStores } from "../runtime/fixtures.ts"
import { backendScenario } from "../runtime/timers/backendScenario.ts"

describe("sleeps and signals on SQLite", () => {
  backendScenario("sqlite", () => sqliteStores)
})
