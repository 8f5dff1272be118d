/**
 * Request key races on SQLite: two instances, each with its own connection
 * to one file (see test/runtime/RequestsRaces.ts).
 */
import { describe, it } from "@effect/vitest"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { oneStartPerKey } from "../runtime/RequestsRaces.ts"
import { tempDb } from "./tmp.ts"

const path = tempDb("requests")

describe("request keys on SQLite, two connections", () => {
  it.live("8 concurrent start/execute calls of one request key across two instances: one execution, its step once; 8 racing keyed resumes: one continuation", () =>
    oneStartPerKey(SqliteStores.layer({ path }), SqliteStores.layer({ path }), 8), { timeout: 60_000 })
})
