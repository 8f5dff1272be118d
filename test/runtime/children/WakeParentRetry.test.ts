/**
 * A child's end wakes its parent (placement "any"): the child's queue row is
 * Answered first, then the parent's wait is looked up and answered. When the
 * stores fail that lookup transiently (a lost connection, a failover), the
 * parent still continues and finishes (the wake is tried again on the Clock).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { StoreError } from "../../../src/stores/Errors.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { memoryStores } from "../fixtures.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./childFixtures.ts"

/** The memory stores, with `listByRoot` failing as a lost connection while `failing.n > 0`. */
const failing = { n: 0, failed: 0 }
const flakyPauses = Layer.effect(PauseStore)(Effect.gen(function*() {
  const inner = yield* PauseStore
  return {
    ...inner,
    listByRoot: (...args: Parameters<typeof inner.listByRoot>) =>
      failing.n > 0
        ? Effect.suspend(() => {
          failing.n--
          failing.failed++
          return Effect.fail(new StoreError({ store: "PauseStore", operation: "listByRoot", kind: "Connection", reason: "the connection was lost" }))
        })
        : inner.listByRoot(...args)
  }
}))
const stores = Layer.provideMerge(flakyPauses, memoryStores)

describe("waking a parent after its children", () => {
  it.effect("a transient store failure at the wake is retried: the parent continues and finishes", () =>
    Effect.gen(function*() {
      const log = makeChildLog()
      const child = childWorkflow(log)
      const parent = parentWorkflow(child, "any")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent, child] } })
      const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 2 })))
      // The parent rests Paused on its children (5 s of work each on the Clock); their end's wake meets a store
      // that fails three times.
      yield* h.advance("1 second")
      failing.n = 3
      for (let i = 0; i < 10; i++) yield* h.advance("1 second")
      assert.strictEqual(failing.failed, 3, "the wake met the failing store")
      const run = yield* h.run(1, (b) => b.await(handle))
      for (let i = 0; i < 40 && run.pollUnsafe() === undefined; i++) yield* h.advance("1 second")
      assert.isDefined(run.pollUnsafe(), "the parent ended: its wake was tried again")
      const out = yield* Fiber.join(run)
      assert.strictEqual(out._tag, "Finished")
      assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2])
    }).pipe(Effect.provide(Layer.fresh(stores))))
})
