/**
 * Signals across instances on the TestClock: a wait rests until a signal of
 * its name comes from any instance; a signal sent before the wait (also one
 * racing its start, at the arm and at the look) is kept for it; signals are
 * taken once each, in send order; a wait times out with a typed result; a
 * sender that dies right after its send still wakes the wait (any instance's
 * waker); a signal to an unknown or finished thread, of an undeclared name or
 * with a bad payload is a typed error with nothing written; and a signal
 * racing a cancel either lands before the end (then it is dropped with the
 * tree) or is refused with `ThreadNotRunningError` (nothing kept).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer } from "effect"
import {
  MemoryCheckpointStore,
  MemoryLeaseStore,
  MemoryPauseStore,
  MemoryRecordStore,
  MemoryState,
  MemoryStores,
  MemoryTreeStore
} from "../../../layers/memory/index.ts"
import * as Baton from "../../../src/runtime/Baton.ts"
import * as Ids from "../../../src/stores/Ids.ts"
import { TimerStore } from "../../../src/stores/TimerStore.ts"
import { Harness } from "../../../src/testing/index.ts"
import type { StoreCall } from "../../../src/testing/Harness.ts"
import { approver, collector, napper, slowApprover } from "./timerFixtures.ts"

const signalsOf = (root: string) => TimerStore.use((t) => t.listSignals("default", root))

const tagOf = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) ? (exit.cause.reasons[0] as { error?: { _tag?: string } })?.error?._tag : "Success"

/** A `beforeStoreCall` that runs `act` once, before instance `index`'s first call `match` accepts. */
const onceBefore = (index: number, match: (call: StoreCall) => boolean) => {
  const state: { act?: Effect.Effect<void>; done: boolean } = { done: false }
  return {
    beforeStoreCall: (call: StoreCall) =>
      Effect.suspend(() => {
        if (state.done || state.act === undefined || call.index !== index || !match(call)) return Effect.void
        state.done = true
        return state.act
      }),
    set: (act: Effect.Effect<void>) => {
      state.act = act
    },
    get done() {
      return state.done
    }
  }
}

