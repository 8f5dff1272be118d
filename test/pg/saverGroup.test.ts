/**
 * Group commit on Postgres: fenced saver writes of several trees issued at
 * once run as one statement — one transaction, which Postgres shows as the
 * same `xmin` on every row they wrote — each fenced on its own lease: a
 * stale holder's write is refused alone, two writes under one lease never
 * share a statement, and a write Postgres cannot store fails alone while the
 * others land.
 */
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import { LeaseLostError, StoreError } from "../../src/stores/Errors.ts"
import { type Fence, fenceKey } from "../../src/stores/Fence.ts"
import type { Lease } from "../../src/stores/Lease.ts"
import * as PgClient from "../../layers/pg/PgClient.ts"
import * as PgMigrations from "../../layers/pg/PgMigrations.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import * as SqlTables from "../../layers/sql/SqlTables.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("saver_group")
const scope = Effect.runSync(Scope.make())
let run: <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Promise<A>

beforeAll(async () => {
  const context = await Effect.runPromise(Layer.buildWithScope(PgClient.layer({ url, schema, maxConnections: 4 }), scope))
  run = (effect) => Effect.runPromise(Effect.provide(effect, context))
  await run(PgMigrations.migrate({ schema }))
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const now = 5_000_000
const fenceOf = (lease: Lease, lost: Array<LeaseLostError>): Fence => ({
  lease,
  ttlMillis: 30_000,
  renewMillis: 10_000,
  now: () => now + 1_000,
  refusal: () => undefined,
  confirmed: () => {},
  lost: (e) => void lost.push(e),
  renewBeforeWrite: async () => {}
})
const checkpoint = (step: number): Checkpoint => ({ ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step }, channel_versions: { step } })
const metadata = { source: "loop" as const, step: 1, parents: {} }

/** The transaction ids that wrote the checkpoints and the writes of `threads`. */
const writers = (threads: ReadonlyArray<string>) =>
  run(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* SqlTables.make()
    const a = yield* sql`SELECT thread_id, xmin::text AS x FROM ${sql(t.checkpoints)} WHERE thread_id IN ${sql.in(threads)}`
    const b = yield* sql`SELECT thread_id, xmin::text AS x FROM ${sql(t.checkpointWrites)} WHERE thread_id IN ${sql.in(threads)}`
    return { checkpoints: a.map((r: any) => r.x as string), writes: b.map((r: any) => r.x as string) }
  }))

describe("the Postgres saver's group commit", () => {
  it("writes of several trees issued at once commit in one transaction, each fenced: a stale holder's write is refused alone", async () => {
    const leases = await run(SqlLeaseStore.make())
    const saver = new BatonCheckpointSaver(await run(SqlCheckpointStore.makeRows()))
    const live = await Promise.all(["g1", "g2", "g3"].map(async (root) =>
      Option.getOrThrow(await Effect.runPromise(leases.acquire("default", root, "holder-a", 30_000, now)))
    ))
    const old = Option.getOrThrow(await Effect.runPromise(leases.acquire("default", "g4", "holder-x", 30_000, now - 40_000)))
    await Effect.runPromise(leases.acquire("default", "g4", "holder-y", 30_000, now))
    const lost: Array<LeaseLostError> = []
    const configs = [...live, old].map((lease, i) => ({ thread_id: `group-${i}`, checkpoint_ns: "", [fenceKey]: fenceOf(lease, lost) }))
    const outcomes = await Promise.allSettled(configs.map((c) => saver.put({ configurable: c }, checkpoint(1), metadata, { step: 1 })))
    assert.deepStrictEqual(outcomes.map((o) => o.status), ["fulfilled", "fulfilled", "fulfilled", "rejected"])
    assert.instanceOf((outcomes[3] as PromiseRejectedResult).reason, LeaseLostError)
    assert.strictEqual(lost.length, 1)
    const written = await writers(["group-0", "group-1", "group-2", "group-3"])
    assert.strictEqual(written.checkpoints.length, 3, "the stale holder wrote nothing")
    assert.strictEqual(new Set(written.checkpoints).size, 1, "one transaction for the three live writes")

    // Each tree's put and putWrites at once: two per lease, so two statements, every tree's own writes fenced.
    const ids = await Promise.all(configs.slice(0, 3).map(async (c) => (await saver.getTuple({ configurable: { thread_id: c.thread_id } }))!.checkpoint.id))
    const next = await Promise.allSettled(configs.slice(0, 3).flatMap((c, i) => [
      saver.put({ configurable: { ...c, checkpoint_id: ids[i] } }, checkpoint(2), metadata, { step: 2 }),
      saver.putWrites({ configurable: { ...c, checkpoint_id: ids[i] } }, [["step", 3]], `task-${i}`)
    ]))
    assert.deepStrictEqual(next.map((o) => o.status), Array(6).fill("fulfilled"))
    const after = await writers(["group-0", "group-1", "group-2"])
    assert.strictEqual(after.writes.length, 3)
    assert.strictEqual(new Set(after.writes).size, 1, "the three trees' putWrites share a transaction")
    for (const [i, c] of configs.slice(0, 3).entries()) {
      const tuple = await saver.getTuple({ configurable: { thread_id: c.thread_id, checkpoint_id: ids[i] } })
      assert.deepStrictEqual(tuple!.pendingWrites, [[`task-${i}`, "step", 3]])
    }
  })

  it("a write Postgres cannot store fails alone: the others of its statement land", async () => {
    const leases = await run(SqlLeaseStore.make())
    const saver = new BatonCheckpointSaver(await run(SqlCheckpointStore.makeRows()))
    const lost: Array<LeaseLostError> = []
    const configs = await Promise.all(["h1", "h2", "h3"].map(async (root, i) => ({
      // A NUL character: Postgres refuses it in a text column.
      thread_id: i === 1 ? "bad\u0000thread" : `alone-${i}`,
      checkpoint_ns: "",
      [fenceKey]: fenceOf(Option.getOrThrow(await Effect.runPromise(leases.acquire("default", root, "holder-a", 30_000, now))), lost)
    })))
    const outcomes = await Promise.allSettled(configs.map((c) => saver.put({ configurable: c }, checkpoint(1), metadata, { step: 1 })))
    assert.deepStrictEqual(outcomes.map((o) => o.status), ["fulfilled", "rejected", "fulfilled"])
    assert.instanceOf((outcomes[1] as PromiseRejectedResult).reason, StoreError)
    assert.strictEqual(lost.length, 0)
    const written = await writers(["alone-0", "alone-2"])
    assert.strictEqual(written.checkpoints.length, 2)
  })
})
