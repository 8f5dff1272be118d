/**
 * From outside: two cancels of one paused thread on two instances (instance
 * 1's frozen at its n-th store call, thawed after the lease), then a new
 * execution started on the same thread while the frozen cancel is stopped.
 * What must hold:
 * - the old tree ends Cancelled; no cancel request is left in its tree;
 * - the new execution is cancelled only by a cancel that read the thread
 *   after the new execution started (else it rests Paused, answerable);
 * - `status` of the old tree says Cancelled.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import * as Cancel from "../../../src/runtime/internal/undo/Cancel.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, statusOf } from "../fixtures.ts"

const points = Array.from({ length: 8 }, (_, i) => i + 1)

for (const backend of backends) {
  describe(`two cancels of a paused thread, then a new execution on it, on ${backend.name}`, () => {
    for (const n of points) {
      it.effect(`instance 1's cancel frozen at its store call ${n}`, () =>
        Effect.gen(function*() {
          const fx = makeSideEffects()
          const wf = approval(fx)
          const ref: { h?: Harness.Harness; count: number; armed: boolean; newStarted: boolean; listedAfterStart: boolean; listedAfterFreeze?: boolean; froze?: string } =
            { count: 0, armed: false, newStarted: false, listedAfterStart: false }
          const h = yield* Harness.make({
            instances: 2,
            baton: { workflows: [wf] },
            beforeStoreCall: (call) =>
              Effect.suspend(() => {
                if (call.index !== 1 || !ref.armed) return Effect.void
                if (call.operation.endsWith("RecordStore.listByThread") && ref.newStarted) ref.listedAfterStart = true
                if (++ref.count !== n) return Effect.void
                ref.froze = call.operation
                // The hook runs before the call: a frozen listByThread reads the thread once thawed.
                if (call.operation.endsWith("RecordStore.listByThread")) ref.listedAfterFreeze = true
                return ref.h!.freeze(1)
              })
          })
          ref.h = h
          const old = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" })))
          if (old._tag !== "Paused") return assert.fail("expected a pause")
          ref.armed = true
          const c1 = yield* h.run(1, (b) => b.cancel("t"))
          yield* h.settle
          // Instance 0's cancel may wait for the lease instance 1's frozen cancel holds: let the clock run past it.
          const c0Fiber = yield* h.run(0, (b) => b.cancel("t"))
          yield* h.advance("40 seconds")
          const c0 = yield* Fiber.join(c0Fiber)
          const freshFiber = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))
          yield* h.settle
          const fresh = yield* Fiber.await(freshFiber)
          ref.newStarted = true
          if (ref.listedAfterFreeze === true) ref.listedAfterStart = true
          if (h.instance(1).state === "frozen") yield* h.thaw(1)
          yield* h.advance("40 seconds")
          yield* h.advance("40 seconds")
          const c1Exit = yield* Fiber.await(c1)
          ref.armed = false
          const oldStatus = yield* statusOf(old.tenantId, old.executionId)
          const what = `froze at ${ref.froze}; c1 ${Exit.isSuccess(c1Exit) ? JSON.stringify(c1Exit.value) : String(c1Exit)}; c0 ${JSON.stringify(c0)}; fresh ${Exit.isSuccess(fresh) ? fresh.value._tag : String(fresh)}; listed after start ${ref.listedAfterStart}`
          assert.strictEqual(oldStatus, "Cancelled", what)
          const left = yield* TreeStore.use((t) => t.get(old.tenantId, old.executionId, Cancel.requestKey))
          assert.isTrue(Option.isNone(left), `no cancel request left on the ended tree: ${what}`)
          const view = yield* Fiber.join(yield* h.run(0, (b) => b.status(old.executionId)))
          assert.strictEqual(view.status, "Cancelled", what)
          if (Exit.isFailure(fresh)) return assert.strictEqual(String(fresh).includes("ThreadBusyError"), false, `the new execution started: ${what}`)
          const freshStatus = yield* statusOf(fresh.value.tenantId, fresh.value.executionId)
          if (!ref.listedAfterStart) {
            assert.strictEqual(freshStatus, "Paused", `the new execution is left alone by a cancel that read the thread before it: ${what}`)
            const tail = yield* TreeStore.use((t) => t.get(fresh.value.tenantId, fresh.value.executionId, Cancel.requestKey))
            assert.isTrue(Option.isNone(tail), `no cancel request on the new tree: ${what}`)
          } else {
            assert.include(["Paused", "Cancelled"], freshStatus, what)
          }
        }).pipe(Effect.provide(Layer.fresh(backend.stores))), 20_000)
    }
  })
}
