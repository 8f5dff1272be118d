/**
 * Leases and fenced writes on Postgres, under real contention: eight pooled
 * connections race for one lease, round after round; a holder whose lease
 * passed to another can write nothing, whichever write path it takes.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient, PgMigrations } from "../../layers/pg/index.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import type { BlobRow, CheckpointRow, CheckpointRows, WriteRow } from "../../src/CheckpointStore.ts"
import type { LeaseLostError } from "../../src/Errors.ts"
import type { Lease } from "../../src/Lease.ts"
import type { LeaseStoreShape } from "../../src/LeaseStore.ts"
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
      // Every racer on its own connection: the pool opens all eight.
      const pids = yield* Effect.all(
        Array.from({ length: racers }, () => sql<{ pid: number }>`SELECT pg_backend_pid() AS pid, pg_sleep(0.05)`),
        { concurrency: "unbounded" }
      )
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
      const fence = { lease: stale, ttlMillis: ttl, now: 31_500 }
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
        assert.strictEqual((yield* Effect.promise(() => rows.getWrites(tenantId, thread, "", "c1"))).length, 0, "no write written")
        assert.strictEqual(
          (yield* Effect.promise(() => rows.getBlobs(tenantId, thread, "", [{ channel: "channel0", version: "1" }]))).length,
          0,
          "no blob written"
        )
      }
      assert.deepStrictEqual(Option.getOrThrow(yield* leases.get(tenantId, root)), current, "the lease is untouched")
      // The current holder writes, and its write pushes the lease.
      const thread = randomName("thread")
      yield* Effect.promise(() => rows.putCheckpoint(checkpointRow(thread, "c1"), blobs(thread, 3), { lease: current, ttlMillis: 45_000, now: 40_000 }))
      assert.strictEqual(Option.getOrThrow(yield* leases.get(tenantId, root)).expiresAt, 85_000)
      assert.isDefined(yield* Effect.promise(() => rows.getCheckpoint(tenantId, thread, "", undefined)))
    }))
})
