/**
 * The start of a pass that continues a tree reads only what can have changed:
 * the cancel request is read once under the taken lease (not again at the
 * pass start), and a tree read Running under that lease is not written
 * Running again (no Running→Running fenced transaction); a paused tree still
 * moves Paused→Running. The tree's unwinding state and cancel request are
 * read in one TreeStore call (statements per recovery). Counted on the
 * stores a recovery and a resume call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import type { ExecutionOutput } from "../../../src/runtime/Baton.ts"
import { requestKey } from "../../../src/runtime/internal/undo/Cancel.ts"
import { unwindingKey } from "../../../src/runtime/internal/undo/Undo.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, slow, statusOf } from "../fixtures.ts"

interface Calls {
  cancelReads: number
  /** The TreeStore calls that read the unwinding state or the cancel request, each as the keys it read. */
  stopReads: Array<string>
  moves: Array<string>
}

const stopKeys = (keys: ReadonlyArray<string>) => keys.filter((k) => k === requestKey || k === unwindingKey)

/** The backend's stores, with the TreeStore counting cancel request reads and the RecordStore noting fenced moves. */
const counting = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, calls: Calls) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const tree = Context.get(context, TreeStore)
    const records = Context.get(context, RecordStore)
    return context.pipe(
      Context.add(TreeStore, {
        ...tree,
        get: (tenantId, root, key) => {
          if (key === requestKey) calls.cancelReads++
          if (stopKeys([key]).length > 0) calls.stopReads.push(key)
          return tree.get(tenantId, root, key)
        },
        getMany: (tenantId, root, keys) => {
          if (keys.includes(requestKey)) calls.cancelReads++
          if (stopKeys(keys).length > 0) calls.stopReads.push(stopKeys(keys).join("+"))
          return tree.getMany(tenantId, root, keys)
        }
      }),
      Context.add(RecordStore, {
        ...records,
        setStatusFenced: (input) => {
          calls.moves.push(`${input.from}→${input.to}`)
          return records.setStatusFenced(input)
        }
      })
    )
  })).pipe(Layer.provide(Layer.fresh(stores)))

for (const backend of backends) {
  describe(`a continuing pass's start on ${backend.name}`, () => {
    it.effect("a recovery reads the cancel request once after taking the lease and writes no Running→Running", () => {
      const calls: Calls = { cancelReads: 0, stopReads: [], moves: [] }
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "10 minutes")
        // Renewals (each reads the cancel request) come 9 s after a lease is taken: none in the counted span.
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [wf], lease: "10 seconds", renewEvery: "9 seconds", sweepInterval: "5 seconds" }
        })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["first", "slow"])
        yield* h.kill(0)
        calls.cancelReads = 0
        calls.stopReads = []
        calls.moves = []
        // The lease expires within 10 s; instance 1's sweep (every 5 s) recovers the tree by 15 s.
        yield* h.advance("16 seconds")
        const slowRuns = fx.runs.filter((r) => r.node === "slow")
        assert.strictEqual(slowRuns.length, 2, "the interrupted step ran again")
        assert.isTrue(slowRuns[1]!.instanceId.startsWith("instance-1"), "on instance 1")
        // The sweep's read while the lease was free, and the pass's once it holds the lease: no third at the start.
        assert.strictEqual(calls.cancelReads, 2)
        assert.deepStrictEqual(calls.stopReads, [requestKey, `${unwindingKey}+${requestKey}`], "the pass reads both in one call")
        assert.deepStrictEqual(calls.moves, [], "no status write: the tree stays Running under the new lease")
      }).pipe(Effect.provide(counting(backend.stores, calls)))
    })

    it.effect("a resume of a paused tree still moves it Paused→Running under the lease, and it finishes", () => {
      const calls: Calls = { cancelReads: 0, stopReads: [], moves: [] }
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const out = (yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))) as Extract<ExecutionOutput, { _tag: "Paused" }>
        assert.strictEqual(out._tag, "Paused")
        calls.moves = []
        const resumed = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: out.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(resumed._tag, "Finished")
        assert.deepStrictEqual(calls.moves, ["Paused→Running", "Running→Finished"])
        assert.strictEqual(yield* statusOf("default", out.executionId), "Finished")
      }).pipe(Effect.provide(counting(backend.stores, calls)))
    })
  })
}
