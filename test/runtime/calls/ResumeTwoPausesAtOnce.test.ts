/**
 * From outside: a tree resting on two pauses (left, right) answered at once
 * on two of three instances, one of them frozen at its n-th store call and
 * thawed after the lease (30 s). The two passes and the sweep race to save
 * and take pauses under the fenced save. What must hold: the tree finishes,
 * left, right and join each applied once, no Pending pause is left, and no
 * resume fails with an error other than a lost lease.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer } from "effect"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag, makeSideEffects, parallel, statusOf } from "../fixtures.ts"

const points = Array.from({ length: 10 }, (_, i) => i + 1)

for (const backend of backends) {
  for (const frozen of [0, 1] as const) {
    describe(`two pauses answered on instances 0 and 1 (of 3), instance ${frozen} frozen at its n-th store call, on ${backend.name}`, () => {
      for (const n of points) {
        it.effect(`n = ${n}`, () =>
          Effect.gen(function*() {
            const fx = makeSideEffects()
            const wf = parallel(fx)
            const ref: { h?: Harness.Harness; count: number; armed: boolean; froze?: string } = { count: 0, armed: false }
            const h = yield* Harness.make({
              instances: 3,
              baton: { workflows: [wf] },
              beforeStoreCall: (call) =>
                Effect.suspend(() => {
                  if (!ref.armed || call.index !== frozen || ++ref.count !== n) return Effect.void
                  ref.armed = false
                  ref.froze = call.operation
                  return ref.h!.freeze(frozen)
                })
            })
            ref.h = h
            const paused = yield* Fiber.join(yield* h.run(2, (b) => b.execute(wf, { log: [] }, { threadId: "t" })))
            if (paused._tag !== "Paused") return assert.fail("expected two pauses")
            assert.strictEqual(paused.pauses.length, 2)
            ref.armed = true
            const r0 = yield* h.run(0, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "a" }))
            const r1 = yield* h.run(1, (b) => b.resume({ pauseId: paused.pauses[1]!.pauseId, decision: "b" }))
            yield* h.advance("40 seconds")
            if (h.instance(frozen).state === "frozen") yield* h.thaw(frozen)
            yield* h.advance("40 seconds")
            yield* h.advance("40 seconds")
            const exits = [yield* Fiber.await(r0), yield* Fiber.await(r1)]
            const status = yield* statusOf(paused.tenantId, paused.executionId)
            const pending = yield* PauseStore.use((p) => p.listByRoot(paused.tenantId, paused.executionId, ["Pending", "Resolved"]))
            const what = `froze at ${ref.froze}; resumes ${exits.map((e) => Exit.isSuccess(e) ? e.value._tag : errorTag(e)).join(", ")}; status ${status}; applied ${JSON.stringify([...fx.applied.values()])}; left ${pending.map((p) => p.status)}`
            assert.strictEqual(status, "Finished", what)
            assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1], what)
            assert.strictEqual(pending.length, 0, what)
            for (const e of exits) if (Exit.isFailure(e)) assert.strictEqual(errorTag(e), "LeaseLostError", what)
          }).pipe(Effect.provide(Layer.fresh(backend.stores))), 20_000)
      }
    })
  }
}
