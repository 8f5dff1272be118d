/**
 * A tree that ended releases its lease without waking this process's
 * recovery sweeps (an ended tree leaves nothing to recover: a look per
 * finished execution read a page of Running records for nothing), while a
 * tree released still Running wakes them at once as before, and the ended
 * tree's own waiters are still woken.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { LeaseWakeups, type LeaseWakeupsShape, makeHub } from "../../../src/stores/LeaseWakeups.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, makeSideEffects, oneStep, slow, statusOf } from "../fixtures.ts"

/** The backend's stores, with a RecordStore that counts the sweep's page reads (`findByStatus`). */
const countingLooks = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, looks: { count: number }) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const records = Context.get(context, RecordStore)
    return Context.add(context, RecordStore, {
      ...records,
      findByStatus: (...args: Parameters<typeof records.findByStatus>) => {
        looks.count++
        return records.findByStatus(...args)
      }
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

/** A fresh hub (not the process-wide one other tests share) that records every release it is told. */
const observedHub = (told: Array<{ readonly root: string; readonly ended: boolean }>): LeaseWakeupsShape => {
  const hub = makeHub()
  return {
    released: (tenantId, root, options) => {
      told.push({ root, ended: options?.ended === true })
      hub.released(tenantId, root, options)
    },
    next: hub.next
  }
}

for (const backend of backends) {
  describe(`lease-release wake-ups on ${backend.name}`, () => {
    it.effect("finished trees wake no sweep: no look until the sweep's interval, and the release says the tree ended", () => {
      const looks = { count: 0 }
      const told: Array<{ readonly root: string; readonly ended: boolean }> = []
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [oneStep], sweepInterval: "10 seconds" } })
        yield* h.settle
        looks.count = 0
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(oneStep, { log: [] })))
          assert.strictEqual(out._tag, "Finished")
          ids.push(out.executionId)
        }
        yield* h.settle
        assert.strictEqual(looks.count, 0, "no sweep look woken by the releases of ended trees")
        assert.deepStrictEqual(told.filter((t) => ids.includes(t.root)), ids.map((root) => ({ root, ended: true })))
        // The sweep still looks on its interval.
        yield* h.advance("10 seconds")
        assert.isAtLeast(looks.count, 1)
      }).pipe(Effect.provide(Layer.merge(countingLooks(backend.stores, looks), Layer.succeed(LeaseWakeups, observedHub(told)))))
    })

    it.effect("a tree released while Running (its instance closing) still wakes the other instance's sweep at once", () => {
      const looks = { count: 0 }
      const told: Array<{ readonly root: string; readonly ended: boolean }> = []
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "10 minutes")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], sweepInterval: "10 minutes" } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        looks.count = 0
        yield* h.close(0)
        yield* h.settle
        assert.isAtLeast(looks.count, 1, "the release of a Running tree woke instance 1's sweep")
        assert.isTrue(told.length > 0 && told.every((t) => !t.ended), "released, not ended")
        const [root] = yield* RecordStore.use((r) => r.findByStatus("Running", 10, Option.none()))
        assert.isDefined(root)
        assert.strictEqual(yield* statusOf("default", root!.executionId), "Running")
      }).pipe(Effect.provide(Layer.merge(countingLooks(backend.stores, looks), Layer.succeed(LeaseWakeups, observedHub(told)))))
    })
  })
}

describe("the wake-ups hub", () => {
  it.effect("an \"any release\" waiter that skips ended trees is left waiting by one and woken by the next plain release; a tree's own waiter is woken by both", () =>
    Effect.gen(function*() {
      const hub = makeHub()
      let short = false
      const sweep = yield* Effect.forkChild(hub.next(undefined, undefined, { skipEnded: () => !short }), { startImmediately: true })
      const any = yield* Effect.forkChild(hub.next(undefined, undefined), { startImmediately: true })
      const tree = yield* Effect.forkChild(hub.next("t", "a"), { startImmediately: true })
      hub.released("t", "a", { ended: true })
      yield* Fiber.join(tree)
      yield* Fiber.join(any)
      assert.isUndefined(sweep.pollUnsafe(), "skipped the ended tree's release")
      // Short of slots: the next ended release wakes it.
      short = true
      hub.released("t", "b", { ended: true })
      yield* Fiber.join(sweep)
    }))

  it.effect("a waiter woken by a release that waits again at once waits for the next release", () =>
    Effect.gen(function*() {
      const hub = makeHub()
      let woken = 0
      const fibers: Array<Fiber.Fiber<void>> = []
      // Waits again as soon as it is woken (at most 100 times: a hub that wakes the new wait too would loop).
      const again = (): void => {
        fibers.push(Effect.runFork(Effect.andThen(hub.next(undefined, undefined), Effect.sync(() => {
          woken++
          if (woken < 100) again()
        }))))
      }
      again()
      yield* Effect.yieldNow
      hub.released("t", "a")
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      assert.strictEqual(woken, 1)
      hub.released("t", "b")
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      assert.strictEqual(woken, 2)
      yield* Fiber.interruptAll(fibers)
    }))
})
