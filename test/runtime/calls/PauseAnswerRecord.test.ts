/**
 * Who answered a pause survives the resumer dying between its two writes: a
 * resume resolves the pause (`PauseStore.resolve`, which keeps `resolvedBy`)
 * and only then saves the answer record (`RecordStore.savePauseAnswer`). The
 * resumer is killed at that second write; another instance's sweep takes the
 * stranded decision, and writes the answer record from the pause as it feeds
 * it — once, however many passes feed or take it. Pause retention deleting
 * the settled pause later leaves the record.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, statusOf, stopOnce } from "../fixtures.ts"

for (const backend of backends) {
  describe(`a resumer killed between resolving a pause and saving its answer, on ${backend.name}`, () => {
    it.effect("the sweep that takes the decision writes the answer record from the pause, once; it outlives the pause", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const saves: Array<number> = []
        const atAnswer = stopOnce(1, (call) => call.operation.endsWith("RecordStore.savePauseAnswer"), { how: "kill" })
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [wf], pauseRetention: "1 hour" },
          beforeStoreCall: (call) =>
            Effect.andThen(
              Effect.sync(() => {
                if (call.operation.endsWith("RecordStore.savePauseAnswer")) saves.push(call.index)
              }),
              atAnswer.beforeStoreCall(call)
            )
        })
        atAnswer.attach(h)
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(first._tag, "Paused")
        const pauseId = first._tag === "Paused" ? first.pauses[0]!.pauseId : ""
        yield* Fiber.await(yield* h.run(1, (b) => b.resume({ pauseId, decision: "yes" })))
        assert.isTrue(atAnswer.stopped, "the resumer was killed at its savePauseAnswer")
        assert.strictEqual(h.instance(1).state, "dead")
        const pause = (yield* PauseStore.use((p) => p.get(first.tenantId, pauseId)))
        assert.strictEqual(pause._tag === "Some" ? pause.value.resolvedBy : null, "instance-1", "the pause keeps who resolved it")
        // Instance 0's sweep takes the stranded decision and finishes the tree.
        for (let i = 0; i < 20 && (yield* statusOf(first.tenantId, first.executionId)) !== "Finished"; i++) yield* h.advance("5 seconds")
        assert.strictEqual(yield* statusOf(first.tenantId, first.executionId), "Finished")
        assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
        const answers = yield* RecordStore.use((r) => r.listPauseAnswers(first.tenantId, first.executionId))
        assert.deepStrictEqual(
          answers.map((a) => [a.pauseId, a.answeredBy, a.answeredAt]),
          [[pauseId, "instance-1", pause._tag === "Some" ? pause.value.resolvedAt : -1]],
          "the answer record names the resumer, at the time it resolved the pause"
        )
        // Pause retention deletes the settled pause; the answer record stays.
        yield* h.advance("2 hours")
        assert.isTrue((yield* PauseStore.use((p) => p.get(first.tenantId, pauseId)))._tag === "None", "the pause was deleted by retention")
        const kept = yield* RecordStore.use((r) => r.listPauseAnswers(first.tenantId, first.executionId))
        assert.deepStrictEqual(kept.map((a) => a.answeredBy), ["instance-1"])
        assert.isAtMost(saves.filter((i) => i === 0).length, 1, "the sweep's pass wrote the answer once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
