/**
 * The harness's gate: `beforeStoreCall` sees an instance's store calls and
 * may freeze the instance at one; a thaw lets every waiting call go on, also
 * one that is frozen again at once as it goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { backends } from "./fixtures.ts"

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
})
