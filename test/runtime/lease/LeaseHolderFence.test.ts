/**
 * The lease holder and its fence over the in-memory stores, on TestClock:
 * fenced checkpoint writes renew the lease only when a renewal is due and
 * then count as a confirmed renewal; one that does not renew confirms the
 * expiry the store holds; a pass's normal end stops the holder like a lost
 * lease (late writes refused, `lost` failed), its error built on demand.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Checkpoint, emptyCheckpoint } from "@langchain/langgraph-checkpoint"
import { Context, Deferred, Effect, Exit, Layer, Option, Scope } from "effect"
import { TestClock } from "effect/testing"
import { MemoryCheckpointStore, MemoryLeaseStore, MemoryState } from "../../../layers/memory/index.ts"
import { CheckpointStore } from "../../../src/stores/CheckpointStore.ts"
import { LeaseLostError, StoreError } from "../../../src/stores/Errors.ts"
import { fenceKey, tenantConfigKey } from "../../../src/stores/Fence.ts"
import * as LeaseHolder from "../../../src/runtime/internal/lease/LeaseHolder.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"

const leaseMillis = 30_000
const renewMillis = 10_000
const tenantId = "tenant-h"

/** How the lease store's `renew` behaves: normally, failing before it reaches the store, or failing after it landed (the answer lost). */
type RenewMode = "ok" | "unreachable" | "answerLost"

const setup = Effect.gen(function*() {
  const mode = { renew: "ok" as RenewMode }
  const context = yield* Layer.build(Layer.merge(MemoryLeaseStore.layer, MemoryCheckpointStore.layer).pipe(Layer.provideMerge(MemoryState.layer)))
  const leases = Context.get(context, LeaseStore)
  const failure = new StoreError({ store: "LeaseStore", operation: "renew", reason: "unreachable" })
  const flaky: LeaseStore["Service"] = {
    ...leases,
    renew: (lease, ttl, now) =>
      mode.renew === "ok"
        ? leases.renew(lease, ttl, now)
        : mode.renew === "unreachable"
        ? Effect.fail(failure)
        : Effect.andThen(leases.renew(lease, ttl, now), Effect.fail(failure))
  }
  const saver = Context.get(context, CheckpointStore).saver
  const scope = yield* Scope.make()
  const root = `root-${Math.random().toString(36).slice(2)}`
  const holder = Option.getOrThrow(
    yield* LeaseHolder.acquire({ tenantId, rootExecutionId: root, holder: "instance-0#1", leaseMillis, renewMillis }).pipe(
      Scope.provide(scope),
      Effect.provideService(LeaseStore, flaky)
    )
  )
  let version = 0
  /** A checkpoint put under the holder's fence, now. */
  const put = Effect.tryPromise({
    try: () => {
      const v = ++version
      const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: `cp-${String(v).padStart(4, "0")}`, channel_values: { v }, channel_versions: { v } }
      return saver.put(
        { configurable: { thread_id: root, checkpoint_ns: "", [tenantConfigKey]: tenantId, [fenceKey]: holder.fence } },
        checkpoint,
        { source: "loop", step: v, parents: {} },
        { v }
      )
    },
    catch: (e) => e
  })
  const stored = Effect.map(leases.get(tenantId, root), (o) => Option.getOrUndefined(o)?.expiresAt)
  const latest = Effect.promise(() => saver.getTuple({ configurable: { thread_id: root, checkpoint_ns: "", [tenantConfigKey]: tenantId } }))
  return { mode, holder, put, stored, latest, scope }
})

describe("lease holder fence (memory, TestClock)", () => {
  it.effect("with renewals failing, a fenced write renews once one is due and counts as a confirmed renewal; the holder stops at its confirmedUntil", () =>
    Effect.gen(function*() {
      const { mode, holder, put, stored, scope } = yield* setup
      assert.strictEqual(holder.confirmedUntil(), leaseMillis)
      mode.renew = "unreachable"
      yield* TestClock.adjust(5_000)
      yield* put
      assert.strictEqual(yield* stored, 30_000, "not due at 5 s: the write left the lease as it was")
      assert.strictEqual(holder.confirmedUntil(), 30_000)
      yield* TestClock.adjust(5_000) // 10 s: the renewal fiber's attempt fails
      yield* put
      assert.strictEqual(yield* stored, 30_000, "not due at exactly 10 s (30 s is not earlier than 10 s + 30 s - 10 s)")
      assert.strictEqual(holder.confirmedUntil(), 30_000)
      yield* TestClock.adjust(1)
      yield* put
      assert.strictEqual(yield* stored, 40_001, "due at 10.001 s: the write pushed the lease")
      assert.strictEqual(holder.confirmedUntil(), 40_001, "the clock read before that write + the lease length")
      yield* TestClock.adjust(30_000 - 1) // 40 s; every renewal since failed
      assert.isFalse(holder.signal.aborted, "still holding 1 ms before confirmedUntil")
      yield* TestClock.adjust(1)
      assert.isTrue(holder.signal.aborted, "stopped at confirmedUntil exactly")
      assert.instanceOf(holder.signal.reason, LeaseLostError)
      const refused = yield* Effect.flip(put)
      assert.strictEqual(refused, holder.signal.reason, "a later write is refused locally")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a write that does not renew confirms the expiry the store holds: a renewal whose answer was lost still counts", () =>
    Effect.gen(function*() {
      const { mode, holder, put, stored, scope } = yield* setup
      mode.renew = "answerLost"
      yield* TestClock.adjust(10_000) // the renewal lands (40 s) but the holder never hears of it
      assert.strictEqual(yield* stored, 40_000)
      assert.strictEqual(holder.confirmedUntil(), 30_000)
      yield* TestClock.adjust(5_000)
      yield* put
      assert.strictEqual(yield* stored, 40_000, "not due at 15 s: left as it was")
      assert.strictEqual(holder.confirmedUntil(), 40_000, "the stored expiry: the 10 s renewal's clock read + the lease length")
      mode.renew = "unreachable"
      yield* TestClock.adjust(15_000) // 30 s
      assert.isFalse(holder.signal.aborted, "past the acquire's 30 s, on the confirmed renewal")
      yield* TestClock.adjust(10_000)
      assert.isTrue(holder.signal.aborted, "stopped at 40 s")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("when its pass ends, the holder stops like a lost one: bodies see the pass ended, late writes are refused, `lost` fails, the lease is released", () =>
    Effect.gen(function*() {
      const { holder, put, stored, latest, scope } = yield* setup
      yield* put
      const before = (yield* latest)?.checkpoint.id
      assert.isFalse(holder.signal.aborted)
      assert.isUndefined(holder.fence.refusal())
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(holder.signal.aborted)
      assert.strictEqual((holder.signal.reason as Error).message, "the pass ended")
      assert.isUndefined(yield* stored, "released")
      const refusal = holder.fence.refusal()
      assert.instanceOf(refusal, LeaseLostError)
      assert.strictEqual(refusal!.reason, "the pass ended and released the lease")
      assert.strictEqual(holder.fence.refusal(), refusal, "one error, however often asked")
      assert.strictEqual(yield* Effect.flip(Deferred.await(holder.lost)), refusal)
      assert.strictEqual(yield* Effect.flip(put), refusal, "a write after the end is refused")
      assert.strictEqual((yield* latest)?.checkpoint.id, before, "and writes nothing")
    }))
})
