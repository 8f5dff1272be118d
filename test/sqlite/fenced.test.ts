/**
 * Fenced checkpoint writes on SQLite: a write under the current lease lands
 * and renews it; a write under a lease that expired, was released or passed
 * to another holder is refused with LeaseLostError and writes nothing — on
 * the synchronous path and on the effect path (taken when another fiber holds
 * the connection).
 */
import { assert, describe, it } from "@effect/vitest"
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint"
import type { RunnableConfig } from "@langchain/core/runnables"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { LeaseLostError } from "../../src/stores/Errors.ts"
import { type Fence, fenceKey, tenantConfigKey } from "../../src/stores/Fence.ts"
import * as Ids from "../../src/stores/Ids.ts"
import type { Lease } from "../../src/stores/Lease.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { SqlStores } from "../../layers/sql/index.ts"
import { SqliteClient, SqliteMigrations } from "../../layers/sqlite/index.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("fenced")
let n = 0
const ttl = 30_000

/** Stores and the client on a file (a fresh one unless given), in `scope` (a new one unless given). */
const openOn = (options: { readonly path?: string; readonly busyTimeout?: number; readonly scope?: Scope.Closeable } = {}) =>
  Effect.gen(function*() {
    const scope = options.scope ?? (yield* Scope.make())
    const layer = SqlStores.layer().pipe(
      Layer.provide(SqliteMigrations.layer()),
      Layer.provideMerge(SqliteClient.layer({ path: options.path ?? Path.join(dir, `fenced-${++n}.db`), busyTimeout: options.busyTimeout })),
      Layer.provide(Ids.layer)
    )
    const ctx = yield* Layer.buildWithScope(layer, scope)
    return {
      scope,
      sql: Context.get(ctx, SqlClient.SqlClient),
      leases: Context.get(ctx, LeaseStore),
      saver: Context.get(ctx, CheckpointStore).saver
    }
  })
const open = openOn()

/** The fences' renewal period: a write renews only when the stored expiry is earlier than now + ttl - 10 s. */
const renewMillis = 10_000

/** A holder's fence at a fixed `now`, recording what the saver reports. */
const fenceOf = (lease: Lease, now: number) => {
  const seen = { confirmed: [] as Array<readonly [number, number, boolean]>, lost: [] as Array<LeaseLostError> }
  const fence: Fence = {
    lease,
    ttlMillis: ttl,
    renewMillis,
    now: () => now,
    refusal: () => undefined,
    confirmed: (readAt, expiresAt, renewed) => void seen.confirmed.push([readAt, expiresAt, renewed]),
    lost: (error) => void seen.lost.push(error),
    renewBeforeWrite: async () => {}
  }
  return { fence, seen }
}

const tenant = "tenant-f"

const config = (threadId: string, extra: Record<string, unknown> = {}): RunnableConfig => ({
  configurable: { thread_id: threadId, checkpoint_ns: "", [tenantConfigKey]: tenant, ...extra }
})

// Each checkpoint gets a new channel version, as LangGraph gives it one per change.
let version = 0
const checkpoint = (value: string, v: number): Checkpoint => ({
  ...emptyCheckpoint(),
  id: uuid6(-1),
  channel_values: { value },
  channel_versions: { value: v }
})

const put = (saver: CheckpointStore["Service"]["saver"], cfg: RunnableConfig, value: string) =>
  Effect.promise(() => {
    const v = ++version
    return saver.put(cfg, checkpoint(value, v), { source: "loop", step: v, parents: {} }, { value: v })
  })

const putExit = (saver: CheckpointStore["Service"]["saver"], cfg: RunnableConfig, value: string) =>
  Effect.exit(Effect.tryPromise({
    try: () => {
      const v = ++version
      return saver.put(cfg, checkpoint(value, v), { source: "loop", step: v, parents: {} }, { value: v })
    },
    catch: (e) => e
  }))

const latestValue = (saver: CheckpointStore["Service"]["saver"], threadId: string) =>
  Effect.map(Effect.promise(() => saver.getTuple(config(threadId))), (t) => t?.checkpoint.channel_values.value)

const lostWith = (exit: Exit.Exit<unknown, unknown>) => {
  assert.isTrue(Exit.isFailure(exit), "the fenced write is refused")
  const error = Option.getOrThrow(Exit.findErrorOption(exit)) as LeaseLostError
  assert.strictEqual(error._tag, "LeaseLostError")
  return error
}

const acquire = (leases: LeaseStore["Service"], root: string, holder: string, now: number) =>
  Effect.map(leases.acquire(tenant, root, holder, ttl, now), (o) => Option.getOrThrow(o))

