/**
 * Tenant quota permits on the multi-instance harness (TestClock, memory
 * stores): the cap holds fleet-wide, over-quota trees wait in arrival order
 * (or fail at once), and under seeded kills and freezes of instances the
 * permits held never exceed the cap and never leak — once every holder is
 * gone and the leases ran out, none is held.
 *
 * A "tree" here is an Effect standing for a root's pass, run in a fiber of
 * its instance with the instance's (gated) stores.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer, Option, Random } from "effect"
import * as TenantQuota from "../../../src/runtime/limits/TenantQuota.ts"
import { RateLimitStore } from "../../../src/stores/RateLimitStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag, memoryStores } from "../fixtures.ts"

const lease = 30_000
const harness = (n: number) => Harness.make({ instances: n, baton: { workflows: [] } })

/** Runs `effect` on instance `i` with its services, in a fiber of that instance. */
const on = <A, E>(h: Harness.Harness, i: number, effect: Effect.Effect<A, E, any>) =>
  h.run(i, () => Effect.provide(effect, h.instance(i).instance.services) as Effect.Effect<A, E>)

/**
 * Permits of `tenant` held now, read from the store itself (not through any
 * instance): takes every free permit for 1 ms under a probe holder, counts
 * them, and gives them back.
 */
const held = (tenant: string, cap: number) =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const now = yield* Clock.currentTimeMillis
    const probes = []
    for (let k = 0; k < cap; k++) {
      const got = yield* store.acquireSlot(TenantQuota.permitKey(tenant), cap, "probe", 1, now)
      if (Option.isSome(got)) probes.push(got.value)
    }
    for (const p of probes) yield* store.releaseSlot(p)
    return cap - probes.length
  })

/** A tree of `tenant` on instance `i` that runs `seconds` on the Clock once it holds a permit. */
const tree = (h: Harness.Harness, i: number, tenant: string, cap: number, seconds: number, log: Array<string>, name: string, onFull?: "wait" | "fail") =>
  on(h, i, TenantQuota.withPermit(tenant, { cap, holder: h.instance(i).instanceId, lease, onFull })(
    Effect.gen(function*() {
      log.push(`${name}@${(yield* Clock.currentTimeMillis) / 1000}`)
      yield* Effect.sleep(Duration.seconds(seconds))
    })
  ))

