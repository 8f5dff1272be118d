import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Harness from "../../src/testing/Harness.ts"
import { makeSideEffects, backends, slow } from "./fixtures.ts"

for (const backend of backends) {
describe(`health on ${backend.name}`, () => {
  it.effect("liveness turns Unhealthy when the sweep is stuck for three intervals", () =>
    Effect.gen(function*() {
      const wf = slow(makeSideEffects())
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      yield* h.settle
      assert.strictEqual((yield* h.instance(0).baton.checkLiveness).status, "Healthy")
      yield* h.hang(0)
      yield* h.advance("90 seconds")
      assert.strictEqual((yield* h.instance(0).baton.checkLiveness).status, "Healthy", "exactly three intervals is not yet stuck")
      yield* h.advance("1 second")
      const report = yield* h.instance(0).baton.checkLiveness
      assert.strictEqual(report.status, "Unhealthy")
      assert.match(report.components.find((c) => c.name === "recovery-sweep")!.message, /^stuck/)
      yield* h.reconnect(0)
      yield* h.advance("1 second")
      assert.strictEqual((yield* h.instance(0).baton.checkLiveness).status, "Healthy", "live again once the store answers")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("readiness is Unhealthy when a store's ping hangs past 2 s", () =>
    Effect.gen(function*() {
      const wf = slow(makeSideEffects())
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const ready = yield* Fiber.join(yield* h.run(0, (b) => b.checkReadiness))
      assert.strictEqual(ready.status, "Healthy")
      assert.includeMembers(ready.components.map((c) => c.name), ["lease-store", "record-store", "pause-store", "tree-store", "checkpoint-store"])
      yield* h.hang(0)
      const probe = yield* h.run(0, (b) => b.checkReadiness)
      yield* h.advance("1999 millis")
      assert.isUndefined(probe.pollUnsafe(), "still waiting for the pings")
      yield* h.advance("1 millis")
      const report = yield* Fiber.join(probe)
      assert.strictEqual(report.status, "Unhealthy")
      const lease = report.components.find((c) => c.name === "lease-store")!
      assert.strictEqual(lease.status, "Unhealthy")
      assert.match(lease.message, /within 2000 ms/)
      yield* h.reconnect(0)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}