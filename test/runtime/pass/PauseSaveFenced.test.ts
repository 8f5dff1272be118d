/**
 * A holder frozen while it saves its tree's pause (resting Paused), thawed
 * after another instance took the tree over and saved the pause itself: the
 * stale holder's pause row must not stay as a second Pending pause of the
 * same interrupt — else `pendingPauses` lists two, and the one left over
 * after the other was answered answers success while its decision is dropped.
 * The save is fenced in the store (`PauseStore.saveFenced`): the stale
 * holder's pause is never written at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import type { Pause } from "../../../src/stores/Pause.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, errorTag, freezeOnce, isPauseSave, makeSideEffects, statusOf } from "../fixtures.ts"


for (const backend of backends) {
  describe(`a stale holder's pause on ${backend.name}`, () => {
    it.effect("frozen at its pause save, thawed after a takeover: one pending pause; once it is answered none is left, and a second answer is NotPausedError", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const stop = freezeOnce(0, isPauseSave)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: stop.beforeStoreCall })
        stop.attach(h)
        const first = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))
        // Instance 1's sweep takes the tree over past the lease (30 s) and rests it Paused with its own pause.
        yield* h.advance("40 seconds")
        yield* h.thaw(0)
        yield* h.advance("30 seconds")
        assert.strictEqual(errorTag(yield* Fiber.await(first)), "LeaseLostError", "the stale holder learns it lost the tree")
        const pending = yield* Fiber.join(yield* h.run(1, (b) => b.pendingPauses({ threadId: "t" })))
        assert.strictEqual(pending.length, 1, `one pending pause for the one interrupt: ${pending.map((p) => p.pauseId)}`)
        const out = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: pending[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(out._tag, "Finished")
        const left = yield* PauseStore.use((p) => p.listByRoot(out.tenantId, out.executionId, ["Pending", "Resolved"]))
        assert.deepStrictEqual(left.map((p) => p.pauseId), [], "no pause left to answer once the tree finished")
        assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
        const again = yield* Fiber.await(yield* h.run(1, (b) => b.resume({ pauseId: pending[0]!.pauseId, decision: "no" })))
        assert.strictEqual(errorTag(again), "NotPausedError", "a second answer is refused, not answered with the output")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("frozen right before its pause save, thawed after a takeover: the store refuses the save (LeaseLostError) and no pause of the stale pass is ever written", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const stop = freezeOnce(0, isPauseSave)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: stop.beforeStoreCall })
        stop.attach(h)
        const first = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))
        // Instance 0 stops with its pause save on its way; past the lease (30 s) instance 1's sweep takes the tree over.
        yield* h.advance("40 seconds")
        const stale = stop.call?.args[0] as Pause | undefined
        assert.isDefined(stale, "instance 0 reached its pause save")
        if (stale === undefined) return
        const all = ["Pending", "Resolved", "Taken", "Cancelled"] as const
        const taken = yield* PauseStore.use((p) => p.listByRoot(stale.tenantId, stale.rootExecutionId, all))
        assert.strictEqual(taken.length, 1, "the new holder rested the tree with its own pause")
        assert.notStrictEqual(taken[0]!.pauseId, stale.pauseId)
        assert.strictEqual(yield* statusOf(stale.tenantId, stale.rootExecutionId), "Paused")
        yield* h.thaw(0)
        yield* h.advance("30 seconds")
        const exit = yield* Fiber.await(first)
        assert.strictEqual(errorTag(exit), "LeaseLostError", "the stale holder stops with a lost lease")
        const stored = yield* PauseStore.use((p) => p.get(stale.tenantId, stale.pauseId))
        assert.isTrue(Option.isNone(stored), `the stale holder's pause was never written: ${JSON.stringify(Option.getOrUndefined(stored))}`)
        const after = yield* PauseStore.use((p) => p.listByRoot(stale.tenantId, stale.rootExecutionId, all))
        assert.deepStrictEqual(after, taken, "the new holder's pause, untouched")
        assert.strictEqual(yield* statusOf(stale.tenantId, stale.rootExecutionId), "Paused", "the tree rests Paused under the new holder")
        const out = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: taken[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(out._tag, "Finished")
        assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a Pending pause left on an ended tree (a stale twin whose holder died before dropping it) is NotPausedError, not answered with the tree's output", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(paused._tag, "Paused")
        const pause = yield* PauseStore.use((p) => p.get(paused.tenantId, paused._tag === "Paused" ? paused.pauses[0]!.pauseId : ""))
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: Option.getOrThrow(pause).pauseId, decision: "yes" })))
        assert.strictEqual(out._tag, "Finished")
        // What a stale holder killed between its save and its twin check leaves: a Pending twin of the answered pause.
        yield* PauseStore.use((p) => p.save({ ...Option.getOrThrow(pause), pauseId: "pause_stale_twin", status: "Pending", decision: null, resolvedAt: null, resolvedBy: null }))
        const late = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ pauseId: "pause_stale_twin", decision: "no" })))
        assert.strictEqual(errorTag(late), "NotPausedError", `a decision nobody will take is refused: ${String(late)}`)
        assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
