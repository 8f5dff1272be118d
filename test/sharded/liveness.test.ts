/**
 * Instance liveness per shard: over three memory shards, each with its own
 * liveness table, an instance holds a signal on every shard. Cutting its
 * signal on one shard (as a shard's database lost: its liveness connection
 * closed) opens only that shard's trees to takeover; its trees on the other
 * shards keep their leases and finish on it. The home shard is the one cut:
 * it used to carry every instance's only signal, so losing it cost every
 * shard's trees.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { MemoryLiveness, MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { InstanceLiveness } from "../../src/stores/InstanceLiveness.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { errorTag, leaseOf, makeSideEffects, slow, statusOf } from "../runtime/fixtures.ts"

const tenants = { acme: "a", globex: "b", initech: "c" } as const

/** Three memory shards, each with a liveness table of its own (kept here, to cut a signal on one shard). */
const shardsWithLiveness = () => {
  const liveness = { a: MemoryLiveness.make(), b: MemoryLiveness.make(), c: MemoryLiveness.make() }
  const layerOf = (name: keyof typeof liveness) =>
    Layer.merge(
      MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layer))),
      Layer.succeed(InstanceLiveness, liveness[name])
    )
  // b is home: the shard of the runtime's own tenant (the rule's default).
  const stores = ShardedStores.layer({ shards: (["a", "b", "c"] as const).map((name) => ({ name, layer: layerOf(name) })), route: { tenants, default: "b" } })
  return { liveness, stores }
}

/** Each tenant's Running execution (one each), read through the router. */
const runningByTenant = RecordStore.use((r) => r.findByStatus("Running", 10, Option.none())).pipe(
  Effect.map((running) => Object.fromEntries(running.map((record) => [record.tenantId, record.executionId])))
)

describe("instance liveness per shard", () => {
  it.effect("an instance's signal cut on the home shard: that shard's tree moves at once, its trees on the other shards stay and finish on it", () => {
    const { liveness, stores } = shardsWithLiveness()
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const runs = Object.fromEntries(
        yield* Effect.forEach(Object.keys(tenants), (tenantId) => Effect.map(h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId })), (run) => [tenantId, run] as const))
      )
      yield* h.settle
      const roots = yield* runningByTenant
      assert.deepStrictEqual(Object.keys(roots).sort(), ["acme", "globex", "initech"])
      const zero = h.instance(0).instance
      liveness.b.cut(`${zero.instanceId}#${zero.incarnation}`)
      yield* h.advance("10 millis")

      const globex = yield* leaseOf("globex", roots.globex!)
      assert.strictEqual(globex?.epoch, 2, "shard b's tree is taken at once")
      assert.isTrue(globex?.holder.startsWith(`${h.instance(1).instanceId}#`), globex?.holder)
      for (const tenantId of ["acme", "initech"]) {
        const lease = yield* leaseOf(tenantId, roots[tenantId]!)
        assert.strictEqual(lease?.epoch, 1, `${tenantId}'s tree stays: the instance's signal on its shard is held`)
        assert.isTrue(lease?.holder.startsWith(`${zero.instanceId}#`), lease?.holder)
      }
      const readiness = (yield* h.instance(0).baton.checkReadiness).components.find((c) => c.name === "crash-takeover")
      assert.strictEqual(readiness?.status, "Degraded")
      assert.include(readiness?.message ?? "", "partition b: liveness (in-memory registration scope) lost")
      assert.include(readiness?.message ?? "", "partition a: liveness (in-memory registration scope): a dead instance's trees move at once")

      yield* h.advance("46 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(runs.globex!)), "LeaseLostError", "instance 0's pass on shard b stops")
      for (const tenantId of ["acme", "initech"]) {
        assert.strictEqual(errorTag(yield* Fiber.await(runs[tenantId]!)), "Success", `${tenantId}'s call finishes on instance 0`)
      }
      for (const tenantId of Object.keys(tenants)) assert.strictEqual(yield* statusOf(tenantId, roots[tenantId]!), "Finished", tenantId)
      const slowOn = (instanceId: string) => fx.runs.filter((r) => r.node === "slow" && r.instanceId === instanceId).length
      assert.strictEqual(slowOn(h.instance(0).instanceId), 3, "instance 0 ran the three slow steps")
      assert.strictEqual(slowOn(h.instance(1).instanceId), 1, "instance 1 ran only shard b's again")
    }).pipe(Effect.provide(stores))
  })

  it.effect("a shard whose bundle has no liveness keeps lease expiry for its trees; the others move at once", () => {
    const withSignal = MemoryLiveness.make()
    const bare = MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layer)))
    const stores = ShardedStores.layer({
      shards: [{ name: "a", layer: Layer.merge(bare, Layer.succeed(InstanceLiveness, withSignal)) }, { name: "b", layer: bare }],
      route: { tenants: { acme: "a", globex: "b" }, default: "a" }
    })
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const message = (yield* h.instance(1).baton.checkReadiness).components.find((c) => c.name === "crash-takeover")?.message ?? ""
      assert.include(message, "partition a: liveness (in-memory registration scope): a dead instance's trees move at once")
      assert.match(message, /partition b: lease expiry: .*shard "b"'s stores provide no InstanceLiveness/)
      assert.notInclude(message, "tried again", "a shard without liveness is not asked again")
      for (const tenantId of ["acme", "globex"]) yield* h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId }))
      yield* h.settle
      const roots = yield* runningByTenant
      yield* h.kill(0)
      yield* h.advance("10 millis")
      assert.strictEqual((yield* leaseOf("acme", roots.acme!))?.epoch, 2, "shard a's tree: taken at once")
      assert.strictEqual((yield* leaseOf("globex", roots.globex!))?.epoch, 1, "shard b's tree: its lease is waited for")
      yield* h.advance("31 seconds")
      assert.strictEqual((yield* leaseOf("globex", roots.globex!))?.epoch, 2, "taken at its lease expiry")
    }).pipe(Effect.provide(stores))
  })

  it.effect("over a single shard, liveness is that shard's", () => {
    const { stores } = (() => {
      const liveness = MemoryLiveness.make()
      const layer = Layer.merge(MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layer))), Layer.succeed(InstanceLiveness, liveness))
      return { stores: ShardedStores.layer({ shards: [{ name: "only", layer }], route: () => "only" }) }
    })()
    return Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [slow(makeSideEffects())] } })
      const component = (yield* h.instance(0).baton.checkReadiness).components.find((c) => c.name === "crash-takeover")
      assert.strictEqual(component?.message, "partition only: liveness (in-memory registration scope): a dead instance's trees move at once")
    }).pipe(Effect.provide(stores))
  })

  it.effect("a killed instance's trees move at once on every shard", () => {
    const { stores } = shardsWithLiveness()
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      for (const tenantId of Object.keys(tenants)) yield* h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId }))
      yield* h.settle
      const roots = yield* runningByTenant
      yield* h.kill(0)
      yield* h.advance("10 millis")
      for (const tenantId of Object.keys(tenants)) {
        const lease = yield* leaseOf(tenantId, roots[tenantId]!)
        assert.strictEqual(lease?.epoch, 2, `${tenantId}: taken at once, 30 s before its lease expired`)
      }
      yield* h.advance("46 seconds")
      for (const tenantId of Object.keys(tenants)) assert.strictEqual(yield* statusOf(tenantId, roots[tenantId]!), "Finished", tenantId)
      assert.deepStrictEqual([...new Set(fx.applied.values())], [1], "each step's effect once")
    }).pipe(Effect.provide(stores))
  })
})
