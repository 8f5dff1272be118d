/**
 * From outside: a keyed resume whose first call claimed its key and died
 * before writing its decision; another caller answered the pause with
 * ANOTHER decision (unkeyed), the tree finished, and pause retention
 * deleted the pause. The keyed caller's retry must not be told that its
 * decision was applied: while the pause is still kept the retry is
 * `NotPausedError` (the pause holds another decision); once retention deleted
 * the pause it must answer the same — not the tree's output, which came from
 * the other decision. The same when the tree was cancelled instead (its
 * pause withdrawn): not `ExecutionCancelledError` saying the decision was
 * recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects } from "./fixtures.ts"

const retention = { pauseRetention: "1 minute", requestRetention: "10 minutes" } as const

for (const backend of backends) {
  describe(`a keyed resume whose first call died before its decision, answered meanwhile by another caller, on ${backend.name}`, () => {
    for (const how of ["answered", "cancelled"] as const) for (const deleted of [false, true]) {
      it.effect(`${how} meanwhile: the retry with the same key and decision is NotPausedError (pause ${deleted ? "deleted by retention" : "still kept"})`, () =>
        Effect.gen(function*() {
          const fx = makeSideEffects()
          const wf = approval(fx)
          const ref: { h?: Harness.Harness; armed: boolean } = { armed: false }
          const h = yield* Harness.make({
            instances: 2,
            baton: { workflows: [wf], ...retention },
            // Instance 0 dies as its keyed resume is about to write the decision (the key is claimed already).
            beforeStoreCall: (call) =>
              Effect.suspend(() => {
                if (!ref.armed || call.index !== 0 || call.operation !== "baton/PauseStore.resolve") return Effect.void
                ref.armed = false
                return ref.h!.kill(0)
              })
          })
          ref.h = h
          const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" })))
          if (paused._tag !== "Paused") return assert.fail("expected a pause")
          const pauseId = paused.pauses[0]!.pauseId
          ref.armed = true
          const keyed = { pauseId, decision: "yes", requestKey: "approve-1" }
          yield* Fiber.await(yield* h.run(0, (b) => b.resume(keyed)))
          assert.strictEqual(h.instance(0).state, "dead", "the keyed caller died after claiming its key")
          if (how === "answered") {
            // Someone else answers the pause, differently.
            const other = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, decision: "no" })))
            assert.strictEqual(other._tag, "Finished")
          } else {
            const cancelled = yield* Fiber.join(yield* h.run(1, (b) => b.cancel("t")))
            assert.isTrue(cancelled.cancelled)
          }
          if (deleted) {
            yield* h.advance("2 minutes")
            assert.isTrue(Option.isNone(yield* PauseStore.use((p) => p.get("default", pauseId))), "pause retention deleted the pause")
          }
          const retry = yield* Fiber.await(yield* h.run(1, (b) => b.resume(keyed)))
          const shown = Exit.isSuccess(retry) ? JSON.stringify(retry.value) : String(retry)
          assert.strictEqual(errorTag(retry), "NotPausedError", `the retry of "yes" must not answer as if it had been applied: ${shown}`)
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    }
  })
}
