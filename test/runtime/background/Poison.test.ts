/**
 * A poison execution — one whose recovery fails every time while
 * its record stays Running — backs off on the Clock, is counted in its
 * record and marked Failed after `maxRecoveryAttempts`, said once; a healthy
 * execution recovered alongside it finishes.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Clock, Context, Effect, Fiber, Layer } from "effect"
import { Observer, make as makeObserver } from "../../../src/runtime/Observer.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { LeaseLostError, StoreError } from "../../../src/stores/Errors.ts"
import { InstanceStoppingError } from "../../../src/runtime/Errors.ts"
import * as RecoveryFailures from "../../../src/runtime/internal/background/RecoveryFailures.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag, leaseOf, makeSideEffects, recordOf, slow, statusOf } from "../fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One step that throws an error the (wrapped) store refuses to record; each run's time and instance noted. */
const poison = (runs: Array<{ readonly at: number; readonly instanceId: string }>) =>
  Workflow.make({
    name: "poison",
    version: "1",
    graph: new StateGraph(State)
      .addNode("boom", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          runs.push({ at: yield* Clock.currentTimeMillis, instanceId: ctx.instanceId })
          return yield* Effect.fail(new Error("refused: a cause the store will not keep"))
        })
      ))
      .addEdge(START, "boom")
      .addEdge("boom", END)
  })

/**
 * The backend's stores, with a RecordStore that refuses (as Postgres refused a NUL byte) every status
 * write whose error starts with "refused:": the record of a failing step stays Running.
 */
