/**
 * `setStatusFenced` on the SQL stores, counted: the lease check and the
 * move are one statement when they succeed (statements per recovery;
 * before, a transaction of a lease read and the move), and the answers stay
 * those of the contract. Shared by the SQLite and Postgres test files.
 */
import { assert } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Statement } from "effect/sql"
import type { ExecutionRecord } from "../src/stores/ExecutionRecord.ts"
import { LeaseStore } from "../src/stores/LeaseStore.ts"
import { RecordStore } from "../src/stores/RecordStore.ts"

/** Runs `effect`, answering its result and the statements it ran (their SQL). */
const counted = <A, E, R>(effect: Effect.Effect<A, E, R>) => {
  const seen: Array<string> = []
  const counting: Statement.Transformer = (statement) =>
    Effect.sync(() => {
      seen.push(statement.compile()[0])
      return statement
    })
  return Effect.map(Effect.provideService(effect, Statement.CurrentTransformer, counting), (a) => ({ a, seen }))
}

/** A root recorded Running and leased by `holder` at `now`. */
const leasedRoot = Effect.fnUntraced(function*(id: string, now: number) {
  const leases = yield* LeaseStore
  const records = yield* RecordStore
  const r: ExecutionRecord = {
    tenantId: "t",
    executionId: id,
    threadId: `thread-${id}`,
    rootExecutionId: id,
    parentExecutionId: null,
    depth: 1,
    workflowName: "wf",
    workflowVersion: "1",
    configHash: "hash",
    status: "Running",
    error: null,
    createdAt: now,
    updatedAt: now
  }
  const lease = Option.getOrThrow(yield* leases.acquire("t", id, "holder", 30_000, now))
  assert.strictEqual((yield* records.startRoot(r))._tag, "Started")
  return lease
})

/** The checks: one statement for a move that lands; a stale lease still refused, a compare-and-set still false. */
export const fencedMoveStatements = Effect.gen(function*() {
  const records = yield* RecordStore
  const leases = yield* LeaseStore
  const now = 1_000_000
  const lease = yield* leasedRoot(`root-${Math.random().toString(36).slice(2)}`, now)
  const move = (from: "Running" | "Paused", to: "Paused" | "Finished" | "Running", at = now + 1, l = lease) =>
    records.setStatusFenced({ tenantId: "t", executionId: l.rootExecutionId, from, to, now: at, lease: l })
  const landed = yield* counted(move("Running", "Paused"))
  assert.isTrue(landed.a)
  assert.strictEqual(landed.seen.length, 1, `one statement: ${landed.seen.join(" | ")}`)
  const missed = yield* counted(move("Running", "Finished"))
  assert.isFalse(missed.a, "a compare-and-set that does not match moves nothing")
  const expired = yield* Effect.flip(move("Paused", "Running", now + 30_000))
  assert.strictEqual(expired._tag, "LeaseLostError", "an expired lease is refused")
  const taken = Option.getOrThrow(yield* leases.acquire("t", lease.rootExecutionId, "other", 30_000, now + 30_000))
  const stale = yield* Effect.flip(move("Paused", "Running", now + 30_001))
  assert.strictEqual(stale._tag, "LeaseLostError", "the old holder after a takeover is refused")
  const record = Option.getOrThrow(yield* records.getRecord("t", lease.rootExecutionId))
  assert.strictEqual(record.status, "Paused", "no refused move landed")
  assert.isTrue(yield* move("Paused", "Finished", now + 30_001, taken), "the new holder moves it")
})
