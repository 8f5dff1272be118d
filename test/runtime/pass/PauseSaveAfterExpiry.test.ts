/**
 * From outside: a holder frozen right before its pause save until its lease
 * expired, with NO other instance to take the tree over (one instance). On
 * thaw its save must be refused (the lease is no longer live at its now) or
 * go through — either way the tree must make progress: it ends up Paused with
 * exactly one pending pause, which a resume (here or on an instance started
 * later) answers, and "send" runs once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer } from "effect"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, freezeOnce, isPauseSave, makeSideEffects, statusOf } from "../fixtures.ts"


for (const backend of backends) {
  describe(`a lone holder frozen at its pause save past its lease, on ${backend.name}`, () => {
    for (const frozenFor of ["29 seconds", "31 seconds", "5 minutes"] as const) {
      it.effect(`frozen ${frozenFor}: the tree rests Paused with one pending pause and a resume finishes it`, () =>
        Effect.gen(function*() {
          const fx = makeSideEffects()
          const wf = approval(fx)
          const stop = freezeOnce(0, isPauseSave)
          const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] }, beforeStoreCall: stop.beforeStoreCall })
          stop.attach(h)
          const first = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))
          yield* h.advance(frozenFor)
          assert.isDefined(stop.call, "froze at the pause save")
          yield* h.thaw(0)
          yield* h.advance("1 minute")
          yield* h.advance("1 minute")
          const exit = yield* Fiber.await(first)
          const pending = yield* Fiber.join(yield* h.run(0, (b) => b.pendingPauses({ threadId: "t" })))
          const record = pending[0]
          const what = `execute answered ${Exit.isSuccess(exit) ? exit.value._tag : String(exit)}; pending ${pending.length}`
          assert.strictEqual(pending.length, 1, what)
          const root = (yield* RecordStore.use((r) => r.listByThread("default", "t")))[0]!.rootExecutionId
          const all = yield* PauseStore.use((p) => p.listByRoot("default", root, ["Pending", "Resolved", "Taken", "Cancelled"]))
          assert.strictEqual(all.filter((p) => p.status === "Pending").length, 1, `${what}; all: ${JSON.stringify(all.map((p) => [p.pauseId, p.status]))}`)
          assert.strictEqual(yield* statusOf("default", root), "Paused", what)
          const out = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: record!.pauseId, decision: "yes" })))
          assert.strictEqual(out._tag, "Finished", what)
          assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    }
  })
}
