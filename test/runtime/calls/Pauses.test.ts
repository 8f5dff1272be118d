import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import type { ExecutionOutput } from "../../../src/runtime/Baton.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects, parallel, slowBranch } from "../fixtures.ts"

const paused = (out: ExecutionOutput) => {
  assert.strictEqual(out._tag, "Paused")
  return out._tag === "Paused" ? out : (undefined as never)
}

for (const backend of backends) {
describe(`pauses on ${backend.name}`, () => {
  it.effect("the same pause resumed twice at once: one succeeds, the other gets NotPausedError", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const first = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }))))
      const pauseId = first.pauses[0]!.pauseId
      const a = yield* h.run(0, (b) => b.resume({ pauseId, decision: "a" }))
      const b = yield* h.run(1, (b) => b.resume({ pauseId, decision: "b" }))
      yield* h.settle
      const exits = [yield* Fiber.await(a), yield* Fiber.await(b)]
      assert.deepStrictEqual(exits.map(errorTag).sort(), ["NotPausedError", "Success"])
      assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("two parallel-branch pauses answered at once on two instances: both taken, each step once, both calls answer the output", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = parallel(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const first = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }))))
      assert.strictEqual(first.pauses.length, 2)
      const byside = new Map(first.pauses.map((p) => [(p.payload as { side: string }).side, p.pauseId]))
      const a = yield* h.run(0, (b) => b.resume({ pauseId: byside.get("left")!, decision: "L" }))
      const b = yield* h.run(1, (b) => b.resume({ pauseId: byside.get("right")!, decision: "R" }))
      yield* h.advance("1 second")
      const outs = [yield* Fiber.join(a), yield* Fiber.join(b)]
      for (const out of outs) {
        assert.strictEqual(out._tag, "Finished")
        assert.sameMembers((out as { output: { log: Array<string> } }).output.log, ["fork", "left:L", "right:R", "join"])
      }
      assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1], "left, right and join each applied once")
      assert.strictEqual(fx.runs.filter((r) => r.node === "join").length, 1, "join ran once")
      const pauses = yield* PauseStore
      const taken = yield* pauses.listByRoot(first.tenantId, first.executionId, ["Taken"])
      assert.strictEqual(taken.length, 2, "both pauses taken")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a resume waiting on a held lease takes over when the holder freezes past expiry", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slowBranch(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const first = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }))))
      const byside = new Map(first.pauses.map((p) => [(p.payload as { side: string }).side, p.pauseId]))
      // Instance 0 holds the tree while `left` works 45 s; instance 1's resume waits for the lease.
      const holder = yield* h.run(0, (b) => b.resume({ pauseId: byside.get("left")!, decision: "L" }))
      yield* h.settle
      const waiter = yield* h.run(1, (b) => b.resume({ pauseId: byside.get("right")!, decision: "R" }))
      yield* h.advance("5 seconds")
      assert.isUndefined(waiter.pollUnsafe(), "the second resume waits while the lease is held")
      yield* h.freeze(0)
      yield* h.advance("26 seconds")
      yield* h.thaw(0)
      yield* h.settle
      assert.strictEqual(errorTag(yield* Fiber.await(holder)), "LeaseLostError")
      yield* h.advance("45 seconds")
      const out = yield* Fiber.join(waiter)
      assert.strictEqual(out._tag, "Finished")
      assert.sameMembers((out as { output: { log: Array<string> } }).output.log, ["fork", "left:L", "right:R", "join"])
      const leftRuns = fx.runs.filter((r) => r.node === "left").map((r) => r.instanceId)
      assert.deepStrictEqual(leftRuns, ["instance-0", "instance-1"], "left was interrupted on 0 and run again on 1")
      assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1], "each side effect once")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("tenant and owner checks", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const run = <A, E>(f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>) =>
        Effect.flatMap(h.run(0, f), Fiber.await)
      const first = paused(yield* Effect.flatMap(run((b) => b.execute(wf, { log: [] }, { tenantId: "acme", ownerId: "alice" })), (e) => e))
      const pauseId = first.pauses[0]!.pauseId
      assert.strictEqual(errorTag(yield* run((b) => b.resume({ pauseId, decision: "x", tenantId: "other", ownerId: "alice" }))), "UnknownPauseError")
      assert.strictEqual(errorTag(yield* run((b) => b.resume({ pauseId, decision: "x", tenantId: "acme", ownerId: "bob" }))), "ThreadOwnerError")
      assert.strictEqual(errorTag(yield* run((b) => b.resume({ pauseId: "pause_nope", decision: "x", tenantId: "acme" }))), "UnknownPauseError")
      assert.strictEqual(
        errorTag(yield* run((b) => b.execute(wf, { log: [] }, { tenantId: "acme", threadId: first.threadId, ownerId: "bob" }))),
        "ThreadOwnerError"
      )
      assert.strictEqual(
        errorTag(yield* run((b) => b.execute(wf, { log: [] }, { tenantId: "acme", threadId: first.threadId, ownerId: "alice" }))),
        "ThreadBusyError"
      )
      const done = yield* run((b) => b.resume({ pauseId, decision: "ok", tenantId: "acme", ownerId: "alice" }))
      assert.strictEqual(errorTag(done), "Success")
      assert.strictEqual(errorTag(yield* run((b) => b.resume({ pauseId, decision: "again", tenantId: "acme", ownerId: "alice" }))), "NotPausedError")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}