/**
 * The start races on SQLite: two instances, each with its own connection to
 * one file (see test/runtime/races.ts).
 */
import { describe, it } from "@effect/vitest"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { bornLeased, oneRootPerThread } from "../runtime/races.ts"
import { tempDb } from "./tmp.ts"

const path = tempDb("races")

describe("start races on SQLite, two connections", () => {
  it.live("200 roots start on one instance while the other sweeps as often as it may: no defect, every one finishes", () =>
    bornLeased(SqliteStores.layer({ path }), SqliteStores.layer({ path }), 200), { timeout: 120_000 })

  it.live("8 concurrent start/execute calls on one idle thread across two instances: exactly one starts", () =>
    oneRootPerThread(SqliteStores.layer({ path }), SqliteStores.layer({ path }), 8), { timeout: 60_000 })
})
