/**
 * From outside: a keyed resume whose first caller died mid-continuation,
 * the pause deleted by retention since, repeated at once on two instances
 * while the tree is still running (recovered by the sweep): both repeats
 * are NotPausedError (no call of the key kept an answer, and without the
 * pause nothing tells whether their decision is the one taken), the tree
 * finishes and the work runs its side effect once; a
 * repeat by another tenant with the same key name finds no pause of its own
 * (UnknownPauseError); a repeat by another owner is ThreadOwnerError; a
 * repeat with another decision is RequestConflictError — while running too.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approveThenWork, backends, errorTag, makeSideEffects } from "../fixtures.ts"

const retention = { pauseRetention: "1 minute", requestRetention: "20 minutes" } as const

for (const backend of backends) {
  describe(`keyed resume repeats after the pause went, while the tree runs, on ${backend.name}`, () => {
    it.effect("two concurrent repeats on two instances answer the same output; other tenant / owner / decision are refused", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approveThenWork(fx, "5 minutes", "approve-then-long-work")
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf], ...retention } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { ownerId: "alice", tenantId: "acme" })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        const input = { pauseId: paused.pauses[0]!.pauseId, decision: "go", requestKey: "go-1", ownerId: "alice", tenantId: "acme" }
        yield* h.run(0, (b) => b.resume(input))
        yield* h.settle
        yield* h.kill(0)
        yield* h.advance("2 minutes")
        assert.isTrue(Option.isNone(yield* PauseStore.use((p) => p.get("acme", input.pauseId))), "pause retention deleted the pause")
        // While the recovered tree still works:
        const otherTenant = yield* Fiber.await(yield* h.run(1, (b) => b.resume({ ...input, tenantId: "globex" })))
        assert.strictEqual(errorTag(otherTenant), "UnknownPauseError", String(otherTenant))
        const otherOwner = yield* Fiber.await(yield* h.run(2, (b) => b.resume({ ...input, ownerId: "mallory" })))
        assert.strictEqual(errorTag(otherOwner), "ThreadOwnerError", String(otherOwner))
        const otherDecision = yield* Fiber.await(yield* h.run(2, (b) => b.resume({ ...input, decision: "stop" })))
        assert.strictEqual(errorTag(otherDecision), "RequestConflictError", String(otherDecision))
        // No call of the key kept an answer (its first caller died) and the pause is gone: the repeats cannot tell
        // their decision is the one taken, so each is NotPausedError — and the recovered tree goes on regardless.
        const a = yield* h.run(1, (b) => b.resume(input))
        const b2 = yield* h.run(2, (b) => b.resume(input))
        const [ea, eb] = [yield* Fiber.await(a), yield* Fiber.await(b2)]
        assert.strictEqual(errorTag(ea), "NotPausedError", String(ea))
        assert.strictEqual(errorTag(eb), "NotPausedError", String(eb))
        yield* h.advance("5 minutes")
        yield* h.advance("1 minute")
        const status = yield* Fiber.join(yield* h.run(1, (b) => b.status(paused.executionId, { tenantId: "acme", ownerId: "alice" })))
        assert.strictEqual(status.status, "Finished")
        assert.deepStrictEqual([...fx.applied.values()], [1], "the work applied once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 20_000)
  })
}
