/**
 * From outside: `cancel` on one instance racing `resume` of the same paused
 * tree on another, with one of the two frozen at its n-th store call (n
 * swept) and thawed after the lease (30 s) ran out. What must hold (README:
 * "a tree answered `cancelled: true` ends Cancelled, never Finished"; a
 * resume that answers Finished leaves the tree Finished; nothing stays
 * Paused or Running for ever):
 * - cancelled: true ⇒ the tree ends Cancelled ("send" may have run: a cancel
 *   read after the last step still wins, as documented);
 * - the resume answers Finished ⇒ the tree is Finished and "send" ran once;
 * - in the end the tree has ended and has no Pending pause.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer } from "effect"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, statusOf } from "../fixtures.ts"

const points = Array.from({ length: 14 }, (_, i) => i + 1)

for (const backend of backends) {
  for (const frozen of [0, 1] as const) {
    describe(`cancel (instance 1) racing resume (instance 0), instance ${frozen} frozen at its n-th store call, on ${backend.name}`, () => {
      for (const n of points) {
        it.effect(`n = ${n}`, () =>
          Effect.gen(function*() {
            const fx = makeSideEffects()
            const wf = approval(fx)
            const ref: { h?: Harness.Harness; count: number; armed: boolean; froze?: string } = { count: 0, armed: false }
            const h = yield* Harness.make({
              instances: 2,
              baton: { workflows: [wf] },
              beforeStoreCall: (call) =>
                Effect.suspend(() => {
                  if (!ref.armed || call.index !== frozen) return Effect.void
                  if (++ref.count !== n) return Effect.void
                  ref.armed = false
                  ref.froze = call.operation
                  return ref.h!.freeze(frozen)
                })
            })
            ref.h = h
            const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" })))
            if (paused._tag !== "Paused") return assert.fail("expected a pause")
            ref.armed = true
            const resume = yield* h.run(0, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" }))
            const cancel = yield* h.run(1, (b) => b.cancel("t"))
            yield* h.advance("40 seconds")
            if (h.instance(frozen).state === "frozen") yield* h.thaw(frozen)
            yield* h.advance("40 seconds")
            yield* h.advance("40 seconds")
            const resumed = yield* Fiber.await(resume)
            const cancelled = yield* Fiber.await(cancel)
            const status = yield* statusOf(paused.tenantId, paused.executionId)
            const pending = yield* PauseStore.use((p) => p.listByRoot(paused.tenantId, paused.executionId, ["Pending"]))
            const sent = [...fx.applied.values()].reduce((a, b) => a + b, 0)
            const what = `froze at ${ref.froze ?? "(none)"}; resume ${Exit.isSuccess(resumed) ? resumed.value._tag : String(resumed)}; cancel ${Exit.isSuccess(cancelled) ? JSON.stringify(cancelled.value) : String(cancelled)}; status ${status}; sent ${sent}; pending ${pending.length}`
            assert.include(["Finished", "Cancelled"], status, `the tree ended: ${what}`)
            assert.strictEqual(pending.length, 0, `no pending pause: ${what}`)
            if (Exit.isSuccess(cancelled) && cancelled.value.cancelled) {
              assert.strictEqual(status, "Cancelled", `cancelled: true ⇒ Cancelled: ${what}`)
            }
            if (Exit.isSuccess(resumed) && resumed.value._tag === "Finished") {
              assert.strictEqual(status, "Finished", `resume Finished ⇒ Finished: ${what}`)
              assert.strictEqual(sent, 1, `resume Finished ⇒ sent once: ${what}`)
            }
            if (status === "Finished") assert.strictEqual(sent, 1, `Finished ⇒ sent once: ${what}`)
            // A cancel may land after "send" ran and still win (README: it ends Cancelled, never Finished): at most once.
            assert.isAtMost(sent, 1, `send at most once: ${what}`)
          }).pipe(Effect.provide(Layer.fresh(backend.stores))))
      }
    })
  }
}
