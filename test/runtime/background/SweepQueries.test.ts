/**
 * The recovery sweep's look at paused trees is one store query a page
 * (`PauseStore.findResolvedRoots`), not one pause query per paused tree; and
 * its look at Running trees reads the leases of a page's roots in one query
 * (`LeaseStore.getMany`), not one lease read per tree.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import type { ExecutionOutput } from "../../../src/runtime/Baton.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, leaseOf, makeSideEffects, slow, statusOf } from "../fixtures.ts"

/** The backend's stores, with a PauseStore (or `tag`'s store) that counts its calls by method. */
const counting = <E>(
  stores: Layer.Layer<Harness.HarnessStores, E>,
  calls: Map<string, number>,
  tag: typeof PauseStore | typeof LeaseStore = PauseStore
) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const store = Context.get(context, tag as typeof PauseStore) as unknown as Record<string, unknown>
    const counted: Record<string, unknown> = {}
    for (const [name, f] of Object.entries(store)) {
      counted[name] = typeof f !== "function" ? f : (...args: Array<unknown>) => {
        calls.set(name, (calls.get(name) ?? 0) + 1)
        return (f as (...a: Array<unknown>) => unknown)(...args)
      }
    }
    return Context.add(context, tag as typeof PauseStore, counted as never)
  })).pipe(Layer.provide(Layer.fresh(stores)))

for (const backend of backends) {
  describe(`the sweep's look at paused trees on ${backend.name}`, () => {
    it.effect("12 paused trees, pages of 5: one findResolvedRoots query and no per-tree pause query; a stranded decision is still taken", () => {
      const calls = new Map<string, number>()
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], sweepPageSize: 5 } })
        const outs: Array<ExecutionOutput> = []
        for (let i = 0; i < 12; i++) outs.push(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }))))
        yield* h.settle
        calls.clear()
        yield* h.advance("30 seconds")
        assert.strictEqual(calls.get("listByRoot") ?? 0, 0, "no pause query per paused tree")
        assert.strictEqual(calls.get("findResolvedRoots"), 1, "one page query (no tree has a decision waiting)")
        // A decision recorded without its resume taking the lease: the next look takes it.
        const stranded = outs[7]! as Extract<ExecutionOutput, { _tag: "Paused" }>
        yield* PauseStore.use((p) => p.resolve({ tenantId: "default", pauseId: stranded.pauses[0]!.pauseId, decision: "yes", resolvedBy: "gone", now: 0 }))
        yield* h.advance("30 seconds")
        assert.strictEqual(yield* statusOf("default", stranded.executionId), "Finished")
        assert.strictEqual(fx.runs.filter((r) => r.node === "send").length, 1)
      }).pipe(Effect.provide(counting(backend.stores, calls)))
    })

    it.effect("12 Running trees held live, pages of 5: the look reads their leases one query a page, no lease read per tree; a free one is still recovered", () => {
      const calls = new Map<string, number>()
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "10 minutes")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], sweepPageSize: 5, sweepInterval: "10 seconds" } })
        for (let i = 0; i < 12; i++) yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        calls.clear()
        // Instance 1 looks once (its sweep interval) over the 12 trees instance 0 keeps renewing.
        yield* h.advance("10 seconds")
        assert.strictEqual(calls.get("get") ?? 0, 0, "no lease read per tree")
        assert.strictEqual(calls.get("getMany"), 3, "one lease query per page of 5 (3 pages) on instance 1 (instance 0 moves them: it reads none)")
        // Instance 0 dies: once its leases expire, instance 1's look recovers the trees.
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        const roots = yield* RecordStore.use((r) => r.findByStatus("Running", 20, Option.none()))
        assert.strictEqual(roots.length, 12)
        for (const r of roots) assert.isTrue((yield* leaseOf("default", r.rootExecutionId))?.holder.startsWith("instance-1#"), "recovered by instance 1")
      }).pipe(Effect.provide(counting(backend.stores, calls, LeaseStore)))
    })
  })
}
