/**
 * Leases and fenced writes on Postgres, under real contention: eight pooled
 * connections race for one lease, round after round; a holder whose lease
 * passed to another can write nothing, whichever write path it takes.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient, PgMigrations } from "../../layers/pg/index.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import type { BlobRow, CheckpointRow, CheckpointRows, WriteRow } from "../../src/stores/CheckpointRows.ts"
import type { LeaseLostError } from "../../src/stores/Errors.ts"
import type { Lease } from "../../src/stores/Lease.ts"
import type { LeaseStoreShape } from "../../src/stores/LeaseStore.ts"
import { randomName, testSchema, url } from "./db.ts"

const schema = testSchema("leases")
const ttl = 30_000
const racers = 8
const rounds = 50

interface Env {
  readonly leases: LeaseStoreShape
  readonly rows: CheckpointRows
  readonly sql: SqlClient.SqlClient
}
const Env = Context.Service<Env>("test/pg/leases/Env")

const env = Layer.effect(
  Env,
  Effect.gen(function*() {
    yield* PgMigrations.migrate({ schema })
    return { leases: yield* SqlLeaseStore.make(), rows: yield* SqlCheckpointStore.makeRows(), sql: yield* SqlClient.SqlClient }
  })
).pipe(Layer.provide(PgClient.layer({ url, schema, maxConnections: racers })))

const promise = <A>(f: () => Promise<A>) => Effect.promise(() => f().then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })))

layer(env, { excludeTestServices: true })("Postgres leases and fenced writes", (it) => {
  it.effect(`${racers} pooled connections race for one lease, ${rounds} rounds: exactly one winner each round`, () =>
    Effect.gen(function*() {
      const { leases, sql } = yield* Env
      // Every racer on its own connection: reserving eight at once makes the
      // pool open all eight (a timed sleep on each was not enough under load).
      const pids = yield* Effect.scoped(Effect.all(
        Array.from({ length: racers }, () =>
          Effect.flatMap(sql.reserve, (conn) => conn.execute("SELECT pg_backend_pid() AS pid", [], undefined))),
        { concurrency: "unbounded" }
      ))
      assert.strictEqual(new Set(pids.map((rows) => rows[0]!.pid)).size, racers, "eight distinct connections")
      const tenant = randomName("tenant")
      const root = randomName("root")
      let previous: Lease | undefined
      for (let round = 0; round < rounds; round++) {
        const now = round * ttl // the previous round's lease has just expired (or was released)
        const results = yield* Effect.all(
          Array.from({ length: racers }, (_, i) => leases.acquire(tenant, root, `holder-${i}`, ttl, now)),
          { concurrency: "unbounded" }
        )
        const won = results.filter(Option.isSome).map((o) => o.value)
        assert.strictEqual(won.length, 1, `round ${round}: exactly one winner`)
        assert.strictEqual(won[0]!.epoch, round + 1, `round ${round}: the epoch grows by one per new holder`)
        assert.strictEqual(won[0]!.expiresAt, now + ttl)
        if (previous !== undefined) assert.isFalse(yield* leases.renew(previous, ttl, now), "the previous holder cannot renew")
        if (round % 2 === 0) assert.isTrue(yield* leases.release(won[0]!))
        previous = won[0]!
      }
    }))

  const tenantId = "default"
  const checkpointRow = (threadId: string, checkpointId: string): CheckpointRow => ({
    tenantId,
    threadId,
    checkpointNs: "",
    checkpointId,
    parentCheckpointId: null,
    type: "json",
    checkpoint: new TextEncoder().encode(`{"id":"${checkpointId}"}`),
    metadataType: "json",
    metadata: new TextEncoder().encode("{}")
  })
  const blobs = (threadId: string, n: number): Array<BlobRow> =>
    Array.from({ length: n }, (_, i) => ({
      tenantId,
      threadId,
      checkpointNs: "",
      channel: `channel${i}`,
      version: "1",
      type: "json",
      value: new TextEncoder().encode(`${i}`)
    }))
  const writes = (threadId: string, checkpointId: string, n: number): Array<WriteRow> =>
    Array.from({ length: n }, (_, i) => ({
      tenantId,
      threadId,
      checkpointNs: "",
      checkpointId,
      taskId: "task",
      idx: i,
      channel: "out",
      type: "json",
      value: new TextEncoder().encode(`${i}`),
      taskPath: ""
    }))

  it.effect("a fenced write from a stale holder is refused with LeaseLostError and writes nothing, on every write path", () =>
    Effect.gen(function*() {
      const { leases, rows } = yield* Env
      const root = randomName("root")
      const stale = Option.getOrThrow(yield* leases.acquire(tenantId, root, "stale", ttl, 0))
      // The stale holder freezes; at 31 s another instance takes the lease with epoch 2.
      const current = Option.getOrThrow(yield* leases.acquire(tenantId, root, "current", ttl, 31_000))
      assert.strictEqual(current.epoch, 2)
      const fence = { lease: stale, ttlMillis: ttl, renewMillis: 10_000, now: 31_500 }
      // Small writes take one statement; more than 500 rows take the transaction path.
      for (const size of [1, 600]) {
        const thread = randomName("thread")
        for (const attempt of [
          () => rows.putCheckpoint(checkpointRow(thread, "c1"), blobs(thread, size), fence),
          () => rows.putCheckpoint(checkpointRow(thread, "c1"), [], fence),
          () => rows.putWrites(writes(thread, "c1", size), fence),
          () => rows.putWrites([], fence)
        ]) {
          const result = yield* promise(attempt)
          assert.isFalse(result.ok, `size ${size}: the stale write must be refused`)
          const error = (result as { error: LeaseLostError }).error
          assert.strictEqual(error._tag, "LeaseLostError")
          assert.include(error.reason, "passed to current")
        }
        assert.isUndefined(yield* Effect.promise(() => rows.getCheckpoint(tenantId, thread, "", undefined)), "no checkpoint written")
        assert.strictEqual((yield* Effect.promise(() => rows.getWrites(tenantId, thread, "", ["c1"]))).length, 0, "no write written")
        assert.strictEqual(
          (yield* Effect.promise(() => rows.getBlobs(tenantId, thread, "", [{ channel: "channel0", version: "1" }]))).length,
          0,
          "no blob written"
        )
      }
      assert.deepStrictEqual(Option.getOrThrow(yield* leases.get(tenantId, root)), current, "the lease is untouched")
      // The current holder writes; a renewal is due (61 s < 40 s + 45 s - 10 s), so its write pushes the lease.
      const thread = randomName("thread")
      const written = yield* Effect.promise(() =>
        rows.putCheckpoint(checkpointRow(thread, "c1"), blobs(thread, 3), { lease: current, ttlMillis: 45_000, renewMillis: 10_000, now: 40_000 })
      )
      assert.deepStrictEqual(written, { expiresAt: 85_000, renewed: true })
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenantId, root)).expiresAt, 85_000)
      assert.isDefined(yield* Effect.promise(() => rows.getCheckpoint(tenantId, thread, "", undefined)))
    }))

  it.effect("a fenced write leaves the lease row alone until a renewal is due, then pushes it, on every write path", () =>
    Effect.gen(function*() {
      const { leases, rows, sql } = yield* Env
      const root = randomName("root")
      const lease = Option.getOrThrow(yield* leases.acquire(tenantId, root, "holder", ttl, 0))
      const xmin = () =>
        Effect.map(
          sql<{ xmin: string }>`SELECT xmin::text AS xmin FROM baton_leases WHERE tenant_id = ${tenantId} AND root_execution_id = ${root}`,
          (r) => r[0]!.xmin
        )
      const before = yield* xmin()
      // Not due while the stored expiry (30 s) is at least now + 30 s - 10 s.
      for (const size of [1, 600]) {
        const thread = randomName("thread")
        for (const now of [1_000, 10_000]) {
          const fence = { lease, ttlMillis: ttl, renewMillis: 10_000, now }
          assert.deepStrictEqual(yield* Effect.promise(() => rows.putCheckpoint(checkpointRow(thread, `c${now}`), blobs(thread, size), fence)), {
            expiresAt: 30_000,
            renewed: false
          })
          assert.deepStrictEqual(yield* Effect.promise(() => rows.putWrites(writes(thread, `c${now}`, size), fence)), { expiresAt: 30_000, renewed: false })
          assert.strictEqual((yield* Effect.promise(() => rows.getWrites(tenantId, thread, "", [`c${now}`]))).length, size, "the writes landed")
        }
      }
      assert.strictEqual(yield* xmin(), before, "no fenced write rewrote the lease row")
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenantId, root)).expiresAt, 30_000)
      // Due 1 ms later (30 s < 10.001 s + 30 s - 10 s): the write pushes it, and the next one at the same time does not.
      for (const size of [1, 600]) {
        const thread = randomName("thread")
        const now = size === 1 ? 10_001 : 20_002
        const fence = { lease, ttlMillis: ttl, renewMillis: 10_000, now }
        assert.deepStrictEqual(yield* Effect.promise(() => rows.putWrites(writes(thread, "c1", size), fence)), { expiresAt: now + ttl, renewed: true })
        assert.deepStrictEqual(yield* Effect.promise(() => rows.putCheckpoint(checkpointRow(thread, "c1"), blobs(thread, size), fence)), {
          expiresAt: now + ttl,
          renewed: false
        })
        assert.strictEqual(Option.getOrThrow(yield* leases.get(tenantId, root)).expiresAt, now + ttl)
      }
      assert.notStrictEqual(yield* xmin(), before, "the due write rewrote it")
    }))

  it.effect("a fenced write that does not renew still locks the lease row: a takeover waits for its commit; one in progress makes it wait, then refuses it", () =>
    Effect.gen(function*() {
      const { leases, rows, sql } = yield* Env
      const root = randomName("root")
      const thread = randomName("thread")
      const old = Option.getOrThrow(yield* leases.acquire(tenantId, root, "old", ttl, 0))
      /** Polls `find` every 10 ms until it answers a row's `pid` (fails after 10 s). */
      const poll = (what: string, find: Effect.Effect<ReadonlyArray<{ readonly pid: number }>, unknown>) =>
        Effect.gen(function*() {
          for (let i = 0; i < 1_000; i++) {
            const found = yield* Effect.orDie(find)
            if (found.length > 0) return Number(found[0]!.pid)
            yield* Effect.sleep("10 millis")
          }
          return yield* Effect.die(new Error(`timed out waiting until ${what}`))
        })
      /** Until a backend waits for a lock `pid` holds. */
      const blockedBy = (pid: number) =>
        poll(`a backend waits for ${pid}`, sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE ${pid} = ANY(pg_blocking_pids(pid))`)
      // The write's checkpoint insert blocks (a trigger waits on an advisory lock the test holds) after the lease check.
      yield* sql.unsafe(`CREATE FUNCTION block_insert() RETURNS trigger AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$ LANGUAGE plpgsql`)
      yield* sql.unsafe(
        `CREATE TRIGGER block_insert BEFORE INSERT ON baton_checkpoints FOR EACH ROW WHEN (NEW.thread_id = '${thread}') EXECUTE FUNCTION block_insert()`
      )
      const advisoryHeld = yield* Deferred.make<void>()
      const advisoryRelease = yield* Deferred.make<void>()
      const blocker = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(4242)`
        yield* Deferred.succeed(advisoryHeld, undefined)
        yield* Deferred.await(advisoryRelease)
      })))
      yield* Deferred.await(advisoryHeld)
      // Not due (renewal period 20 s): the write at 5 s only checks the lease, live until 30 s.
      const write = yield* Effect.forkChild(promise(() =>
        rows.putCheckpoint(checkpointRow(thread, "c1"), [], { lease: old, ttlMillis: ttl, renewMillis: 20_000, now: 5_000 })
      ))
      const writer = yield* poll(
        "the write waits in its insert",
        sql<{ pid: number }>`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted`
      )
      // Another instance takes the expired lease at 31 s while the write is between its check and its commit: it waits.
      const takeover = yield* Effect.forkChild(leases.acquire(tenantId, root, "new", ttl, 31_000))
      yield* blockedBy(writer)
      assert.isUndefined(takeover.pollUnsafe(), "the takeover waits for the write's commit")
      yield* Deferred.succeed(advisoryRelease, undefined)
      yield* Fiber.join(blocker)
      const written = yield* Fiber.join(write)
      assert.deepStrictEqual(written, { ok: true, value: { expiresAt: 30_000, renewed: false } })
      const taken = Option.getOrThrow(yield* Fiber.join(takeover))
      assert.strictEqual(taken.epoch, 2, "then it takes the lease")
      assert.isDefined(yield* Effect.promise(() => rows.getCheckpoint(tenantId, thread, "", "c1")), "the write landed before the takeover")

      // The other way round: a takeover in an open transaction; the previous holder's write (its clock says 32 s) waits, then is refused.
      const updated = yield* Deferred.make<number>()
      const commit = yield* Deferred.make<void>()
      const pending = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`UPDATE baton_leases SET holder = 'newest', epoch = epoch + 1, expires_at = ${100_000}
          WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} AND epoch = ${taken.epoch}`
        const [{ pid }] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`
        yield* Deferred.succeed(updated, Number(pid))
        yield* Deferred.await(commit)
      })))
      const taker = yield* Deferred.await(updated)
      const late = yield* Effect.forkChild(promise(() =>
        rows.putWrites(writes(thread, "c1", 1), { lease: taken, ttlMillis: ttl, renewMillis: 20_000, now: 32_000 })
      ))
      yield* blockedBy(taker)
      assert.isUndefined(late.pollUnsafe(), "the write waits for the takeover's transaction")
      yield* Deferred.succeed(commit, undefined)
      yield* Fiber.join(pending)
      const result = yield* Fiber.join(late)
      assert.isFalse(result.ok, "the write is refused once the takeover committed")
      assert.include((result as { error: LeaseLostError }).error.reason, "passed to newest")
      assert.strictEqual((yield* Effect.promise(() => rows.getWrites(tenantId, thread, "", ["c1"]))).length, 0, "nothing was written")
    }))
})
