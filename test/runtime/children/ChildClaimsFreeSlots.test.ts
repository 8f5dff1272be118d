/**
 * An instance with a step cap claims at most its free step slots: with one of
 * its two slots held by another execution's long step, it holds at most one
 * claimed child at a time — a second claimed row would sit waiting for a slot
 * while another instance could have run it. Asserted on the queue's rows (the
 * children claimed by the instance and not yet completed), not on how many
 * children work at once (which the step slots bound anyway).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { ChildQueueStore } from "../../../src/stores/ChildQueueStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./childFixtures.ts"
import { backends, makeSideEffects, slow } from "../fixtures.ts"

for (const backend of backends) {
  describe(`claiming children within free step slots, on ${backend.name}`, () => {
    it.effect("with 1 of 2 step slots held by a long step, the instance holds at most 1 claimed child; 2 once the step ended", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const long = slow(fx, "45 seconds")
        const log = makeChildLog()
        const parent = parentWorkflow(childWorkflow(log, "5 seconds"), "any")
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [parent, long], maxConcurrentSteps: 2 } })
        const longRun = yield* h.run(0, (b) => b.execute(long, { log: [] }))
        yield* h.settle
        assert.strictEqual(fx.runs.at(-1)?.node, "slow", "the long step holds one slot")
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 12 }))
        yield* h.settle
        const rests = (yield* RecordStore.use((r) => r.findByStatus("Paused", 10, Option.none()))).find((r) => r.workflowName === parent.name)
        assert.isDefined(rests, "the parent rests on its children")
        const launchId = (yield* h.instance(0).baton.status(rests!.executionId)).waitingOnChildren[0]!.launchId
        const claimedHere = ChildQueueStore.use((q) => q.listLaunch(rests!.tenantId, launchId)).pipe(
          Effect.map((rows) => rows.filter((r) => r.status === "Running" && r.claimedBy === "instance-0").length)
        )
        const whileLong: Array<number> = []
        const after: Array<number> = []
        for (let i = 0; i < 120 && (run.pollUnsafe() === undefined || longRun.pollUnsafe() === undefined); i++) {
          const longAtWork = fx.runs.filter((r) => r.node === "last").length === 0
          ;(longAtWork ? whileLong : after).push(yield* claimedHere)
          yield* h.advance("1 second")
        }
        assert.strictEqual((yield* Fiber.join(run))._tag, "Finished")
        assert.strictEqual((yield* Fiber.join(longRun))._tag, "Finished")
        assert.isAbove(whileLong.length, 0, "children were claimed while the long step worked")
        assert.strictEqual(Math.max(...whileLong), 1, `claimed while one slot was free: ${whileLong.join(",")}`)
        assert.strictEqual(Math.max(...after), 2, `claimed with both slots free: ${after.join(",")}`)
        assert.deepStrictEqual(log.runs.map((r) => r.n).sort((a, b) => a - b), Array.from({ length: 12 }, (_, n) => n), "each child ran once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