const refusingStatus = <E>(stores: Layer.Layer<Harness.HarnessStores, E>) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const records = Context.get(context, RecordStore)
    return Context.add(context, RecordStore, {
      ...records,
      setStatus: (input) =>
        input.error?.startsWith("refused:")
          ? Effect.fail(new StoreError({ store: "RecordStore", operation: "setStatus", reason: "the server refused the error text" }))
          : records.setStatus(input),
      // A holder's transitions are fenced (setStatusFenced): the server refuses those alike.
      setStatusFenced: (input) =>
        input.error?.startsWith("refused:")
          ? Effect.fail(new StoreError({ store: "RecordStore", operation: "setStatusFenced", reason: "the server refused the error text" }))
          : records.setStatusFenced(input)
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

/** The backend's stores, with a LeaseStore whose `get` of the root named in `poisoned` (or a `getMany` including it) dies (a corrupt row, a driver bug). */
const defectiveLeaseRead = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, poisoned: { root?: string }) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const leases = Context.get(context, LeaseStore)
    return Context.add(context, LeaseStore, {
      ...leases,
      get: (tenantId, root) => root === poisoned.root ? Effect.die(new Error(`corrupt lease row of ${root}`)) : leases.get(tenantId, root),
      getMany: (roots) =>
        roots.some((r) => r.rootExecutionId === poisoned.root) ? Effect.die(new Error(`corrupt lease row of ${poisoned.root}`)) : leases.getMany(roots)
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

for (const backend of backends) {
  describe(`poison executions on ${backend.name}`, () => {
    it.effect("recoveries of a poison execution back off (1, 2, 4, 4 s), are counted, and end Failed after 5; a healthy one recovered alongside finishes", () => {
      const errors: Array<{ executionId: string; error: string }> = []
      return Effect.gen(function*() {
        const runs: Array<{ readonly at: number; readonly instanceId: string }> = []
        const fx = makeSideEffects()
        const bad = poison(runs)
        const healthy = slow(fx, "45 seconds")
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [bad, healthy], maxRecoveryAttempts: 5, recoveryBackoff: "1 second", recoveryBackoffMax: "4 seconds" }
        })
        // Both start on instance 0, which then dies: instance 1 recovers the poison tree (at once: its lease was
        // released) again and again, and must still recover the healthy one when its lease expires.
        yield* h.run(0, (b) => b.execute(healthy, { log: [] }))
        yield* h.settle
        const started = yield* Clock.currentTimeMillis
        const caller = yield* h.run(0, (b) => b.execute(bad, { log: [] }))
        yield* h.settle
        assert.strictEqual(errorTag(yield* Fiber.await(caller)), "ExecutionFailedError", "the caller is told the step failed")
        yield* h.kill(0)
        // Sweeps at many instants: every 250 ms of Clock for 20 s.
        for (let i = 0; i < 80; i++) yield* h.advance("250 millis")
        const times = runs.map((r) => r.at - started)
        assert.strictEqual(runs.length, 6, `the execute and 5 recoveries, no more: ${times.join(", ")}`)
        const recoveries = times.slice(1)
        assert.isAtMost(recoveries[0]!, 250, "the first recovery follows the released lease at once")
        assert.deepStrictEqual(recoveries.slice(1).map((t, i) => t - recoveries[i]!), [1_000, 2_000, 4_000, 4_000], "exponential, capped")
        const executionId = (errors.find((e) => e.error.includes("recovery failed")) ?? errors[0])?.executionId
        assert.isDefined(executionId, "the observer was told")
        const record = yield* recordOf("default", executionId!)
        assert.strictEqual(record?.status, "Failed")
        assert.include(record?.error ?? "", "recovery failed 5 times")
        assert.include(record?.error ?? "", "refused: a cause the store will not keep", "the last cause is kept")
        assert.strictEqual(record?.recoveryFailures, 4, "four failures counted before the fifth gave up")
        assert.strictEqual(errors.filter((e) => e.executionId === executionId).length, 1, "said once")
        // Long after: nothing runs it again; the healthy tree, recovered 30 s after its holder died, finished.
        yield* h.advance("90 seconds")
        assert.strictEqual(runs.length, 6)
        const others = yield* RecordStore.use((r) => r.findByStatus("Finished", 10, { _tag: "None" } as never))
        assert.strictEqual(others.length, 1, "the healthy execution finished")
        assert.strictEqual(yield* statusOf("default", others[0]!.executionId), "Finished")
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["first@instance-0", "slow@instance-0", "slow@instance-1", "last@instance-1"])
      }).pipe(
        Effect.provideService(Observer, makeObserver({ onError: (e) => Effect.sync(() => errors.push({ executionId: e.executionId, error: e.error })) })),
        Effect.provide(refusingStatus(backend.stores))
      )
    })

    it.effect("a recovery that moves the execution on resets its failure count: failures before a pause do not count after it", () =>
      Effect.gen(function*() {
        // "a" fails (refused) on its first 3 runs, "c" on its first 3: each stretch is the execute's or resume's
        // run plus 2 failed recoveries, then a recovery that moves on. With maxRecoveryAttempts 3, only a count
        // reset by the stretch's end lets the second stretch finish.
        const runs = { a: 0, c: 0 }
        const wf = Workflow.make({
          name: "flaky",
          version: "1",
          graph: new StateGraph(State)
            .addNode("a", Workflow.effectStep(() =>
              ++runs.a <= 3 ? Effect.fail(new Error(`refused: a ${runs.a}`)) : Effect.succeed({ log: ["a"] })
            ))
            .addNode("b", Workflow.step(async () => ({ log: [`b:${String(interrupt({ go: "?" }))}`] })))
            .addNode("c", Workflow.effectStep(() =>
              ++runs.c <= 3 ? Effect.fail(new Error(`refused: c ${runs.c}`)) : Effect.succeed({ log: ["c"] })
            ))
            .addEdge(START, "a")
            .addEdge("a", "b")
            .addEdge("b", "c")
            .addEdge("c", END)
        })
        const h = yield* Harness.make({
          instances: 1,
          baton: { workflows: [wf], maxRecoveryAttempts: 3, recoveryBackoff: "1 second", recoveryBackoffMax: "4 seconds" }
        })
        const first = yield* Fiber.await(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(errorTag(first), "ExecutionFailedError")
        for (let i = 0; i < 400 && runs.a < 4; i++) yield* h.advance("250 millis")
        yield* h.settle
        const paused = yield* RecordStore.use((r) => r.findByStatus("Paused", 10, { _tag: "None" } as never))
        assert.strictEqual(paused.length, 1, `paused after the recovery that ran "a" (a ran ${runs.a} times)`)
        const id = paused[0]!.executionId
        assert.strictEqual((yield* recordOf("default", id))?.recoveryFailures, undefined, "the pause ended the stretch of failures")
        const pending = yield* h.run(0, (b) => b.pendingPauses({ threadId: paused[0]!.threadId })).pipe(Effect.flatMap(Fiber.join))
        const resumed = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ pauseId: pending[0]!.pauseId, decision: "go" })))
        assert.strictEqual(errorTag(resumed), "ExecutionFailedError")
        for (let i = 0; i < 400 && runs.c < 4; i++) yield* h.advance("250 millis")
        yield* h.settle
        assert.strictEqual(runs.c, 4, "c ran once more after its two failed recoveries")
        const record = yield* recordOf("default", id)
        assert.strictEqual(record?.status, "Finished", `not marked Failed: ${record?.error}`)
        assert.strictEqual(record?.error, null, "no stale recovery cause on the finished record")
        assert.strictEqual(record?.recoveryFailures, undefined)
      }).pipe(Effect.provide(refusingStatus(backend.stores))))

    it.effect("a root whose visit dies is skipped; the sweep goes on and recovers the root after it", () => {
      const poisoned: { root?: string } = {}
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "45 seconds")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const [first, second] = yield* RecordStore.use((r) => r.findByStatus("Running", 10, { _tag: "None" } as never))
        // The first root in the sweep's order is the one whose lease read dies.
        poisoned.root = first!.rootExecutionId
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        assert.isTrue((yield* leaseOf("default", second!.rootExecutionId))?.holder.startsWith("instance-1#"), "the root after it was recovered")
        yield* h.advance("45 seconds")
        assert.strictEqual(yield* statusOf("default", second!.rootExecutionId), "Finished")
        assert.strictEqual(yield* statusOf("default", first!.rootExecutionId), "Running", "the defective one is left for a later look")
        assert.strictEqual((yield* h.instance(1).baton.checkLiveness).status, "Healthy", "the sweep still ends its looks")
      }).pipe(Effect.provide(defectiveLeaseRead(backend.stores, poisoned)))
    })
  })
}