describe("signals", () => {
  it.effect("a wait rests until a signal of its name comes from another instance; status shows it; the step gets the payload", () =>
    Effect.gen(function*() {
      const wf = approver()
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      const status = yield* h.baton(1).status(started.executionId)
      assert.strictEqual(status.status, "Paused")
      assert.deepStrictEqual(status.waits?.map((w) => w._tag === "Signal" && [w.name, w.timeoutAt]), [["approve", null]])
      assert.strictEqual(status.wakesAt, null, "no timeout: it wakes only on a signal")
      yield* h.advance("1 hour")
      assert.strictEqual((yield* h.baton(0).status(started.executionId)).status, "Paused")
      const sent = yield* h.baton(1).signal(started.threadId, "approve", { by: "ann" })
      assert.strictEqual(sent.executionId, started.executionId)
      yield* h.settle
      const done = yield* h.baton(0).await(started)
      assert.strictEqual(done._tag, "Finished")
      assert.deepStrictEqual(done._tag === "Finished" && done.output.got, { _tag: "Received", payload: { by: "ann" }, seq: sent.seq })
      assert.deepStrictEqual(yield* signalsOf(started.executionId), [], "the tree's signals went with it")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("a signal sent before the wait starts is kept for it: the step goes on without resting", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [slowApprover] } })
      const started = yield* h.baton(0).start(slowApprover, {})
      yield* h.settle
      assert.strictEqual((yield* h.baton(1).status(started.executionId)).status, "Running", "still in its first step")
      yield* h.baton(1).signal(started.threadId, "approve", { by: "early" })
      yield* h.advance("10 seconds")
      const done = yield* h.baton(0).await(started)
      assert.deepStrictEqual(done._tag === "Finished" && (done.output.got as { payload: unknown }).payload, { by: "early" })
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  for (const at of ["arm", "consume"] as const) {
    it.effect(`a signal racing the wait's start (sent just before the holder's ${at}) is delivered exactly once`, () =>
      Effect.gen(function*() {
        const wf = approver()
        const hook = onceBefore(0, (c) => c.operation === `baton/TimerStore.${at}`)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: hook.beforeStoreCall })
        const sent: Array<number> = []
        hook.set(Effect.orDie(Effect.map(Effect.suspend(() => h.baton(1).signal("race-thread", "approve", { by: "racer" })), (s) => void sent.push(s.seq))))
        const started = yield* h.baton(0).start(wf, {}, { threadId: "race-thread" })
        yield* h.settle
        yield* h.advance("1 second")
        const done = yield* h.baton(0).await(started)
        assert.isTrue(hook.done)
        assert.deepStrictEqual(done._tag === "Finished" && done.output.got, { _tag: "Received", payload: { by: "racer" }, seq: sent[0] })
        assert.deepStrictEqual(done._tag === "Finished" && done.output.log, ["ask", "Received"], "the wait answered once")
      }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))
  }

  it.effect("signals are taken once each, in send order, from any instance", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [collector] } })
      const started = yield* h.baton(0).start(collector, {})
      yield* h.settle
      for (const [i, note] of [[1, "a"], [2, "b"], [0, "c"]] as const) yield* h.baton(i).signal(started.threadId, "note", note)
      yield* h.advance("1 second")
      const done = yield* h.baton(2).await(started)
      assert.deepStrictEqual(done._tag === "Finished" && done.output.got, ["a", "b", "c"])
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("a wait times out with a typed result, on time; a signal after the end is ThreadNotRunningError", () =>
    Effect.gen(function*() {
      const wf = approver("1 minute", "approver-timeout")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      const { wakesAt } = yield* h.baton(1).status(started.executionId)
      yield* h.advance(59_999)
      assert.strictEqual((yield* h.baton(1).status(started.executionId)).status, "Paused", "not timed out early")
      yield* h.advance(1)
      const done = yield* h.baton(1).await(started)
      assert.deepStrictEqual(done._tag === "Finished" && done.output.got, { _tag: "TimedOut", at: wakesAt })
      const late = yield* Effect.exit(h.baton(0).signal(started.threadId, "approve", { by: "late" }))
      assert.strictEqual(tagOf(late), "ThreadNotRunningError")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("a sender that dies right after its send: another instance's waker delivers it", () =>
    Effect.gen(function*() {
      const wf = approver()
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      // What a sender leaves when it dies after its send (no poke, no check after): the signal row alone.
      const sent = yield* TimerStore.use((t) => t.send({ tenantId: "default", threadId: started.threadId, rootExecutionId: started.executionId, name: "approve", payload: { by: "ghost" }, sentAt: 0 }))
      yield* h.advance("30 seconds")
      const done = yield* h.baton(1).await(started)
      assert.deepStrictEqual(done._tag === "Finished" && done.output.got, { _tag: "Received", payload: { by: "ghost" }, seq: sent.seq })
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("typed errors, nothing written: unknown thread, finished thread, undeclared name, bad payload, another owner", () =>
    Effect.gen(function*() {
      const wf = approver("1 minute", "approver-errors")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const b = h.baton(1)
      assert.strictEqual(tagOf(yield* Effect.exit(b.signal("no-such-thread", "approve", { by: "x" }))), "UnknownThreadError")
      const owned = yield* h.baton(0).start(wf, {}, { ownerId: "alice" })
      yield* h.settle
      assert.strictEqual(tagOf(yield* Effect.exit(b.signal(owned.threadId, "approve", { by: "x" }, { ownerId: "bob" }))), "ThreadOwnerError")
      assert.strictEqual(tagOf(yield* Effect.exit(b.signal(owned.threadId, "approve", { by: "x" }, { ownerId: "alice", tenantId: "other" }))), "UnknownThreadError")
      const undeclared = yield* Effect.exit(b.signal(owned.threadId, "reject", {}, { ownerId: "alice" }))
      assert.strictEqual(tagOf(undeclared), "UnknownSignalError")
      const bad = yield* Effect.exit(b.signal(owned.threadId, "approve", { by: 7 }, { ownerId: "alice" }))
      assert.strictEqual(tagOf(bad), "InvalidInputError")
      assert.strictEqual(Exit.isFailure(bad) && (bad.cause.reasons[0] as { error: { field: string } }).error.field, "payload.by")
      assert.deepStrictEqual(yield* signalsOf(owned.executionId), [], "nothing was written")
      yield* h.advance("1 minute")
      assert.strictEqual((yield* h.baton(0).await(owned, { ownerId: "alice" }))._tag, "Finished")
      assert.strictEqual(tagOf(yield* Effect.exit(b.signal(owned.threadId, "approve", { by: "x" }, { ownerId: "alice" }))), "ThreadNotRunningError")
      assert.deepStrictEqual(yield* signalsOf(owned.executionId), [], "nothing was written for the finished thread")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("signal and cancel: a signal before the cancel is accepted and dropped with the tree; one after is refused", () =>
    Effect.gen(function*() {
      const wf = approver(undefined, "approver-cancel")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const first = yield* h.baton(0).start(wf, {})
      yield* h.settle
      // "note" is declared but never waited for: it stays until the tree ends.
      yield* h.baton(1).signal(first.threadId, "note", "kept")
      assert.strictEqual((yield* signalsOf(first.executionId)).length, 1)
      assert.isTrue((yield* h.baton(0).cancel(first.threadId)).cancelled)
      assert.deepStrictEqual(yield* signalsOf(first.executionId), [], "dropped with the cancelled tree")
      assert.strictEqual(tagOf(yield* Effect.exit(h.baton(1).signal(first.threadId, "approve", { by: "late" }))), "ThreadNotRunningError")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("signal racing a cancel that ends the tree between the send and its check: refused, nothing kept", () =>
    Effect.gen(function*() {
      const wf = approver(undefined, "approver-cancel-race")
      let sentSeen = false
      const hook = onceBefore(1, (c) => {
        if (c.operation === "baton/TimerStore.send") sentSeen = true
        return sentSeen && c.operation === "baton/RecordStore.getRecord"
      })
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: hook.beforeStoreCall })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      hook.set(Effect.asVoid(Effect.orDie(h.baton(0).cancel(started.threadId))))
      const fiber = yield* h.run(1, (b) => b.signal(started.threadId, "approve", { by: "racer" }))
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(hook.done, "the cancel ran between the send and its check")
      assert.strictEqual(tagOf(exit), "ThreadNotRunningError")
      assert.strictEqual((yield* h.baton(0).status(started.executionId)).status, "Cancelled")
      assert.deepStrictEqual(yield* signalsOf(started.executionId), [], "nothing kept")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))
})

describe("sleeps and signals without a TimerStore", () => {
  const bare = Layer.mergeAll(
    MemoryLeaseStore.layer,
    MemoryRecordStore.layer,
    MemoryPauseStore.layer,
    MemoryTreeStore.layer,
    MemoryCheckpointStore.layer
  ).pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layer)))

  it.effect("a workflow declaring signals fails the Layer with BatonConfigError on stores; a sleep fails its step saying what to provide", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.exit(Effect.scoped(Layer.build(Baton.layer({ workflows: [approver(undefined, "no-store")] }).pipe(Layer.provide(bare)))))
      assert.strictEqual(tagOf(refused), "BatonConfigError")
      assert.strictEqual(Exit.isFailure(refused) && (refused.cause.reasons[0] as { error: { field: string } }).error.field, "stores")
      const sleeper = napper({ at: [] }, "1 minute", "no-store-napper")
      const failed = yield* Effect.exit(Baton.Baton.use((b) => b.execute(sleeper, {})).pipe(
        Effect.provide(Baton.layer({ workflows: [sleeper] }).pipe(Layer.provide(bare)))
      ))
      assert.strictEqual(tagOf(failed), "ExecutionFailedError")
      assert.include(Exit.isFailure(failed) ? String((failed.cause.reasons[0] as { error: { message: string } }).error.message) : "", "TimerStore")
    }))
})
