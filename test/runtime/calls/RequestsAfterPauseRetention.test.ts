/**
 * Keyed calls after pause retention deleted the pause while the request key
 * is still kept (`requestRetention` longer than `pauseRetention`), on the
 * harness (memory and SQLite, TestClock):
 *
 * - a keyed `resume` repeated after the pause went answers like any repeat
 *   of the key — the output the first call kept, or the tree awaited when
 *   none was kept — another pause or decision under the key is
 *   `RequestConflictError`, and only once the key expired too is the
 *   missing pause `UnknownPauseError`;
 * - a keyed resume whose first call claimed its key and died before writing
 *   its decision, while another caller answered the pause with another
 *   decision (or the tree was cancelled), is never told that its decision
 *   was applied: the retry is `NotPausedError`, whether the pause is still
 *   kept or retention deleted it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { RequestStore } from "../../../src/stores/RequestStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, approveThenWork, backends, errorTag, makeSideEffects } from "../fixtures.ts"

/** Settled pauses go after 1 min (retention runs every 30 s sweep); request keys after 10 min. */
const retention = { pauseRetention: "1 minute", requestRetention: "10 minutes" } as const

const pauseOf = (pauseId: string) => PauseStore.use((p) => p.get("default", pauseId))

for (const backend of backends) {
  describe(`a keyed resume after pause retention on ${backend.name}`, () => {
    it.effect("answers the first call's output while the key is kept; another decision or pause under the key is RequestConflictError; after the key expired, UnknownPauseError", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], ...retention } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { ownerId: "alice", requestKey: "start-1" })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        const input = { pauseId: paused.pauses[0]!.pauseId, decision: "yes", requestKey: "approve-1", ownerId: "alice" }
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.resume(input)))
        assert.strictEqual(first._tag, "Finished")
        yield* h.advance("2 minutes")
        assert.isTrue(Option.isNone(yield* pauseOf(input.pauseId)), "pause retention deleted the pause")
        const unkeyed = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: input.pauseId, decision: "yes", ownerId: "alice" }))))
        assert.strictEqual(errorTag(unkeyed), "UnknownPauseError", "without the key the pause is unknown")

        const repeated = yield* Fiber.join(yield* h.run(1, (b) => b.resume(input)))
        assert.deepStrictEqual(repeated, first, "the first call's output")
        const otherDecision = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ ...input, decision: "no" }))))
        assert.strictEqual(errorTag(otherDecision), "RequestConflictError")
        const otherPause = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.resume({ ...input, pauseId: "pause_other" }))))
        assert.strictEqual(errorTag(otherPause), "RequestConflictError")
        const startKey = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.resume({ ...input, requestKey: "start-1" }))))
        assert.strictEqual(errorTag(startKey), "RequestConflictError", "a key kept for a start is another request")
        const intruder = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ ...input, ownerId: "mallory" }))))
        assert.strictEqual(errorTag(intruder), "ThreadOwnerError", "the key does not hand another owner's output over")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve", "approve", "send"], "continued once")
        assert.deepStrictEqual([...fx.applied.values()], [1])

        yield* h.advance("9 minutes")
        assert.isTrue(Option.isNone(yield* RequestStore.use((s) => s.get("default", input.requestKey, 0))), "request retention deleted the key")
        const expired = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume(input))))
        assert.strictEqual(errorTag(expired), "UnknownPauseError", "neither pause nor key kept")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("the first caller died mid-continuation and the pause was deleted since: the repeat cannot tell its decision was the one taken — NotPausedError, the tree goes on", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approveThenWork(fx, "5 minutes", "approve-then-long-work")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], ...retention } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        const input = { pauseId: paused.pauses[0]!.pauseId, decision: "go", requestKey: "go-1" }
        yield* h.run(0, (b) => b.resume(input))
        yield* h.settle
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["work@instance-0"])
        yield* h.kill(0)
        yield* h.advance("2 minutes")
        assert.isTrue(Option.isNone(yield* pauseOf(input.pauseId)), "pause retention deleted the pause")
        assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["work@instance-0", "work@instance-1"], "recovered, still working")

        // No answer was kept and the pause is gone: whether "go" is the decision it took (another caller could have
        // answered it after the first caller died before writing) cannot be told — refused, nothing written.
        const repeat = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume(input))))
        assert.strictEqual(errorTag(repeat), "NotPausedError")
        const conflict = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ ...input, decision: "stop" }))))
        assert.strictEqual(errorTag(conflict), "RequestConflictError")
        yield* h.advance("5 minutes")
        const status = yield* Fiber.join(yield* h.run(1, (b) => b.status(paused.executionId)))
        assert.strictEqual(status.status, "Finished", "the tree went on under its recovery")
        assert.deepStrictEqual([...fx.applied.values()], [1], "the work applied once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}


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
