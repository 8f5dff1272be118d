/**
 * `start` / `execute` / `resume` with a request
 * key, on the harness (memory and SQLite, TestClock): repeated and racing
 * calls start once, a caller that died before or after recording is
 * followed, the key expires after `requestRetention`, and the same key for
 * another request is `RequestConflictError`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option } from "effect"
import { StoreError } from "../../../src/stores/Errors.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { RequestStore } from "../../../src/stores/RequestStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, approveThenWork, backends, errorTag, makeSideEffects, recordOf, slow } from "../fixtures.ts"
import { counted } from "./RequestsRaces.ts"

/** How the wrapped RecordStore's `startRoot` behaves on its next call: as the backend, hanging, or failing once. */
interface StartRootFault {
  next: "pass" | "hang" | "fail"
  /** Set once a hanging call began. */
  hanging: boolean
}

/** The backend's stores, with a RecordStore whose next `startRoot` hangs or fails as `fault` says. */
const faultyStartRoot = <E>(stores: Layer.Layer<Harness.HarnessStores | RequestStore, E>, fault: StartRootFault) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores | RequestStore>()
    const records = Context.get(context, RecordStore)
    return Context.add(context, RecordStore, {
      ...records,
      startRoot: (record) =>
        Effect.suspend(() => {
          const now = fault.next
          fault.next = "pass"
          if (now === "hang") {
            fault.hanging = true
            return Effect.never
          }
          if (now === "fail") {
            return Effect.fail(new StoreError({ store: "RecordStore", operation: "startRoot", reason: "connection reset", kind: "Connection" }))
          }
          return records.startRoot(record)
        })
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

/** Real turns of the event loop until `done` (a step runs on promises the scheduler cannot see). */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10_000 && !done(); i++) yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    assert.isTrue(done(), "the awaited moment came")
  })

const roots = (tenantId = "default") =>
  RecordStore.use((r) => r.list({ tenantId, limit: 100 })).pipe(Effect.map((page) => page.records))

