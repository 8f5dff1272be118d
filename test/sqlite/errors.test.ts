/**
 * `StoreError` on SQLite tells the truth about what failed: its `kind` from
 * the SQLite result code (or node:sqlite's own refusal), whether it is
 * `transient`, and a message that says "can be retried" only when it is.
 */
import { describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqliteClient, SqliteStores } from "../../layers/sqlite/index.ts"
import { run } from "../../layers/sql/internal/rows.ts"
import { assertPermanent, assertTransient, storeFailure } from "../storeErrors.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("errors")
let n = 0


const client = (scope: Scope.Scope, options: SqliteClient.SqliteClientOptions) =>
  Effect.map(Layer.buildWithScope(SqliteClient.layer(options), scope), (ctx) => Context.get(ctx, SqlClient.SqlClient))

describe("StoreError kinds on SQLite", () => {
  it.effect("a file that is not a database fails the bundle's build with a permanent Config error", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, `garbage-${++n}.db`)
      Fs.writeFileSync(path, "this is no SQLite database, just text long enough to have a header....................................")
      const error = yield* storeFailure(Layer.build(SqliteStores.layer({ path })).pipe(Effect.scoped))
      assertPermanent(error, "Config")
    }))

  it.effect("a duplicate key is a permanent Constraint error; a value node:sqlite cannot bind is a permanent Data error", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const sql = yield* client(scope, { path: Path.join(dir, `data-${++n}.db`) })
      yield* sql`CREATE TABLE t (k TEXT PRIMARY KEY)`
      yield* sql`INSERT INTO t VALUES ('a')`
      assertPermanent(yield* storeFailure(run("Test", "insert", () => sql`INSERT INTO t VALUES ('a')`)), "Constraint")
      assertPermanent(yield* storeFailure(run("Test", "insert", () => sql`INSERT INTO t VALUES (${2n ** 70n})`)), "Data")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a database locked by another connection is a transient Busy error that says it can be retried", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, `busy-${++n}.db`)
      const scope = yield* Scope.make()
      const a = yield* client(scope, { path, busyTimeout: 0 })
      const b = yield* client(scope, { path, busyTimeout: 0, busyRetries: 0 })
      yield* a`CREATE TABLE t (k TEXT)`
      const error = yield* a.withTransaction(
        Effect.andThen(a`INSERT INTO t VALUES ('a')`, storeFailure(run("Test", "insert", () => b`INSERT INTO t VALUES ('b')`)))
      )
      assertTransient(error, "Busy")
      yield* Scope.close(scope, Exit.void)
    }))
})
