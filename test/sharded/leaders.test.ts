/**
 * A leader per shard: over `ShardedStores` the runtime keeps one leader lease
 * in each shard (retention, the schedules' firing) and runs that leader's
 * work confined to its shard. With shard "b" down — and b the home shard,
 * where the one fleet leader used to be — retention still prunes shards a
 * and c and their tenants' quotas still work; among several instances (and
 * several campaigners of one lease) each shard has exactly one leader at a
 * time; a killed leader's shards are taken over on the Clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { PgStores } from "../../layers/pg/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import * as Leader from "../../src/runtime/Leader.ts"
import { permitKey } from "../../src/runtime/limits/TenantQuota.ts"
import { leaderName as scheduleLeader } from "../../src/runtime/internal/schedules/Firing.ts"
import * as Schedules from "../../src/runtime/Schedules.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { RateLimitStore, tenantKey, tenantOfKey } from "../../src/stores/RateLimitStore.ts"
import { StorePartitions } from "../../src/stores/StorePartitions.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, makeSideEffects, oneStep } from "../runtime/fixtures.ts"
import { report } from "../runtime/schedules/fixtures.ts"
import { pauseThenResume } from "./passes.ts"

/** Memory shards over states made here, so a test reads each shard's rows apart from the router. */
const memoryShards = (names: ReadonlyArray<string>) => {
  const states = Object.fromEntries(
    names.map((name) => [name, Effect.runSync(Effect.scoped(Layer.build(Layer.merge(MemoryState.layer, Ids.layer))))])
  )
  const layerOf = (name: string) => MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.succeedContext(states[name]!)))
  return { layerOf }
}

/** Shard `name`'s own stores (not through the router). */
const onShard = <I, S>(layer: Layer.Layer<any>, tag: Context.Key<I, S>) => Effect.map(Layer.build(layer), (c) => Context.get(c as Context.Context<I>, tag))

const retentionLease = Leader.leaseKey("baton/retention")

/** Nothing listens on port 1: every connection is refused at once, so the shard's bundle cannot be built. */
const downShard = PgStores.layer({ url: "postgres://postgres@127.0.0.1:1/down", maxConnections: 1, wakeups: false })

/**
 * Memory shards a and c with tenants acme and initech, and shard b down — b
 * the route's default, so the runtime's tenant `@baton` (the home shard).
 */
const homeDown = () => {
  const { layerOf } = memoryShards(["a", "c"])
  const tenants = { acme: "a", initech: "c" } as const
  const stores = ShardedStores.layer({
    shards: [{ name: "a", layer: layerOf("a") }, { name: "b", layer: downShard }, { name: "c", layer: layerOf("c") }],
    route: { tenants, default: "b" }
  })
  return { layerOf, stores, tenants }
}

