/**
 * The failover test a user writes with `baton/testing`'s public API only: two
 * instances over shared memory stores on the TestClock; the holder dies in the
 * middle of a 45 s step; once its lease expires the other instance recovers
 * the execution and finishes it — asserted through the `Baton` API. With
 * `h.baton(i)` (calls run on instance i and join for you) the test body is 9
 * lines. A second test checks the accessor: a bad index throws the typed
 * error, and it follows a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import { StoreErrors } from "../../src/index.ts"
import { Harness } from "../../src/testing/index.ts"
import { makeSideEffects, slow } from "../runtime/fixtures.ts"

const wf = slow(makeSideEffects(), "45 seconds")

describe("Harness.baton: an instance's API, joined", () => {
  it.effect("failover: the holder is killed mid-step, the other instance finishes the execution", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const handle = yield* h.baton(0).start(wf, { log: [] })
      yield* h.settle
      yield* h.kill(0)
      yield* h.advance("31 seconds")
      assert.strictEqual((yield* h.baton(1).status(handle.executionId)).holder?.instanceId, "instance-1")
      yield* h.advance("45 seconds")
      const done = yield* h.baton(1).await(handle)
      assert.deepStrictEqual([done._tag, done._tag === "Finished" && done.output], ["Finished", { log: ["first", "slow", "last"] }])
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("a bad index throws InvalidInputError; the accessor follows a restart; its Effect fields run on the instance", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      assert.throws(() => h.baton(3), StoreErrors.InvalidInputError)
      const b = h.baton(0)
      assert.strictEqual(b.instanceId, "instance-0")
      yield* h.kill(0)
      yield* h.restart(0)
      assert.strictEqual(b.instanceId, "instance-0.1")
      assert.strictEqual((yield* b.checkLiveness).status, "Healthy")
      const handle = yield* b.start(wf, { log: [] })
      yield* h.advance("45 seconds")
      assert.strictEqual((yield* b.await(handle))._tag, "Finished")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))
})