describe("what counts as a failed recovery", () => {
  it("the execution's failures and defects count; a lost lease, a stopping instance, an interruption or a transient store failure do not", () => {
    const lost = new LeaseLostError({ tenantId: "t", rootExecutionId: "r", holder: "h", epoch: 1, reason: "taken" })
    assert.strictEqual(RecoveryFailures.countedCause(Cause.fail(lost)), undefined)
    assert.strictEqual(RecoveryFailures.countedCause(Cause.fail(new InstanceStoppingError({ instanceId: "i" }))), undefined)
    assert.strictEqual(RecoveryFailures.countedCause(Cause.interrupt()), undefined)
    const transient = new StoreError({ store: "s", operation: "o", reason: "connection reset", kind: "Connection" })
    assert.strictEqual(RecoveryFailures.countedCause(Cause.fail(transient)), undefined)
    assert.include(RecoveryFailures.countedCause(Cause.fail(new StoreError({ store: "s", operation: "o", reason: "value too long" }))) ?? "", "value too long")
    assert.strictEqual(RecoveryFailures.countedCause(Cause.die(new Error("corrupt row"))), "corrupt row")
    assert.deepStrictEqual([1, 2, 3, 4, 5, 6].map((n) => RecoveryFailures.backoffMillis({ recoveryBackoffMillis: 1_000, recoveryBackoffMaxMillis: 10_000 }, n)), [
      1_000, 2_000, 4_000, 8_000, 10_000, 10_000
    ])
  })
})