describe("a leader per shard", () => {
  it.effect("with the home shard b down, retention prunes the settled pauses of shards a and c, and their tenants' quota permits work", () => {
    const { layerOf, stores, tenants } = homeDown()
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({
        instances: 2,
        baton: { workflows: [wf, oneStep], tenantQuota: 1, pauseRetention: "1 hour", sweepInterval: "1 minute" }
      })
      const settled: Array<{ tenantId: string; pauseId: string }> = []
      for (const tenantId of Object.keys(tenants)) {
        // Each pass under its tenant's quota permit, on the tenant's own shard.
        settled.push({ tenantId, pauseId: yield* pauseThenResume(h, wf, tenantId) })
        const one = yield* Fiber.join(yield* h.run(1, (b) => b.execute(oneStep, { log: [] }, { tenantId })))
        assert.strictEqual(one._tag, "Finished", `${tenantId}: another execution under the quota`)
      }
      for (const { pauseId, tenantId } of settled) {
        const pauses = yield* onShard(layerOf(tenants[tenantId as keyof typeof tenants]), PauseStore)
        assert.isTrue(Option.isSome(yield* pauses.get(tenantId, pauseId)), `${tenantId}'s settled pause is kept within its retention`)
      }
      // Past the pause retention and a sweep interval: each up shard's own leader prunes its shard.
      yield* h.advance("1 hour")
      yield* h.advance("2 minutes")
      for (const { pauseId, tenantId } of settled) {
        const shard = tenants[tenantId as keyof typeof tenants]
        const pauses = yield* onShard(layerOf(shard), PauseStore)
        assert.isTrue(Option.isNone(yield* pauses.get(tenantId, pauseId)), `shard ${shard}'s leader pruned ${tenantId}'s settled pause`)
        const lease = yield* (yield* onShard(layerOf(shard), LeaseStore)).get(Leader.leaderTenant, retentionLease)
        assert.isTrue(Option.isSome(lease), `shard ${shard} holds its own retention leader lease`)
      }
    }).pipe(Effect.provide(stores))
  })

  it.effect("with the home shard b down, the schedules of the tenants of shards a and c fire, each shard under its own schedules leader", () => {
    const { layerOf, stores, tenants } = homeDown()
    return Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* Schedules.make
      for (const tenantId of Object.keys(tenants)) yield* schedules.create("ten", report, { log: [] }, { tenantId, every: "10 minutes" })
      yield* h.advance("20 minutes")
      for (const [tenantId, shard] of Object.entries(tenants)) {
        const records = yield* onShard(layerOf(shard), RecordStore)
        const started = (yield* records.list({ tenantId, limit: 100 })).records
        assert.strictEqual(started.length, 2, `${tenantId}'s schedule fired its two ticks on shard ${shard}`)
        const lease = yield* (yield* onShard(layerOf(shard), LeaseStore)).get(Leader.leaderTenant, Leader.leaseKey(scheduleLeader))
        assert.isTrue(Option.isSome(lease), `shard ${shard} has its own schedules leader`)
      }
    }).pipe(Effect.provide(stores))
  })

  it.effect("a tenant's quota permits and a tree's cap are kept on the tenant's shard; a provider's key on the home shard", () => {
    const { layerOf } = memoryShards(["a", "b", "c"])
    const stores = ShardedStores.layer({
      shards: ["a", "b", "c"].map((name) => ({ name, layer: layerOf(name) })),
      route: { tenants: { acme: "a", initech: "c", "ini/tech:1": "c" }, default: "b" }
    })
    return Effect.gen(function*() {
      const routed = yield* RateLimitStore
      const now = 1_000
      for (const [tenantId, shard] of [["acme", "a"], ["initech", "c"]] as const) {
        const key = permitKey(tenantId)
        assert.isTrue(Option.isSome(yield* routed.acquireSlot(key, 1, "holder", 30_000, now)), `${tenantId} takes its permit`)
        for (const name of ["a", "b", "c"]) {
          const own = yield* onShard(layerOf(name), RateLimitStore)
          const free = yield* own.acquireSlot(key, 1, "probe", 30_000, now)
          assert.strictEqual(Option.isNone(free), name === shard, `${tenantId}'s permit is on shard ${shard} only (looked on ${name})`)
          if (Option.isSome(free)) yield* own.releaseSlot(free.value)
        }
      }
      // A tree's cap on its children is its tenant's too (a key made by `tenantKey`), whatever the ids hold.
      const treeKey = tenantKey("ini/tech:1", "tree/exec:1")
      assert.strictEqual(tenantOfKey(treeKey), "ini/tech:1")
      assert.isUndefined(tenantOfKey("@tenant/99/short/x"), "a length past the key names no tenant")
      assert.isTrue(Option.isSome(yield* routed.acquireSlot(treeKey, 1, "holder", 30_000, now)), "the tree takes its slot")
      for (const name of ["a", "b", "c"]) {
        const taken = Option.isNone(yield* (yield* onShard(layerOf(name), RateLimitStore)).acquireSlot(treeKey, 1, "probe", 30_000, now))
        assert.strictEqual(taken, name === "c", `the tree's slot is on its tenant's shard c only (looked on ${name})`)
      }
      // A provider's key names no tenant: the fleet's, on the home shard (b, the shard of `@baton`).
      yield* routed.pauseUntil("openai", 5_000)
      for (const name of ["a", "b", "c"]) {
        const paused = yield* (yield* onShard(layerOf(name), RateLimitStore)).pausedUntil("openai")
        assert.deepStrictEqual(paused, name === "b" ? Option.some(5_000) : Option.none(), `the provider's pause on shard ${name}`)
      }
    }).pipe(Effect.provide(stores))
  })

  it.effect("among three instances each shard has exactly one retention leader, and a killed leader's shards are taken over on the Clock", () => {
    const { layerOf } = memoryShards(["a", "b", "c"])
    const stores = ShardedStores.layer({ shards: ["a", "b", "c"].map((name) => ({ name, layer: layerOf(name) })), route: { default: "a" } })
    return Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [oneStep] } })
      yield* h.settle
      const holders = yield* Effect.forEach(["a", "b", "c"], (name) =>
        Effect.gen(function*() {
          const lease = yield* (yield* onShard(layerOf(name), LeaseStore)).get(Leader.leaderTenant, retentionLease)
          assert.isTrue(Option.isSome(lease), `shard ${name} has a retention leader`)
          return Option.getOrThrow(lease)
        }))
      for (const [i, name] of ["a", "b", "c"].entries()) {
        assert.match(holders[i]!.holder, new RegExp(`^instance-\\d/retention#[0-9a-z]+@${name}$`), `shard ${name}'s lease names its campaign`)
      }
      const leaderOfA = Number(/^instance-(\d)/.exec(holders[0]!.holder)![1])
      yield* h.kill(leaderOfA)
      // The dead leader renews no more: past its lease (30 s) another instance takes each shard it led.
      yield* h.advance("31 seconds")
      yield* h.advance("11 seconds")
      for (const [i, name] of ["a", "b", "c"].entries()) {
        const now = Option.getOrThrow(yield* (yield* onShard(layerOf(name), LeaseStore)).get(Leader.leaderTenant, retentionLease))
        const was = holders[i]!
        if (was.holder.startsWith(`instance-${leaderOfA}/`)) {
          assert.isFalse(now.holder.startsWith(`instance-${leaderOfA}/`), `shard ${name} is taken over from the killed instance`)
          assert.isAbove(now.epoch, was.epoch, `shard ${name}'s new leader has a new epoch`)
        } else {
          assert.strictEqual(now.holder, was.holder, `shard ${name}'s living leader keeps its lease`)
        }
      }
    }).pipe(Effect.provide(stores))
  })

  it.effect("five campaigners race for one leader name over three shards: exactly one leads each shard at a time, and a leader gone is replaced", () => {
    const { layerOf } = memoryShards(["a", "b", "c"])
    const stores = ShardedStores.layer({ shards: ["a", "b", "c"].map((name) => ({ name, layer: layerOf(name) })), route: { default: "a" } })
    return Effect.gen(function*() {
      const partitions = yield* StorePartitions
      const leading = new Map<string, Set<string>>()
      const led = new Map<string, Array<string>>()
      let overlap = 0
      const campaign = (holder: string, name: string) =>
        partitions.within(name)(Leader.run(
          "race",
          Effect.gen(function*() {
            const now = leading.get(name) ?? new Set<string>()
            leading.set(name, now.add(holder))
            if (now.size > 1) overlap++
            led.set(name, [...(led.get(name) ?? []), holder])
            return yield* Effect.never
          }).pipe(Effect.ensuring(Effect.sync(() => leading.get(name)!.delete(holder)))),
          { holder, lease: "10 seconds", renewEvery: "2 seconds" }
        ))
      const fibers = new Map<string, Fiber.Fiber<unknown, unknown>>()
      const started = yield* Deferred.make<void>()
      for (let i = 0; i < 5; i++) {
        for (const name of ["a", "b", "c"]) {
          fibers.set(`${i}@${name}`, yield* Effect.forkChild(Effect.andThen(Deferred.await(started), campaign(`c${i}`, name))))
        }
      }
      yield* Deferred.succeed(started, undefined)
      yield* TestClock.adjust("1 second")
      for (const name of ["a", "b", "c"]) {
        assert.strictEqual(led.get(name)?.length, 1, `exactly one of the five won shard ${name}`)
        assert.strictEqual(leading.get(name)?.size, 1, `one leads shard ${name}`)
      }
      // The winner of shard b stops (its campaign interrupted: the lease handed back): another takes b; a and c stay.
      const winnerB = led.get("b")![0]!
      yield* Fiber.interrupt(fibers.get(`${winnerB.slice(1)}@b`)!)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(led.get("b")!.length, 2, "shard b has a new leader")
      assert.notStrictEqual(led.get("b")![1], winnerB)
      assert.strictEqual(leading.get("b")!.size, 1)
      yield* TestClock.adjust("30 seconds")
      for (const name of ["a", "c"]) assert.strictEqual(led.get(name)!.length, 1, `shard ${name} kept its leader`)
      assert.strictEqual(overlap, 0, "never two leaders of one shard at once")
      for (const fiber of fibers.values()) yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(stores))
  })
})
