/**
 * A pass that is stopped while its own fenced checkpoint writes are still
 * under way (a real store answers later: a Postgres round trip, SQLite's
 * group commit one turn of the event loop later) keeps its lease until those
 * writes landed. Released earlier, its own release refuses them: the step
 * that finished under a held lease — side effect made — is lost and runs
 * again on the next holder (found by `npm run sim -- --seed 13 --store
 * sqlite` with SQLite's group commit).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { makeRows } from "../../../layers/memory/MemoryCheckpointStore.ts"
import * as MemoryStores from "../../../layers/memory/MemoryStores.ts"
import * as MemoryState from "../../../layers/memory/MemoryState.ts"
import type { CheckpointRows } from "../../../src/stores/CheckpointRows.ts"
import * as CheckpointStores from "../../../src/checkpoint/CheckpointStores.ts"
import { CheckpointStore } from "../../../src/stores/CheckpointStore.ts"
import * as Ids from "../../../src/stores/Ids.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { leaseOf, makeSideEffects, slow, sqliteStores, statusOf, theRunningRoot } from "../fixtures.ts"

/** One turn of the event loop: what a store that answers later costs a write. */
const later = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Memory rows whose writes land one turn of the event loop after they were asked (as a remote store's would). */
const deferredWrites = (rows: CheckpointRows): CheckpointRows => ({
  ...rows,
  putCheckpoint: async (row, blobs, fence) => {
    await later()
    return rows.putCheckpoint(row, blobs, fence)
  },
  putWrites: async (writes, fence) => {
    await later()
    return rows.putWrites(writes, fence)
  }
})

const memoryDeferred = Layer.merge(
  MemoryStores.layerOnState,
  Layer.effect(CheckpointStore, Effect.map(makeRows, (rows) => CheckpointStores.fromRows(deferredWrites(rows))))
).pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layerSequential)))

const backends = [
  { name: "memory with writes answered later", stores: memoryDeferred },
  { name: "sqlite (group commit)", stores: sqliteStores }
] as const

for (const backend of backends) {
  describe(`writes in flight when a pass stops, on ${backend.name}`, () => {
    it.effect("close interrupts a pass whose finished step is still writing: the lease waits for the write, the step is not run again", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        // the slow step wakes at 8 s, the very instant close(10 s) interrupts what is left (grace min(5 s, 20 %) = 2 s)
        const wf = slow(fx, "8 seconds")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        const closing = yield* h.run(0, (b) => b.close({ timeout: "10 seconds" }))
        yield* h.advance("8 seconds")
        yield* Fiber.join(closing)
        yield* Fiber.await(running)
        const slowRuns = fx.runs.filter((r) => r.node === "slow")
        assert.strictEqual(slowRuns.length, 1, "the slow step ran once, on instance 0")
        assert.strictEqual(fx.applied.get(slowRuns[0]!.key), 1, "and made its side effect under its lease")
        // another holder (instance 1, at once or by the sweep) continues the tree from the slow step's writes and finishes it
        yield* h.advance("45 seconds")
        assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
        assert.isUndefined(yield* leaseOf(root.tenantId, root.executionId))
        assert.deepStrictEqual(
          fx.runs.filter((r) => r.node === "slow").map((r) => r.instanceId),
          ["instance-0"],
          "the step that finished under instance 0's lease is not run again: its writes landed before the lease went"
        )
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["first", "slow", "last"])
        assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
