/**
 * Schedules on a SQLite file: three harness instances, each tick once under kills and after all were down.
 */
import { describe, it } from "@effect/vitest"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { oncePerTickUnderKills } from "../runtime/schedules/backends.ts"
import { tempDb } from "./tmp.ts"

describe("schedules on SQLite", () => {
  it.effect("three instances, the leader killed, then all down across three ticks: one execution per tick", () =>
    oncePerTickUnderKills(SqliteStores.layer({ path: tempDb("schedules-runtime") }), "acme", true), { timeout: 60_000 })
})
