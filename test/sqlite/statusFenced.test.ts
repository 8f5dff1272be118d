/**
 * `setStatusFenced` on SQLite: a move that lands is one statement (see test/statusFenced.ts).
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Path from "node:path"
import { SqlStores } from "../../layers/sql/index.ts"
import { SqliteClient, SqliteMigrations } from "../../layers/sqlite/index.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { fencedMoveStatements } from "../statusFenced.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("status-fenced")

describe("setStatusFenced on SQLite", () => {
  it.effect("a move that lands is one statement; stale leases are refused, a missed compare-and-set answers false", () =>
    fencedMoveStatements.pipe(Effect.provide(
      SqlStores.layer().pipe(
        Layer.provide(SqliteMigrations.layer()),
        Layer.provideMerge(SqliteClient.layer({ path: Path.join(dir, "stores.db") })),
        Layer.provide(Ids.layer)
      )
    )))
})