for (const backend of backends) {
  describe(`request keys on ${backend.name}`, () => {
    it.effect("6 racing calls of one key on 3 instances (start and execute): one execution, one run of each step, one handle", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
        const fibers = yield* Effect.forEach([0, 1, 2, 0, 1, 2], (i, n) =>
          h.run(i, (b) =>
            n % 2 === 0
              ? Effect.map(b.start(wf, { log: [] }, { requestKey: "r1" }), (handle) => handle.executionId)
              : Effect.map(b.execute(wf, { log: [] }, { requestKey: "r1" }), (out) => {
                assert.strictEqual(out._tag, "Paused")
                return out.executionId
              })))
        yield* h.settle
        const ids = yield* Effect.forEach(fibers, Fiber.join)
        assert.strictEqual(new Set(ids).size, 1, `one execution: ${ids.join(", ")}`)
        assert.deepStrictEqual((yield* roots()).map((r) => r.executionId), [ids[0]], "one record")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve"], "each step once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a repeated execute answers the first call's output; the same key with another input, workflow or thread is RequestConflictError; another tenant's key is its own", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf, counted] } })
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { requestKey: "k" })))
        const again = yield* Fiber.join(yield* h.run(1, (b) => b.execute(wf, { log: [] }, { requestKey: "k" })))
        assert.deepStrictEqual(again, first, "the same output, pause ids included")
        const handle = yield* Fiber.join(yield* h.run(1, (b) => b.start(wf, { log: [] }, { requestKey: "k" })))
        assert.strictEqual(handle.executionId, first.executionId)
        assert.strictEqual(handle.threadId, first.threadId)
        const refused: Array<Exit.Exit<unknown, unknown>> = [
          yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.execute(wf, { log: ["other"] }, { requestKey: "k" })))),
          yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.execute(counted, { log: [] }, { requestKey: "k" })))),
          yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { requestKey: "k", threadId: "elsewhere" }))))
        ]
        assert.deepStrictEqual(refused.map(errorTag), ["RequestConflictError", "RequestConflictError", "RequestConflictError"])
        const conflict = Exit.isFailure(refused[0]!) ? Option.getOrThrow(Exit.findErrorOption(refused[0]!)) : undefined
        assert.include((conflict as Error).message, "Nothing was written")
        assert.strictEqual((yield* roots()).length, 1, "nothing started by a refused call")
        assert.isTrue(Option.isNone(yield* RecordStore.use((r) => r.getThread("default", "elsewhere"))), "no thread made by a refused call")
        const other = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { requestKey: "k", tenantId: "t2" })))
        assert.notStrictEqual(other.executionId, first.executionId)
        assert.strictEqual((yield* roots("t2")).length, 1)
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve", "draft", "approve"], "one run per tenant")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("the first caller died after the start was recorded: a call of the key on another instance gets its handle and awaits its end", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "45 seconds")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { requestKey: "k", ownerId: "alice" })))
        yield* h.settle
        yield* h.kill(0)
        const intruder = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.start(wf, { log: [] }, { requestKey: "k", ownerId: "mallory" }))))
        assert.strictEqual(errorTag(intruder), "ThreadOwnerError", "the key does not hand another owner's execution over")
        const follower = yield* h.run(1, (b) => b.execute(wf, { log: [] }, { requestKey: "k", ownerId: "alice" }))
        yield* h.advance("31 seconds")
        yield* h.advance("45 seconds")
        const out = yield* Fiber.join(follower)
        assert.strictEqual(out._tag, "Finished")
        assert.strictEqual(out.executionId, handle.executionId)
        assert.deepStrictEqual((yield* roots()).map((r) => r.executionId), [handle.executionId], "never started again")
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["first@instance-0", "slow@instance-0", "slow@instance-1", "last@instance-1"])
        assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1], "each side effect once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("the first caller died after claiming the key, before recording: the next call of the key starts that execution once its lease expired", () => {
      const fault: StartRootFault = { next: "hang", hanging: false }
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "45 seconds")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.start(wf, { log: [] }, { requestKey: "k" }))
        yield* until(() => fault.hanging)
        yield* h.kill(0)
        const claimed = Option.getOrThrow(yield* RequestStore.use((s) => s.get("default", "k", 0)))
        const follower = yield* h.run(1, (b) => b.execute(wf, { log: [] }, { requestKey: "k" }))
        yield* h.advance("29 seconds")
        assert.strictEqual((yield* roots()).length, 0, "nothing started while the dead caller's lease holds")
        yield* h.advance("2 seconds")
        assert.deepStrictEqual((yield* roots()).map((r) => r.executionId), [(claimed.handle as { executionId: string }).executionId], "the claimed id")
        yield* h.advance("45 seconds")
        const out = yield* Fiber.join(follower)
        assert.strictEqual(out._tag, "Finished")
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["first@instance-1", "slow@instance-1", "last@instance-1"])
      }).pipe(Effect.provide(faultyStartRoot(backend.stores, fault)))
    })

    it.effect("a first call that failed before recording (a transient store error) leaves the key to a retry, which starts it at once", () => {
      const fault: StartRootFault = { next: "fail", hanging: false }
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const failed = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { requestKey: "k" }))))
        assert.strictEqual(errorTag(failed), "StoreError")
        const error = Option.getOrThrow(Exit.findErrorOption(failed)) as StoreError
        assert.isUndefined(error.recorded, "nothing was recorded: the retry is right")
        assert.include(error.message, "can be retried")
        assert.strictEqual((yield* roots()).length, 0)
        const out = yield* Fiber.join(yield* h.run(1, (b) => b.execute(wf, { log: [] }, { requestKey: "k" })))
        assert.strictEqual(out._tag, "Paused")
        const claimed = Option.getOrThrow(yield* RequestStore.use((s) => s.get("default", "k", 0)))
        assert.strictEqual(out.executionId, (claimed.handle as { executionId: string }).executionId)
        assert.strictEqual((yield* roots()).length, 1)
      }).pipe(Effect.provide(faultyStartRoot(backend.stores, fault)))
    })

    it.effect("keys expire after requestRetention: a call after it starts anew", () =>
      Effect.gen(function*() {
        const wf = approval(makeSideEffects())
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], requestRetention: "1 minute" } })
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { requestKey: "k", threadId: "t" })))
        if (first._tag !== "Paused") return assert.fail("expected a pause")
        yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: first.pauses[0]!.pauseId, decision: "yes" })))
        yield* h.advance("59 seconds")
        const within = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { requestKey: "k", threadId: "t" })))
        assert.strictEqual(within.executionId, first.executionId, "kept within the retention")
        yield* h.advance("2 seconds")
        const after = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { requestKey: "k", threadId: "t" })))
        assert.notStrictEqual(after.executionId, first.executionId, "a new execution once the key expired")
        assert.strictEqual((yield* roots()).length, 2)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("resume with a key: racing and repeated calls on two instances answer one continuation (its side effect once); another decision under the key is RequestConflictError", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        const pauseId = paused.pauses[0]!.pauseId
        const notJson = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId, decision: 1n, requestKey: "d1" }))))
        assert.strictEqual(errorTag(notJson), "InvalidInputError", "a decision that is not JSON is refused, not a defect")
        assert.isTrue(Option.isNone(yield* RequestStore.use((r) => r.get("default", "d1", 0))), "the key was not claimed")
        const racing = yield* Effect.forEach([0, 1, 0, 1], (i) => h.run(i, (b) => b.resume({ pauseId, decision: { ok: true, by: "me" }, requestKey: "d1" })))
        yield* h.settle
        const outs = yield* Effect.forEach(racing, Fiber.join)
        for (const out of outs) assert.strictEqual(out._tag, "Finished")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve", "approve", "send"], "continued once")
        // The same decision written in another key order is the same request.
        const repeated = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, decision: { by: "me", ok: true }, requestKey: "d1" })))
        assert.deepStrictEqual(repeated, outs[0])
        const other = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, decision: "no", requestKey: "d1" }))))
        assert.strictEqual(errorTag(other), "RequestConflictError")
        const unkeyed = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, decision: "no", requestKey: "d2" }))))
        assert.strictEqual(errorTag(unkeyed), "NotPausedError", "a new key for an answered pause is still refused")
        assert.deepStrictEqual([...fx.applied.values()], [1])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("resume with a key whose first caller died mid-continuation: the call of the key on another instance continues the same tree", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approveThenWork(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        const input = { pauseId: paused.pauses[0]!.pauseId, decision: "go", requestKey: "d" }
        yield* h.run(0, (b) => b.resume(input))
        yield* h.settle
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["work@instance-0"])
        yield* h.kill(0)
        const follower = yield* h.run(1, (b) => b.resume(input))
        yield* h.advance("31 seconds")
        yield* h.advance("45 seconds")
        const out = yield* Fiber.join(follower)
        assert.strictEqual(out._tag, "Finished")
        if (out._tag === "Finished") assert.deepStrictEqual((out.output as { log: Array<string> }).log, ["approved:go", "worked"])
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["work@instance-0", "work@instance-1"])
        assert.deepStrictEqual([...fx.applied.values()], [1])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("request keys without a RequestStore", () => {
  it.effect("a call with a requestKey is refused before anything is written", () =>
    Effect.gen(function*() {
      const wf = approval(makeSideEffects())
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const exit = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { requestKey: "k", threadId: "t" }))))
      assert.strictEqual(errorTag(exit), "InvalidInputError")
      assert.include((Option.getOrThrow(Exit.findErrorOption(exit)) as Error).message, "RequestStore")
      assert.isTrue(Option.isNone(yield* RecordStore.use((r) => r.getThread("default", "t"))), "no thread")
      assert.isUndefined(yield* recordOf("default", "exec_000001"))
    }).pipe(Effect.provide(Layer.effectContext(Effect.map(Effect.context<Harness.HarnessStores>(), Context.omit(RequestStore))).pipe(
      Layer.provide(Layer.fresh(backends[0].stores))
    ))))
})
