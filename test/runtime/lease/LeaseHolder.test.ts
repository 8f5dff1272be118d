import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag, leaseOf, makeSideEffects, slow, theRunningRoot } from "../fixtures.ts"

for (const backend of backends) {
describe(`lease holder on ${backend.name}`, () => {
  it.effect("renews every 10 s while a step runs 45 s, then releases", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const fiber = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      const expiries: Array<number | undefined> = [(yield* leaseOf(root.tenantId, root.executionId))?.expiresAt]
      for (let i = 0; i < 4; i++) {
        yield* h.advance("10 seconds")
        expiries.push((yield* leaseOf(root.tenantId, root.executionId))?.expiresAt)
      }
      // acquired at 0 (30 s), renewed at 10, 20, 30, 40 (each +30 s)
      assert.deepStrictEqual(expiries, [30_000, 40_000, 50_000, 60_000, 70_000])
      yield* h.advance("5 seconds")
      const out = yield* Fiber.join(fiber)
      assert.strictEqual(out._tag, "Finished")
      assert.isUndefined(yield* leaseOf(root.tenantId, root.executionId), "released at the end of the pass")
      assert.deepStrictEqual(fx.runs.map((r) => r.node), ["first", "slow", "last"])
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a holder frozen for 31 s loses the lease; the other instance continues from the last checkpoint", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const fiber = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      yield* h.freeze(0)
      yield* h.advance("31 seconds")
      const taken = yield* leaseOf(root.tenantId, root.executionId)
      assert.strictEqual(taken?.epoch, 2, "the other instance took the lease with epoch 2")
      assert.isTrue(taken?.holder.startsWith("instance-1#"))
      yield* h.thaw(0)
      yield* h.settle
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(errorTag(exit), "LeaseLostError")
      yield* h.advance("45 seconds")
      const records = yield* RecordStore
      const record = yield* records.getRecord(root.tenantId, root.executionId)
      assert.strictEqual(Option.getOrUndefined(record)?.status, "Finished")
      assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), [
        "first@instance-0",
        "slow@instance-0",
        "slow@instance-1",
        "last@instance-1"
      ])
      assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1], "each side effect once per idempotency key")
      assert.strictEqual(fx.runs[1]!.key, fx.runs[2]!.key, "the step run again has the same idempotency key")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("with its store unreachable, the holder stops at confirmedUntil exactly, though nobody took the lease", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const fiber = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      yield* h.disconnect(0)
      yield* h.advance("29999 millis")
      assert.isUndefined(fiber.pollUnsafe(), "still running 1 ms before confirmedUntil")
      yield* h.advance("1 millis")
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(errorTag(exit), "LeaseLostError")
      const lease = yield* leaseOf(root.tenantId, root.executionId)
      assert.strictEqual(lease?.epoch, 1, "nobody took the lease")
      assert.isFalse(fx.applied.has(fx.runs[1]!.key), "the interrupted step's side effect did not happen")
      yield* h.reconnect(0)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}