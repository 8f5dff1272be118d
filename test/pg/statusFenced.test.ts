/**
 * `setStatusFenced` on Postgres: a move that lands is one statement (see test/statusFenced.ts).
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { fencedMoveStatements } from "../statusFenced.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("status_fenced")

describe("setStatusFenced on Postgres", () => {
  it.live("a move that lands is one statement; stale leases are refused, a missed compare-and-set answers false", () =>
    fencedMoveStatements.pipe(Effect.provide(PgStores.layer({ url, schema, maxConnections: 2, wakeups: false }))))
})