describe("tenant quota permits, three instances on memory", () => {
  it.effect("cap 2: trees from three instances run two at a time; waiters of one instance start in arrival order", () =>
    Effect.gen(function*() {
      const h = yield* harness(3)
      const log: Array<string> = []
      const fibers = [yield* tree(h, 0, "acme", 2, 10, log, "a"), yield* tree(h, 1, "acme", 2, 20, log, "b")]
      yield* h.settle
      for (const name of ["c", "d", "e"]) {
        fibers.push(yield* tree(h, 2, "acme", 2, 10, log, name))
        yield* h.advance("1 second")
      }
      assert.strictEqual(yield* held("acme", 2), 2)
      yield* h.advance("60 seconds")
      for (const f of fibers) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
      assert.deepStrictEqual([...log].sort(), ["a@0", "b@0", "c@10", "d@20", "e@20"], "two at a time: c when a ended, d and e when b and c ended")
      assert.strictEqual(yield* held("acme", 2), 0, "every permit released at rest")
      const other = yield* tree(h, 0, "globex", 1, 0, log, "g")
      assert.strictEqual(errorTag(yield* Fiber.await(other)), "Success", "another tenant has its own quota")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))), 60_000)

  it.effect("cap 1: the waiters of one instance get the permit in the order they came", () =>
    Effect.gen(function*() {
      const h = yield* harness(2)
      const log: Array<string> = []
      const fibers = [yield* tree(h, 0, "acme", 1, 10, log, "a")]
      yield* h.settle
      for (const name of ["c", "d", "e", "f"]) {
        fibers.push(yield* tree(h, 1, "acme", 1, 10, log, name))
        yield* h.advance("1 second")
      }
      yield* h.advance("60 seconds")
      for (const f of fibers) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
      assert.deepStrictEqual(log, ["a@0", "c@10", "d@20", "e@30", "f@40"])
    }).pipe(Effect.provide(Layer.fresh(memoryStores))), 60_000)

  it.effect("onFull: \"fail\" refuses at once with TenantQuotaExceededError; nothing runs", () =>
    Effect.gen(function*() {
      const h = yield* harness(2)
      const log: Array<string> = []
      yield* tree(h, 0, "acme", 1, 100, log, "a")
      yield* h.settle
      const refused = yield* tree(h, 1, "acme", 1, 1, log, "b", "fail")
      const exit = yield* Fiber.await(refused)
      assert.strictEqual(errorTag(exit), "TenantQuotaExceededError")
      assert.deepStrictEqual(log, ["a@0"])
    }).pipe(Effect.provide(Layer.fresh(memoryStores))), 60_000)

  it.effect("seeded kills and freezes: permits held never exceed the cap, and none is held once every holder is gone", () =>
    Effect.gen(function*() {
      let saturated = 0
      let reclaimed = 0
      const seeds = Number(process.env.QUOTA_SEEDS ?? 40)
      for (let seed = Number(process.env.QUOTA_FROM ?? 1); seed <= Number(process.env.QUOTA_SEEDS ?? 40); seed++) {
        yield* Effect.scoped(Effect.gen(function*() {
          const rnd = yield* Random.Random
          const next = () => rnd.nextDoubleUnsafe()
          const cap = 1 + Math.floor(next() * 3)
          const tenant = `t${seed}`
          const h = yield* harness(3)
          const log: Array<string> = []
          const started: Array<{ readonly instance: number; readonly fiber: Fiber.Fiber<void, unknown> }> = []
          const killed = new Set<number>()
          let full = false
          for (let step = 0; step < 30; step++) {
            const i = Math.floor(next() * 3)
            const roll = next()
            if (roll < 0.4 && h.instance(i).state === "alive") {
              started.push({ instance: i, fiber: yield* tree(h, i, tenant, cap, 5 + Math.floor(next() * 40), log, `${i}.${step}`) })
            } else if (roll < 0.5 && h.instance(i).state === "alive") {
              yield* h.kill(i)
              killed.add(i)
            } else if (roll < 0.6 && h.instance(i).state === "alive") {
              yield* h.freeze(i)
            } else if (roll < 0.75 && h.instance(i).state === "frozen") {
              yield* h.thaw(i)
            }
            yield* h.advance(Duration.seconds(1 + Math.floor(next() * 10)))
            const now = yield* held(tenant, cap)
            assert.isAtMost(now, cap, `seed ${seed} step ${step}: ${now} permits held, cap ${cap}`)
            full ||= now === cap
          }
          for (const i of [0, 1, 2]) if (h.instance(i).state === "frozen") yield* h.thaw(i)
          // the instances still alive finish every tree they started: nothing dropped
          for (let k = 0; k < 60 && started.some((s) => !killed.has(s.instance) && s.fiber.pollUnsafe() === undefined); k++) {
            yield* h.advance("10 seconds")
          }
          for (const s of started) {
            if (killed.has(s.instance)) continue
            const exit = s.fiber.pollUnsafe()
            assert.isDefined(exit, `seed ${seed}: a tree of live instance ${s.instance} never finished`)
            assert.strictEqual(errorTag(exit!), "Success", `seed ${seed}: a tree of live instance ${s.instance} failed`)
          }
          if (full) saturated++
          // holders that die while holding: every live instance starts a long tree, then all die
          for (const i of [0, 1, 2]) if (h.instance(i).state === "alive") yield* tree(h, i, tenant, cap, 1_000, log, `${i}.last`)
          yield* h.advance("1 second")
          const before = yield* held(tenant, cap)
          for (const i of [0, 1, 2]) if (h.instance(i).state !== "dead") yield* h.kill(i)
          yield* h.advance(Duration.millis(lease + 1))
          assert.strictEqual(yield* held(tenant, cap), 0, `seed ${seed}: permits leaked`)
          if (before > 0) reclaimed++
        }).pipe(Random.withSeed(seed), Effect.provide(Layer.fresh(memoryStores))))
      }
      // the seeds are not vacuous: most fill the quota, and some leave permits behind dead holders to reclaim
      assert.isAtLeast(saturated, seeds / 2, `${saturated} of ${seeds} seeds filled the quota`)
      assert.isAtLeast(reclaimed, 1, `${reclaimed} seeds had permits held when every instance died`)
    }), 120_000)
})
