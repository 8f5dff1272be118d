/**
 * A Baton whose Layer scope has closed refuses every call with
 * InstanceStoppingError and reports Unhealthy — it does not keep executing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as Baton from "../../../src/runtime/Baton.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { approval, backends, errorTag, makeSideEffects } from "../fixtures.ts"

for (const backend of backends) {
  describe(`a Baton whose scope closed, on ${backend.name}`, () => {
    it.effect("refuses execute, resume and cancel with InstanceStoppingError, runs nothing, and is not live", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        // The stores outlive the Baton: only the Baton's own scope closes.
        const stores = yield* Layer.build(Layer.fresh(backend.stores))
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(Baton.layer({ workflows: [wf] }), scope).pipe(Effect.provide(stores))
        const baton = Context.get(context, Baton.Baton)
        const before = yield* baton.execute(wf, { log: [] })
        assert.strictEqual(before._tag, "Paused")
        assert.strictEqual((yield* baton.checkLiveness).status, "Healthy")
        yield* Scope.close(scope, Exit.void)

        assert.strictEqual(errorTag(yield* Effect.exit(baton.execute(wf, { log: [] }))), "InstanceStoppingError")
        const pauseId = before._tag === "Paused" ? before.pauses[0]!.pauseId : ""
        assert.strictEqual(errorTag(yield* Effect.exit(baton.resume({ pauseId, decision: "yes" }))), "InstanceStoppingError")
        assert.strictEqual(errorTag(yield* Effect.exit(baton.cancel(before.threadId))), "InstanceStoppingError")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve"], "nothing ran after the close")
        const records = Context.get(stores, RecordStore)
        assert.strictEqual((yield* records.findByStatus("Paused", 10, Option.none())).length, 1, "no new execution was recorded")
        assert.strictEqual((yield* records.findByStatus("Running", 10, Option.none())).length, 0)
        const live = yield* baton.checkLiveness
        assert.strictEqual(live.status, "Unhealthy")
        assert.include(live.components.find((c) => c.name === "instance")?.message ?? "", "closed")
      }).pipe(Effect.scoped))
  })
}
