/**
 * The harness's gate: `beforeStoreCall` sees an instance's store calls and
 * may freeze the instance at one; a thaw lets every waiting call go on, also
 * one that is frozen again at once as it goes on. The harness's teardown
 * does not wait on an instance left frozen or hanging (a failed assertion
 * while it is stopped fails the test at once, not at its timeout).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { backends, makeSideEffects, slow } from "../runtime/fixtures.ts"

/** Lets other fibers run for a bounded number of event-loop turns until `done` (no Clock involved). */
const turnsUntil = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !done(); i++) {
      // A real event-loop turn (not a wait on time): the thawed fiber's store calls answer in it.
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    }
  })

const backend = backends[0]

describe("harness gate", () => {
  it.effect("beforeStoreCall freezes an instance at a call; a call frozen again as a thaw lets it go is let go by the next thaw", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const harness: { h?: Harness.Harness } = {}
      const h = yield* Harness.make({
        instances: 2,
        baton: { workflows: [] },
        // Each `get` of the key "k" freezes its instance before it reaches the store.
        beforeStoreCall: (call) =>
          Effect.suspend(() => {
            if (call.operation !== "baton/TreeStore.get" || call.args[2] !== "k") return Effect.void
            seen.push(`${call.index}:${call.operation}`)
            return harness.h!.freeze(call.index)
          })
      })
      harness.h = h
      const reads = yield* h.runIn(0, Effect.gen(function*() {
        const tree = yield* TreeStore
        yield* tree.get("default", "root-1", "k")
        yield* tree.get("default", "root-1", "k")
        return "both read"
      }))
      yield* turnsUntil(() => seen.length === 1)
      assert.deepStrictEqual(seen, ["0:baton/TreeStore.get"])
      assert.strictEqual(h.instance(0).state, "frozen")
      assert.isUndefined(reads.pollUnsafe(), "the first read waits at the gate")
      // Thawed: the first read goes on, and the second one freezes the instance again at once.
      yield* h.thaw(0)
      yield* turnsUntil(() => seen.length === 2)
      assert.strictEqual(seen.length, 2)
      assert.strictEqual(h.instance(0).state, "frozen")
      yield* h.thaw(0)
      yield* turnsUntil(() => reads.pollUnsafe() !== undefined)
      assert.isDefined(reads.pollUnsafe(), "the second read was let go by the second thaw (not lost from the gate)")
      assert.strictEqual(yield* Fiber.join(reads), "both read", "the second read went on at the second thaw")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  for (const stop of ["frozen", "hanging"] as const) {
    it.effect(`the harness's teardown ends with an instance left ${stop}, its pass's lease release at the gate`, () =>
      Effect.gen(function*() {
        const wf = slow(makeSideEffects(), "45 seconds")
        // The harness in a scope of its own: the test closes it as its teardown would.
        const scope = yield* Scope.make()
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } }).pipe(Scope.provide(scope))
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        assert.strictEqual(h.instance(0).instance.passes.active.size, 1, "a pass holds the tree's lease")
        yield* stop === "frozen" ? h.freeze(0) : h.hang(0)
        // Detached: a close that waits at the gate does not hold this test's own scope open.
        const closing = yield* Effect.forkDetach(Scope.close(scope, Exit.void))
        yield* turnsUntil(() => closing.pollUnsafe() !== undefined)
        assert.isDefined(closing.pollUnsafe(), `the teardown did not wait for the ${stop} instance`)
        assert.strictEqual(h.instance(0).state, "dead", "the stopped process never came back")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  }
})
