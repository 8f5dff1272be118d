/**
 * The stores' sorted reads and limited deletes compile once on `node:sqlite`:
 * run again with other values they use the cached statement, where Node 24's
 * SQLite would compile a statement again at every call when it sorts over
 * bound keys or binds its `LIMIT` (see `layers/sql/internal/stablePlan.ts`).
 * Compiles are counted with an authorizer, which SQLite asks at every compile.
 */
import { Effect, Exit, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import { constants, DatabaseSync } from "node:sqlite"
import { assert, describe, it } from "vitest"
import * as SqlExecutionHistoryStore from "../../layers/sql/SqlExecutionHistoryStore.ts"
import * as SqlMigrations from "../../layers/sql/SqlMigrations.ts"
import * as SqlPauseStore from "../../layers/sql/SqlPauseStore.ts"
import * as SqlRecordStore from "../../layers/sql/SqlRecordStore.ts"
import * as SqlRequestStore from "../../layers/sql/SqlRequestStore.ts"
import * as SqlTreeStore from "../../layers/sql/SqlTreeStore.ts"
import * as SqliteClient from "../../layers/sqlite/SqliteClient.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("compile-once")

/** A client on a fresh file, and the `DatabaseSync` it opened (caught at its first prepare). */
const open = async () => {
  const prepare = DatabaseSync.prototype.prepare
  let connection: DatabaseSync | undefined
  DatabaseSync.prototype.prepare = function(this: DatabaseSync, ...args: Parameters<typeof prepare>) {
    connection ??= this
    return prepare.apply(this, args)
  }
  const scope = Effect.runSync(Scope.make())
  try {
    const context = await Effect.runPromise(Layer.buildWithScope(SqliteClient.layer({ path: Path.join(dir, "stores.db") }), scope))
    const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.runPromise(Effect.provide(effect, context))
    await run(SqlMigrations.migrate())
    assert.isDefined(connection)
    return { connection: connection!, run, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
  } finally {
    DatabaseSync.prototype.prepare = prepare
  }
}

describe("SQLite statements compile once", () => {
  it("the sweep's and stores' sorted reads and limited deletes, run again with other values, are not compiled again", async () => {
    const db = await open()
    const { history, pauses, records, requests, tree } = await db.run(Effect.gen(function*() {
      return {
        records: yield* SqlRecordStore.makeBackend(),
        pauses: yield* SqlPauseStore.make(),
        tree: yield* SqlTreeStore.makeBackend(),
        history: yield* SqlExecutionHistoryStore.makeBackend(),
        requests: yield* SqlRequestStore.makeBackend()
      }
    }))
    // Each call with the i-th set of values; the limits are the same each time (a page size is configured once).
    const calls: ReadonlyArray<readonly [string, (i: number) => Effect.Effect<unknown, unknown>]> = [
      ["records.findByStatus", (i) => records.findByStatus(i % 2 === 0 ? "Running" : "Paused", 100, Option.none())],
      ["records.findByStatus after", (i) => records.findByStatus("Running", 100, Option.some({ tenantId: "default", executionId: `e-${i}` }))],
      ["pauses.listByRoot", (i) => pauses.listByRoot("default", `root-${i}`, ["Pending", "Resolved"])],
      ["pauses.findResolvedRoots", () => pauses.findResolvedRoots(50, Option.none())],
      ["tree.list", (i) => tree.list("default", `root-${i}`, `prefix-${i}`)],
      ["history.list", (i) => history.list({ tenantId: `tenant-${i}`, limit: 20 })],
      ["history.deleteEndedBefore", (i) => history.deleteEndedBefore(1_000 + i, 100)],
      ["requests.deleteExpired", (i) => requests.deleteExpired(1_000 + i, 100)]
    ]
    const compiles: Array<string> = []
    let current = ""
    db.connection.setAuthorizer(() => {
      compiles.push(current)
      return constants.SQLITE_OK
    })
    // Setting an authorizer expires every statement: each is compiled once more at its next run.
    for (const [name, call] of calls) {
      current = name
      await Effect.runPromise(call(0))
    }
    assert.isAbove(compiles.length, 0, "the authorizer sees compiles")
    compiles.length = 0
    for (let i = 1; i <= 3; i++) {
      for (const [name, call] of calls) {
        current = name
        await Effect.runPromise(call(i))
      }
    }
    assert.deepStrictEqual([...new Set(compiles)], [], "statements compiled again")
    db.connection.setAuthorizer(null)
    await db.close()
  })
})
