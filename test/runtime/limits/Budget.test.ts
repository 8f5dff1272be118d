/**
 * Spend budgets across three instances on memory (one shared state) and
 * SQLite (three connections on one file).
 */
import { describe } from "@effect/vitest"
import { Layer } from "effect"
import { MemoryLedgerStore, MemoryRateLimitStore, MemoryState } from "../../../layers/memory/index.ts"
import { SqliteStores } from "../../../layers/sqlite/index.ts"
import { tempDb } from "../../sqlite/tmp.ts"
import { budgetRaces } from "./budgetRace.ts"

const memory = Layer.merge(MemoryLedgerStore.layer, MemoryRateLimitStore.layer).pipe(Layer.provide(MemoryState.layer))
const path = tempDb("budget")
const sqlite = () => Layer.merge(SqliteStores.layerLedgerStore({ path, busyTimeout: 0 }), SqliteStores.layerRateLimitStore({ path, busyTimeout: 0 }))

describe("spend budgets on memory", () => budgetRaces("memory", [memory, memory, memory]))
describe("spend budgets on SQLite, three connections", () => budgetRaces("sqlite", [sqlite(), sqlite(), sqlite()]))
