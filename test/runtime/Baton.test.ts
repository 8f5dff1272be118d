import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, makeSideEffects, backends } from "./fixtures.ts"

for (const backend of backends) {
describe(`Baton over memory on ${backend.name}`, () => {
  it.effect("a pause made on instance 0 is resumed on instance 1", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
      assert.strictEqual(first._tag, "Paused")
      if (first._tag !== "Paused") return
      assert.strictEqual(first.pauses.length, 1)
      const second = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: first.pauses[0]!.pauseId, decision: "yes" })))
      assert.strictEqual(second._tag, "Finished")
      assert.deepStrictEqual((second as { output: { log: Array<string> } }).output.log, ["draft", "approved:yes", "sent"])
      assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), [
        "draft@instance-0",
        "approve@instance-0",
        "approve@instance-1",
        "send@instance-1"
      ])
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}