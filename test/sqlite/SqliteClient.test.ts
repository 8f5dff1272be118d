/**
 * The node:sqlite client Layer: where its path comes from, typed errors for
 * bad settings, how it opens, locks and closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqliteClient } from "../../layers/sqlite/index.ts"
import * as WalCheckpointer from "../../layers/sqlite/internal/walCheckpointer.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("client")
let n = 0
const freshPath = () => Path.join(dir, `client-${++n}.db`)

/** Builds a client Layer in `scope` and answers its SqlClient. */
const clientIn = (scope: Scope.Scope, options: SqliteClient.SqliteClientOptions) =>
  Effect.map(Layer.buildWithScope(SqliteClient.layer(options), scope), (ctx) => Context.get(ctx, SqlClient.SqlClient))

const withConfig = (env: Record<string, string>) => Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))

const configError = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => {
    assert.strictEqual(e._tag, "BatonConfigError")
    return e as unknown as { readonly field: string; readonly reason: string; readonly message: string }
  })

describe("SqliteClient.layer", () => {
  it.effect("reads the path from BATON_SQLITE_PATH when no option names one", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, {}).pipe(withConfig({ BATON_SQLITE_PATH: path }))
      yield* sql`CREATE TABLE t (a INTEGER)`
      assert.isTrue(Fs.existsSync(path))
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a missing BATON_SQLITE_PATH is a BatonConfigError naming the setting", () =>
    Effect.gen(function*() {
      const e = yield* configError(Layer.build(SqliteClient.layer()).pipe(Effect.scoped, withConfig({})))
      assert.strictEqual(e.field, "BATON_SQLITE_PATH")
      assert.include(e.message, "BATON_SQLITE_PATH")
    }))

  it.effect("an empty BATON_SQLITE_PATH, or an empty path option, is a BatonConfigError naming it", () =>
    Effect.gen(function*() {
      const fromConfig = yield* configError(Layer.build(SqliteClient.layer()).pipe(Effect.scoped, withConfig({ BATON_SQLITE_PATH: "" })))
      assert.strictEqual(fromConfig.field, "BATON_SQLITE_PATH")
      assert.include(fromConfig.reason, "empty")
      const fromOption = yield* configError(Layer.build(SqliteClient.layer({ path: "  " })).pipe(Effect.scoped))
      assert.strictEqual(fromOption.field, "path")
    }))

  it.effect("a path in a folder that does not exist is a BatonConfigError naming the path", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, "no-such-folder", "x.db")
      const e = yield* configError(Layer.build(SqliteClient.layer({ path })).pipe(Effect.scoped))
      assert.strictEqual(e.field, "path")
      assert.include(e.message, path)
      assert.include(e.message, Path.join(dir, "no-such-folder"))
      const viaConfig = yield* configError(
        Layer.build(SqliteClient.layer()).pipe(Effect.scoped, withConfig({ BATON_SQLITE_PATH: path }))
      )
      assert.strictEqual(viaConfig.field, "BATON_SQLITE_PATH")
      assert.include(viaConfig.message, path)
    }))

  it.effect("bad options are BatonConfigErrors naming the option", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const cases: ReadonlyArray<readonly [SqliteClient.SqliteClientOptions, string]> = [
        [{ path, busyTimeout: -1 }, "busyTimeout"],
        [{ path, synchronous: "OFF" as any }, "synchronous"],
        [{ path, busyRetries: 1.5 }, "busyRetries"],
        [{ path, statementCacheSize: 0 }, "statementCacheSize"],
        [{ path, walCheckpoint: "sometimes" as any }, "walCheckpoint"],
        [{ path, walCheckpointInterval: "1 millis" }, "walCheckpointInterval"],
        [{ path, walCheckpiont: "inline" } as SqliteClient.SqliteClientOptions, "walCheckpiont"],
        [{ path, busytimeout: 10 } as SqliteClient.SqliteClientOptions, "busytimeout"]
      ]
      for (const [options, field] of cases) {
        const e = yield* configError(Layer.build(SqliteClient.layer(options)).pipe(Effect.scoped))
        assert.strictEqual(e.field, field)
      }
    }))

  it.effect("a busy timeout that cannot work is refused naming the field and saying what it was: NaN, Infinity, negative, above 60 s", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const cases: ReadonlyArray<readonly [SqliteClient.SqliteClientOptions, RegExp]> = [
        [{ path, busyTimeout: NaN }, /is NaN/],
        [{ path, busyTimeout: Infinity }, /is Infinity/],
        [{ path, busyTimeout: "Infinity" as any }, /is Infinity/],
        [{ path, busyTimeout: -1 }, /is -1 ms: it must be at least 0 ms/],
        [{ path, busyTimeout: "2 hours" }, /at most 60000 ms/],
        [{ path, busyTimeout: "soon" as any }, /not a duration/],
        [{ path, busyRetries: NaN }, /is NaN/],
        [{ path, statementCacheSize: Infinity }, /is Infinity/]
      ]
      for (const [options, reason] of cases) {
        const e = yield* configError(Layer.build(SqliteClient.layer(options)).pipe(Effect.scoped))
        assert.match(e.message, reason)
        assert.notInclude(e.message, "null")
      }
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path, busyTimeout: "60 seconds" })
      const [busy] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
      assert.strictEqual(busy.timeout, 60_000, "the ceiling itself is accepted")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("opens on first use, not at build; WAL, synchronous=NORMAL and a 5 s busy timeout by default", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path })
      assert.isFalse(Fs.existsSync(path), "nothing is opened at build")
      const [mode] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      const [busy] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
      assert.strictEqual(mode.journal_mode, "wal")
      assert.strictEqual(sync.synchronous, 1, "NORMAL")
      assert.strictEqual(busy.timeout, 5000)
      assert.isTrue(Fs.existsSync(path))
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("synchronous FULL and the busy timeout are options", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path: freshPath(), synchronous: "FULL", busyTimeout: "250 millis" })
      const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      const [busy] = yield* sql<{ timeout: number }>`PRAGMA busy_timeout`
      assert.strictEqual(sync.synchronous, 2, "FULL")
      assert.strictEqual(busy.timeout, 250)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("closes the connection with the Layer's scope (the last close removes the WAL file)", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path })
      yield* sql`CREATE TABLE t (a INTEGER)`
      yield* sql`INSERT INTO t (a) VALUES (${1})`
      assert.isTrue(Fs.existsSync(`${path}-wal`), "open: the WAL file exists")
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(Fs.existsSync(`${path}-wal`), "closed: SQLite checkpointed and removed the WAL")
      // The data is in the file for the next connection.
      const again = yield* Scope.make()
      const sql2 = yield* clientIn(again, { path })
      const rows = yield* sql2<{ a: number }>`SELECT a FROM t`
      assert.deepStrictEqual(rows.map((r) => r.a), [1])
      yield* Scope.close(again, Exit.void)
    }))

  describe("WAL checkpoints", () => {
    const pageBytes = 4096
    /** 1,500 commits of one 4 KiB row each: the log passes SQLite's 1,000-page checkpoint mark. */
    const fill = (sql: SqlClient.SqlClient) =>
      Effect.gen(function*() {
        yield* sql`CREATE TABLE t (a BLOB)`
        for (let i = 0; i < 1500; i++) yield* sql`INSERT INTO t (a) VALUES (randomblob(${pageBytes}))`
      })
    const sizeOf = (file: string) => Fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0
    /** Waits for the checkpoint worker (a real thread) by yielding to the event loop, a bounded number of turns. */
    const untilTrue = (what: string, cond: () => boolean) =>
      Effect.gen(function*() {
        for (let turn = 0; turn < 1_000_000 && !cond(); turn++) yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
        assert.isTrue(cond(), what)
      })

    it.effect("inline: the commit that passes 1,000 pages of log checkpoints it into the file", () =>
      Effect.gen(function*() {
        const path = freshPath()
        const scope = yield* Scope.make()
        const sql = yield* clientIn(scope, { path, walCheckpoint: "inline" })
        yield* fill(sql)
        assert.isAbove(sizeOf(path), 1000 * pageBytes, "the rows reached the file during the commits")
        yield* Scope.close(scope, Exit.void)
      }))

    it.effect("background (the default): no commit checkpoints; the worker does, every interval on the Clock, and the log is reused", () =>
      Effect.gen(function*() {
        const path = freshPath()
        const scope = yield* Scope.make()
        const client = yield* Effect.map(Layer.buildWithScope(SqliteClient.layer({ path }), scope), (ctx) => Context.get(ctx, SqliteClient.SqliteClient))
        const sql: SqlClient.SqlClient = client
        yield* fill(sql)
        assert.isBelow(sizeOf(path), 100 * pageBytes, "no commit copied the log into the file")
        const logged = sizeOf(`${path}-wal`)
        assert.isAbove(logged, 1400 * pageBytes, "the rows are in the log")
        yield* TestClock.adjust("1 second")
        yield* untilTrue("the background checkpoint copied the log into the file", () => sizeOf(path) > 1400 * pageBytes)
        // The worker answers in order: this one's answer comes once the scheduled checkpoint is over.
        const after = yield* client.walCheckpoint!
        assert.strictEqual(after._tag, "Done")
        if (after._tag === "Done") assert.strictEqual(after.checkpointed, after.log, "every frame of the log is in the file")
        // Checkpointed, the log starts again from its beginning: 1,500 more commits leave it no longer.
        for (let i = 0; i < 1500; i++) yield* sql`INSERT INTO t (a) VALUES (randomblob(${pageBytes}))`
        assert.isAtMost(sizeOf(`${path}-wal`), logged + 10 * pageBytes, "the log was reused, not grown")
        const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM t`
        assert.strictEqual(rows[0]!.n, 3000)
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(Fs.existsSync(`${path}-wal`), "closed: the worker's connection went first, so the last close removed the log")
      }))

    it.effect("the clients of one file share one checkpoint worker: it outlives the first client's close and ends with the last", () =>
      Effect.gen(function*() {
        const path = freshPath()
        const open = (scope: Scope.Scope) =>
          Effect.map(Layer.buildWithScope(SqliteClient.layer({ path }), scope), (ctx) => Context.get(ctx, SqliteClient.SqliteClient))
        const before = WalCheckpointer.openWorkers()
        const [scopeA, scopeB] = [yield* Scope.make(), yield* Scope.make()]
        const [a, b] = [yield* open(scopeA), yield* open(scopeB)]
        yield* fill(a)
        yield* b`INSERT INTO t (a) VALUES (randomblob(${pageBytes}))`
        assert.strictEqual((yield* a.walCheckpoint!)._tag, "Done")
        assert.strictEqual((yield* b.walCheckpoint!)._tag, "Done")
        assert.strictEqual(WalCheckpointer.openWorkers(), before + 1, "one worker for the file, not one per client")
        yield* Scope.close(scopeA, Exit.void)
        yield* b`INSERT INTO t (a) VALUES (randomblob(${pageBytes}))`
        const after = yield* b.walCheckpoint!
        assert.strictEqual(after._tag, "Done", "the worker outlived the first client")
        if (after._tag === "Done") assert.strictEqual(after.checkpointed, after.log)
        yield* Scope.close(scopeB, Exit.void)
        assert.strictEqual(WalCheckpointer.openWorkers(), before, "the last client ended it")
        assert.isFalse(Fs.existsSync(`${path}-wal`), "its connection closed before the last client's")
      }))

    it.effect("the log stays bounded without the Clock: past 10,000 pages SQLite checkpoints on its own", () =>
      Effect.gen(function*() {
        const path = freshPath()
        const scope = yield* Scope.make()
        const sql = yield* clientIn(scope, { path })
        yield* sql`CREATE TABLE t (a BLOB)`
        for (let i = 0; i < 10_100; i++) yield* sql`INSERT INTO t (a) VALUES (randomblob(${pageBytes}))`
        assert.isAbove(sizeOf(path), 9000 * pageBytes, "SQLite's own checkpoint ran at the fallback mark")
        yield* Scope.close(scope, Exit.void)
      }))
  })

  it.effect("a small statement cache evicts old statements and stays correct", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path: ":memory:", statementCacheSize: 2 })
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 5; i++) {
          const rows = yield* sql.unsafe<{ v: number }>(`SELECT ${i} + ? AS v`, [round])
          assert.strictEqual(rows[0].v, i + round)
        }
      }
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect(":memory: is a private database per connection", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const a = yield* clientIn(scope, { path: ":memory:" })
      const b = yield* clientIn(scope, { path: ":memory:" })
      yield* a`CREATE TABLE t (a INTEGER)`
      yield* a`INSERT INTO t (a) VALUES (${1})`
      const inB = yield* b<{ n: number }>`SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 't'`
      assert.strictEqual(inB[0].n, 0)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a failed statement in a transaction rolls it back; errors are typed SqlErrors", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path: freshPath() })
      yield* sql`CREATE TABLE t (a INTEGER PRIMARY KEY)`
      const exit = yield* Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO t (a) VALUES (${1})`, sql`INSERT INTO t (a) VALUES (${1})`)))
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(sql`INSERT INTO t (a) VALUES (${2}), (${2})`)
      assert.strictEqual(error._tag, "SqlError")
      const rows = yield* sql`SELECT a FROM t`
      assert.strictEqual(rows.length, 0, "the first transaction wrote nothing")
      yield* Scope.close(scope, Exit.void)
    }))

  describe("two connections on one file (busy timeout 0, one process)", () => {
    const setup = Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const a = yield* clientIn(scope, { path, busyTimeout: 0 })
      const b = yield* clientIn(scope, { path, busyTimeout: 0 })
      const bNoRetry = yield* clientIn(scope, { path, busyTimeout: 0, busyRetries: 0 })
      yield* a`CREATE TABLE t (a INTEGER)`
      return { a, b, bNoRetry, scope }
    })

    /** `a` holds the write lock (BEGIN IMMEDIATE + a write) until `release` completes. */
    const holdLock = (a: SqlClient.SqlClient) =>
      Effect.gen(function*() {
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(a.withTransaction(Effect.gen(function*() {
          yield* a`INSERT INTO t (a) VALUES (${1})`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        })))
        yield* Deferred.await(locked)
        return { fiber, release }
      })

    it.effect("a write that finds the database locked is retried after yielding, and lands once the holder commits", () =>
      Effect.gen(function*() {
        const { a, b, scope } = yield* setup
        const { fiber, release } = yield* holdLock(a)
        const writer = yield* Effect.forkChild(b.withTransaction(b`INSERT INTO t (a) VALUES (${2})`))
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow
        assert.isUndefined(writer.pollUnsafe(), "the second writer waits while the first holds the lock")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(fiber)
        yield* Fiber.join(writer)
        const rows = yield* a<{ a: number }>`SELECT a FROM t ORDER BY a`
        assert.deepStrictEqual(rows.map((r) => r.a), [1, 2])
        yield* Scope.close(scope, Exit.void)
      }))

    it.effect("without retries, BEGIN IMMEDIATE on a locked database fails with a typed LockTimeoutError (no defect), and the client stays usable", () =>
      Effect.gen(function*() {
        const { a, bNoRetry, scope } = yield* setup
        const { fiber, release } = yield* holdLock(a)
        const exit = yield* Effect.exit(bNoRetry.withTransaction(bNoRetry`INSERT INTO t (a) VALUES (${2})`))
        assert.isTrue(Exit.isFailure(exit))
        const error = yield* Effect.flip(exit)
        assert.strictEqual(error._tag, "SqlError")
        assert.strictEqual((error as any).reason._tag, "LockTimeoutError")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(fiber)
        yield* bNoRetry.withTransaction(bNoRetry`INSERT INTO t (a) VALUES (${3})`)
        const rows = yield* a<{ a: number }>`SELECT a FROM t ORDER BY a`
        assert.deepStrictEqual(rows.map((r) => r.a), [1, 3])
        yield* Scope.close(scope, Exit.void)
      }))
  })
})
