/**
 * Schedules on Postgres: three harness instances over one pool, each tick once under kills and after all were down.
 */
import { describe, it } from "@effect/vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { oncePerTickUnderKills } from "../runtime/schedules/backends.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("schedules_runtime")

describe("schedules on Postgres", () => {
  it.effect("three instances, the leader killed, then all down across three ticks: one execution per tick", () =>
    oncePerTickUnderKills(PgStores.layer({ url, schema, maxConnections: 4, wakeups: false }), "acme", false), { timeout: 60_000 })
})
