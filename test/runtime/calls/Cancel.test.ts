import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import * as Cancel from "../../../src/runtime/internal/undo/Cancel.ts"
import { Observer, make as makeObserver } from "../../../src/runtime/Observer.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects, recordOf, slow, theRunningRoot } from "../fixtures.ts"

for (const backend of backends) {
describe(`cancel from any instance on ${backend.name}`, () => {
  it.effect("a cancel landing on a non-holder reaches the holder within one renewal", () => {
    const errors: Array<string> = []
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { ownerId: "alice" }))
      yield* h.settle
      const root = yield* theRunningRoot
      const answer = yield* Fiber.join(yield* h.run(1, (b) => b.cancel(root.threadId, { ownerId: "alice" })))
      assert.deepStrictEqual(answer, { cancelled: true })
      assert.isUndefined(running.pollUnsafe(), "the holder has not seen it yet")
      yield* h.advance("10 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(running)), "ExecutionCancelledError")
      const record = yield* recordOf(root.tenantId, root.executionId)
      assert.strictEqual(record?.status, "Cancelled")
      assert.deepStrictEqual(errors, ["cancelled"], "the error hook fired once")
      assert.isTrue(Option.isNone(yield* TreeStore.use((t) => t.get(root.tenantId, root.executionId, Cancel.requestKey))), "the request went with the tree")
      assert.isFalse(fx.applied.has(fx.runs[1]!.key), "the slow step never completed")
      assert.strictEqual(errorTag(yield* Effect.flatMap(h.run(1, (b) => b.cancel(root.threadId, { ownerId: "bob" })), Fiber.await)), "ThreadOwnerError")
      assert.strictEqual(errorTag(yield* Effect.flatMap(h.run(1, (b) => b.cancel(root.threadId, { tenantId: "other" })), Fiber.await)), "UnknownThreadError")
    }).pipe(
      Effect.provideService(Observer, makeObserver({ onError: (e) => Effect.sync(() => errors.push(e.error)) })),
      Effect.provide(Layer.fresh(backend.stores))
    )
  })

  it.effect("a durable cancel request ends the tree at the next lease take, without a step", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      // The holder freezes, so it never reads the request; the cancel lands on instance 1.
      yield* h.freeze(0)
      const answer = yield* Fiber.join(yield* h.run(1, (b) => b.cancel(root.threadId)))
      assert.deepStrictEqual(answer, { cancelled: true })
      const before = fx.runs.length
      yield* h.advance("31 seconds")
      assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Cancelled")
      assert.strictEqual(fx.runs.length, before, "no step ran at the takeover")
      yield* h.kill(0)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a paused execution is dropped and its pauses withdrawn; a finished one is not cancelled", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
      assert.strictEqual(out._tag, "Paused")
      if (out._tag !== "Paused") return
      assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(out.threadId))), { cancelled: true })
      assert.strictEqual((yield* recordOf(out.tenantId, out.executionId))?.status, "Cancelled")
      const pause = Option.getOrUndefined(yield* PauseStore.use((p) => p.get(out.tenantId, out.pauses[0]!.pauseId)))
      assert.strictEqual(pause?.status, "Cancelled")
      assert.strictEqual(
        errorTag(yield* Effect.flatMap(h.run(0, (b) => b.resume({ pauseId: out.pauses[0]!.pauseId, decision: "yes" })), Fiber.await)),
        "NotPausedError"
      )
      assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(out.threadId))), { cancelled: false }, "nothing left to cancel")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a cancel on the holding instance aborts at once", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      assert.deepStrictEqual(yield* Fiber.join(yield* h.run(0, (b) => b.cancel(root.threadId))), { cancelled: true })
      yield* h.settle
      assert.strictEqual(errorTag(yield* Fiber.await(running)), "ExecutionCancelledError")
      assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Cancelled")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a cancel answered cancelled: true on a non-holder, whose tree ends before the next renewal, ends it Cancelled, not Finished", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.advance("41 seconds")
      const root = yield* theRunningRoot
      // Renewals at 40 s and 50 s: the slow step ends at 45 s, between them.
      assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(root.threadId))), { cancelled: true })
      yield* h.advance("5 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(running)), "ExecutionCancelledError")
      assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Cancelled")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}