describe("fenced checkpoint writes (SQLite)", () => {
  it.effect("a write under the current lease lands and, a renewal being due, renews the lease to now + ttl", () =>
    Effect.gen(function*() {
      const { leases, saver, scope } = yield* open
      const lease = yield* acquire(leases, "root-1", "a", 1_000)
      const { fence, seen } = fenceOf(lease, 20_000)
      yield* put(saver, config("root-1", { [fenceKey]: fence }), "one")
      assert.strictEqual(yield* latestValue(saver, "root-1"), "one")
      const stored = Option.getOrThrow(yield* leases.get(tenant, "root-1"))
      assert.strictEqual(stored.expiresAt, 20_000 + ttl, "the write pushed the lease")
      assert.strictEqual(stored.epoch, lease.epoch)
      assert.deepStrictEqual(seen.confirmed, [[20_000, 20_000 + ttl, true]])
      assert.deepStrictEqual(seen.lost, [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a write when no renewal is due checks the lease but leaves its row unwritten; the first due write pushes it", () =>
    Effect.gen(function*() {
      const { leases, saver, scope, sql } = yield* open
      yield* sql`CREATE TABLE lease_updates (root TEXT)`
      yield* sql`CREATE TRIGGER count_lease_updates AFTER UPDATE ON baton_leases BEGIN INSERT INTO lease_updates VALUES (NEW.root_execution_id); END`
      const updates = Effect.map(sql<{ n: number }>`SELECT COUNT(*) AS n FROM lease_updates WHERE root = 'root-7'`, (r) => Number(r[0]!.n))
      const lease = yield* acquire(leases, "root-7", "a", 0)
      // Stored expiry 30 s: not due while now + 30 s - 10 s <= 30 s.
      let parent: RunnableConfig | undefined
      const both = (now: number) =>
        Effect.gen(function*() {
          const { fence, seen } = fenceOf(lease, now)
          const saved = yield* put(saver, { configurable: { ...(parent ?? config("root-7")).configurable, [fenceKey]: fence } }, `at ${now}`)
          parent = { configurable: { ...saved.configurable, [tenantConfigKey]: tenant } }
          yield* Effect.promise(() => saver.putWrites({ configurable: { ...parent!.configurable, [fenceKey]: fence } }, [["value", now]], `task-${now}`))
          return seen.confirmed
        })
      assert.deepStrictEqual(yield* both(5_000), [[5_000, ttl, false], [5_000, ttl, false]])
      assert.deepStrictEqual(yield* both(10_000), [[10_000, ttl, false], [10_000, ttl, false]])
      assert.strictEqual(yield* updates, 0, "no write rewrote the lease row")
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-7")).expiresAt, ttl)
      assert.strictEqual(yield* latestValue(saver, "root-7"), "at 10000", "the writes landed")
      assert.deepStrictEqual(yield* both(10_001), [[10_001, 10_001 + ttl, true], [10_001, 10_001 + ttl, false]])
      assert.strictEqual(yield* updates, 1, "the due write pushed it, once")
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-7")).expiresAt, 10_001 + ttl)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("pending writes: not due, they leave the lease row alone; due, they push it; written again (rows kept), they are still confirmed or refused", () =>
    Effect.gen(function*() {
      const { leases, saver, scope, sql } = yield* open
      yield* sql`CREATE TABLE lease_updates_8 (root TEXT)`
      yield* sql`CREATE TRIGGER count_lease_updates_8 AFTER UPDATE ON baton_leases WHEN NEW.root_execution_id = 'root-8' BEGIN INSERT INTO lease_updates_8 VALUES (NEW.root_execution_id); END`
      const updates = Effect.map(sql<{ n: number }>`SELECT COUNT(*) AS n FROM lease_updates_8`, (r) => Number(r[0]!.n))
      const lease = yield* acquire(leases, "root-8", "a", 0)
      const saved = yield* put(saver, config("root-8", { [fenceKey]: fenceOf(lease, 1_000).fence }), "base")
      const writesAt = (now: number, fenceLease = lease, task = `task-${now}`) => {
        const { fence, seen } = fenceOf(fenceLease, now)
        const cfg: RunnableConfig = { configurable: { ...saved.configurable, [tenantConfigKey]: tenant, [fenceKey]: fence } }
        return Effect.map(
          Effect.exit(Effect.tryPromise({ try: () => saver.putWrites(cfg, [["value", now], ["value", -now]], task), catch: (e) => e })),
          (exit) => ({ exit, seen })
        )
      }
      const pending = Effect.map(Effect.promise(() => saver.getTuple(config("root-8"))), (t) => t?.pendingWrites?.length)
      const notDue = yield* writesAt(10_000)
      assert.isTrue(Exit.isSuccess(notDue.exit))
      assert.deepStrictEqual(notDue.seen.confirmed, [[10_000, ttl, false]])
      assert.strictEqual(yield* updates, 0, "not due: the lease row was not written")
      assert.strictEqual(yield* pending, 2)
      const again = yield* writesAt(10_000, lease, "task-10000")
      assert.isTrue(Exit.isSuccess(again.exit), "the same writes again (rows kept) land as a no-op")
      assert.deepStrictEqual(again.seen.confirmed, [[10_000, ttl, false]], "and confirm the lease")
      assert.strictEqual(yield* pending, 2)
      const due = yield* writesAt(10_001)
      assert.isTrue(Exit.isSuccess(due.exit))
      assert.deepStrictEqual(due.seen.confirmed, [[10_001, 10_001 + ttl, true]], "due: pushed to now + ttl")
      assert.strictEqual(yield* updates, 1)
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-8")).expiresAt, 10_001 + ttl)
      assert.strictEqual(yield* pending, 4)
      // Another holder takes it; the old holder's writes, new or already there, are refused.
      const taken = yield* acquire(leases, "root-8", "b", 10_001 + ttl)
      for (const task of ["task-10000", "task-late"]) {
        const stale = yield* writesAt(10_002 + ttl, lease, task)
        assert.include(lostWith(stale.exit).reason, "passed to b")
        assert.deepStrictEqual(stale.seen.confirmed, [])
        assert.strictEqual(stale.seen.lost.length, 1)
      }
      assert.strictEqual(yield* pending, 4, "nothing was written")
      assert.deepStrictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-8")), taken)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a write under a lease another holder took is refused, writes nothing and leaves the new lease alone", () =>
    Effect.gen(function*() {
      const { leases, saver, scope } = yield* open
      const old = yield* acquire(leases, "root-2", "a", 0)
      yield* put(saver, config("root-2", { [fenceKey]: fenceOf(old, 1).fence }), "by a")
      const taken = yield* acquire(leases, "root-2", "b", ttl + 5)
      assert.strictEqual(taken.epoch, old.epoch + 1)
      const stale = fenceOf(old, ttl + 10)
      const exit = yield* putExit(saver, config("root-2", { [fenceKey]: stale.fence }), "late write by a")
      const error = lostWith(exit)
      assert.strictEqual(error.holder, "a")
      assert.strictEqual(error.epoch, old.epoch)
      assert.include(error.reason, "passed to b")
      assert.strictEqual(stale.seen.lost.length, 1)
      assert.strictEqual(yield* latestValue(saver, "root-2"), "by a", "nothing was written")
      assert.deepStrictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-2")), taken, "the new holder's lease is untouched")
      // The new holder writes.
      yield* put(saver, config("root-2", { [fenceKey]: fenceOf(taken, ttl + 20).fence }), "by b")
      assert.strictEqual(yield* latestValue(saver, "root-2"), "by b")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a put whose lease moved since the saver last saw it is refused by its one statement and lands by the full check, answering the stored expiry; a stale holder's put leaves no blob", () =>
    Effect.gen(function*() {
      const { leases, saver, scope, sql } = yield* open
      const lease = yield* acquire(leases, "root-8", "a", 0)
      const first = fenceOf(lease, 1_000)
      yield* put(saver, config("root-8", { [fenceKey]: first.fence }), "first")
      assert.deepStrictEqual(first.seen.confirmed, [[1_000, ttl, false]], "the first write tries the expiry the lease was taken with")
      // Renewed behind the saver's back: the row's expiry is no longer the one the saver knows.
      assert.isTrue(yield* leases.renew(lease, ttl, 5_000))
      const second = fenceOf(lease, 6_000)
      yield* put(saver, config("root-8", { [fenceKey]: second.fence }), "second")
      assert.strictEqual(yield* latestValue(saver, "root-8"), "second")
      assert.deepStrictEqual(second.seen.confirmed, [[6_000, 5_000 + ttl, false]], "the answer is the expiry the row holds")
      assert.deepStrictEqual(second.seen.lost, [])
      // Another holder takes the tree; the old one's put (with its channel's blob) writes nothing at all.
      const taken = yield* acquire(leases, "root-8", "b", 5_000 + ttl + 1)
      const blobs = Effect.map(sql<{ n: number }>`SELECT COUNT(*) AS n FROM baton_checkpoint_blobs WHERE thread_id = 'root-8'`, (r) => Number(r[0]!.n))
      const before = yield* blobs
      lostWith(yield* putExit(saver, config("root-8", { [fenceKey]: fenceOf(lease, 5_000 + ttl + 2).fence }), "late"))
      assert.strictEqual(yield* blobs, before, "no blob of the refused put")
      assert.strictEqual(yield* latestValue(saver, "root-8"), "second")
      assert.deepStrictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-8")), taken)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("pending writes under a stale lease are refused too", () =>
    Effect.gen(function*() {
      const { leases, saver, scope } = yield* open
      const old = yield* acquire(leases, "root-3", "a", 0)
      const saved = yield* put(saver, config("root-3", { [fenceKey]: fenceOf(old, 1).fence }), "base")
      yield* acquire(leases, "root-3", "b", ttl + 1)
      const cfg: RunnableConfig = { configurable: { ...saved.configurable, [tenantConfigKey]: tenant, [fenceKey]: fenceOf(old, ttl + 2).fence } }
      const exit = yield* Effect.exit(Effect.tryPromise({ try: () => saver.putWrites(cfg, [["value", "late"]], "task-1"), catch: (e) => e }))
      lostWith(exit)
      const tuple = yield* Effect.promise(() => saver.getTuple(config("root-3")))
      assert.deepStrictEqual(tuple?.pendingWrites, [], "no pending write landed")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a lease that expired (nobody took it) or was released fences writes out", () =>
    Effect.gen(function*() {
      const { leases, saver, scope } = yield* open
      const lease = yield* acquire(leases, "root-4", "a", 0)
      const expired = lostWith(yield* putExit(saver, config("root-4", { [fenceKey]: fenceOf(lease, ttl).fence }), "at expiry"))
      assert.include(expired.reason, "expired")
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenant, "root-4")).expiresAt, ttl, "a refused write renews nothing")
      const again = yield* acquire(leases, "root-4", "a", ttl + 1)
      assert.isTrue(yield* leases.release(again))
      const released = lostWith(yield* putExit(saver, config("root-4", { [fenceKey]: fenceOf(again, ttl + 2).fence }), "after release"))
      assert.include(released.reason, "released")
      assert.isUndefined(yield* latestValue(saver, "root-4"))
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("while another fiber holds the connection, a saver call waits for it (effect path), then is fenced the same way", () =>
    Effect.gen(function*() {
      const { leases, saver, scope, sql } = yield* open
      const lease = yield* acquire(leases, "root-5", "a", 0)
      yield* sql`CREATE TABLE side (a INTEGER)`
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO side (a) VALUES (${1})`
        yield* Deferred.succeed(holding, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(holding)
      const good = yield* Effect.forkChild(put(saver, config("root-5", { [fenceKey]: fenceOf(lease, 10).fence }), "waited"))
      const stale = yield* Effect.forkChild(
        putExit(saver, config("root-5", { [fenceKey]: fenceOf({ ...lease, epoch: lease.epoch + 7 }, 11).fence }), "stale")
      )
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      assert.isUndefined(good.pollUnsafe(), "the write waits for the connection")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(good)
      lostWith(yield* Fiber.join(stale))
      assert.strictEqual(yield* latestValue(saver, "root-5"), "waited")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a write that finds the file locked by another connection waits (effect path, retried) and lands once the lock is released", () =>
    Effect.gen(function*() {
      const path = Path.join(dir, `fenced-${++n}.db`)
      const first = yield* openOn({ path, busyTimeout: 0 })
      const second = yield* openOn({ path, busyTimeout: 0, scope: first.scope })
      const lease = yield* acquire(first.leases, "root-6", "a", 0)
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const locker = yield* Effect.forkChild(second.sql.withTransaction(Effect.gen(function*() {
        yield* second.sql`UPDATE baton_leases SET holder = holder WHERE root_execution_id = 'root-6'`
        yield* Deferred.succeed(holding, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(holding)
      const write = yield* Effect.forkChild(put(first.saver, config("root-6", { [fenceKey]: fenceOf(lease, 10).fence }), "after the lock"))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      assert.isUndefined(write.pollUnsafe(), "the write waits while the other connection holds the write lock")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(locker)
      yield* Fiber.join(write)
      assert.strictEqual(yield* latestValue(second.saver, "root-6"), "after the lock")
      yield* Scope.close(first.scope, Exit.void)
    }))
})
