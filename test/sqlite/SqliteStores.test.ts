/**
 * The SQLite bundle and its single-store Layers: a config error at build,
 * every store alone on its own connection, and a mix with in-memory stores.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as Path from "node:path"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { LedgerStore } from "../../src/stores/LedgerStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import { MemoryRateLimitStore, MemoryState } from "../../layers/memory/index.ts"
import { SqliteClient, SqliteMigrations, SqliteStores } from "../../layers/sqlite/index.ts"
import { SqlCheckpointStore, SqlLeaseStore, SqlLedgerStore, SqlTreeStore } from "../../layers/sql/index.ts"
import { SqlClient } from "effect/sql"
import { tempDir } from "./tmp.ts"

const dir = tempDir("stores")

describe("SqliteStores", () => {
  it.effect("without a path or BATON_SQLITE_PATH the bundle fails at build with a BatonConfigError naming the setting", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(SqliteStores.layer()).pipe(
        Effect.scoped,
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({})))
      ))
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual((error as any).field, "BATON_SQLITE_PATH")
    }))

  it.effect("the bundle provides all eight stores and an IdGenerator, each answering ping", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const ctx = yield* Layer.buildWithScope(SqliteStores.layer({ path: Path.join(dir, "bundle.db") }), scope)
      yield* Context.get(ctx, LeaseStore).ping
      yield* Context.get(ctx, RecordStore).ping
      yield* Context.get(ctx, PauseStore).ping
      yield* Context.get(ctx, TreeStore).ping
      yield* Context.get(ctx, CheckpointStore).ping
      yield* Context.get(ctx, LedgerStore).ping
      yield* Context.get(ctx, RateLimitStore).ping
      yield* Context.get(ctx, ChildQueueStore).ping
      assert.isTrue(Context.get(ctx, CheckpointStore).fenced)
      assert.match(yield* Context.get(ctx, Ids.IdGenerator).make("x"), /^x_/)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("every store builds alone on its own connection", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, "alone.db")
      const scope = yield* Scope.make()
      const build = <A>(layer: Layer.Layer<A, unknown>) => Layer.buildWithScope(layer, scope)
      yield* Context.get(yield* build(SqliteStores.layerLeaseStore({ path })), LeaseStore).ping
      yield* Context.get(yield* build(SqliteStores.layerRecordStore({ path }).pipe(Layer.provide(Ids.layer))), RecordStore).ping
      yield* Context.get(yield* build(SqliteStores.layerPauseStore({ path })), PauseStore).ping
      yield* Context.get(yield* build(SqliteStores.layerTreeStore({ path })), TreeStore).ping
      yield* Context.get(yield* build(SqliteStores.layerCheckpointStore({ path })), CheckpointStore).ping
      yield* Context.get(yield* build(SqliteStores.layerLedgerStore({ path })), LedgerStore).ping
      yield* Context.get(yield* build(SqliteStores.layerRateLimitStore({ path })), RateLimitStore).ping
      yield* Context.get(yield* build(SqliteStores.layerChildQueueStore({ path })), ChildQueueStore).ping
      yield* Context.get(yield* build(SqliteStores.layerExecutionHistoryStore({ path })), ExecutionHistoryStore).ping
      yield* Context.get(yield* build(SqliteStores.layerRequestStore({ path })), RequestStore).ping
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("SQLite leases mix with in-memory rate limits", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const layer = Layer.mergeAll(
        SqliteStores.layerLeaseStore({ path: Path.join(dir, "mixed.db") }),
        MemoryRateLimitStore.layer.pipe(Layer.provide(MemoryState.layer))
      )
      const ctx = yield* Layer.buildWithScope(layer, scope)
      const lease = yield* Context.get(ctx, LeaseStore).acquire("t", "root", "me", 30_000, 0)
      assert.isTrue(Option.isSome(lease))
      const slot = yield* Context.get(ctx, RateLimitStore).acquireSlot("model", 1, "me", 30_000, 0)
      assert.isTrue(Option.isSome(slot))
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("layerConfig reads the options through Effect Config (path, busy timeout, table prefix)", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, "from-config.db")
      const scope = yield* Scope.make()
      const env = { BATON_SQLITE_PATH: path, BATON_SQLITE_BUSY_TIMEOUT: "250 millis", BATON_SQLITE_SYNCHRONOUS: "FULL", BATON_TABLE_PREFIX: "cfg_" }
      const ctx = yield* Layer.buildWithScope(SqliteStores.layerConfig(), scope).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))
      )
      assert.isTrue(Option.isSome(yield* Context.get(ctx, LeaseStore).acquire("t", "root", "me", 30_000, 0)))
      const check = Context.get(yield* Layer.buildWithScope(SqliteClient.layer({ path }), scope), SqlClient.SqlClient)
      const tables = yield* check<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'cfg_leases'`
      assert.strictEqual(tables.length, 1, "the prefix came from BATON_TABLE_PREFIX")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("layerConfig: a setting that cannot be read, or cannot work, fails the build with a BatonConfigError naming it", () =>
    Effect.gen(function*() {
      const build = (env: Record<string, string>) =>
        Layer.build(SqliteStores.layerConfig()).pipe(
          Effect.scoped,
          Effect.flip,
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))
        )
      const path = Path.join(dir, "bad-config.db")
      const unreadable = yield* build({ BATON_SQLITE_PATH: path, BATON_SQLITE_BUSY_TIMEOUT: "soon" })
      assert.strictEqual(unreadable._tag, "BatonConfigError")
      assert.strictEqual((unreadable as any).field, "BATON_SQLITE_BUSY_TIMEOUT")
      const tooLong = yield* build({ BATON_SQLITE_PATH: path, BATON_SQLITE_BUSY_TIMEOUT: "2 hours" })
      assert.strictEqual((tooLong as any).field, "busyTimeout")
      const mode = yield* build({ BATON_SQLITE_PATH: path, BATON_SQLITE_SYNCHRONOUS: "OFF" })
      assert.strictEqual((mode as any).field, "BATON_SQLITE_SYNCHRONOUS")
      const wal = yield* build({ BATON_SQLITE_PATH: path, BATON_SQLITE_WAL_CHECKPOINT: "bogus" })
      assert.strictEqual((wal as any).field, "BATON_SQLITE_WAL_CHECKPOINT")
      const often = yield* build({ BATON_SQLITE_PATH: path, BATON_SQLITE_WAL_CHECKPOINT_INTERVAL: "1 millis" })
      assert.strictEqual((often as any).field, "walCheckpointInterval")
    }))

  it.effect("the migrations run once per bundle: one migrations Layer serves every store Layer of layers/sql", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, "once.db")
      let migrationsBuilt = 0
      const migrations = SqliteMigrations.layer().pipe(Layer.tap(() => Effect.sync(() => migrationsBuilt++)))
      const stores = Layer.mergeAll(SqlLeaseStore.layer(), SqlTreeStore.layer(), SqlLedgerStore.layer(), SqlCheckpointStore.layer()).pipe(
        Layer.provide(migrations),
        Layer.provide(SqliteClient.layer({ path }))
      )
      const scope = yield* Scope.make()
      const ctx = yield* Layer.buildWithScope(stores, scope)
      yield* Context.get(ctx, LeaseStore).ping
      yield* Context.get(ctx, TreeStore).ping
      assert.strictEqual(migrationsBuilt, 1)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a store Layer given a migrations Layer of another table prefix fails at build naming tablePrefix", () =>
    Effect.gen(function*() {
      const error = yield* Layer.build(
        SqlLeaseStore.layer({ tablePrefix: "blue_" }).pipe(
          Layer.provide(SqliteMigrations.layer({ tablePrefix: "green_" })),
          Layer.provide(SqliteClient.layer({ path: Path.join(dir, "prefixes.db") }))
        )
      ).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual((error as any).field, "tablePrefix")
    }))
})
