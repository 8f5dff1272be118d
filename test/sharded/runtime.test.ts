/**
 * The runtime over `ShardedStores`: two instances of a fleet over three
 * shards, tenants on each. Executions of every tenant start, pause, resume
 * on the other instance and finish (a step that works on the Clock, moved
 * by the TestClock); each shard holds only its tenants' rows; reads route
 * by tenant. A shard that is down (its Postgres at a port that never
 * answers) fails its tenant's calls with a typed, truthful `StoreError`,
 * while the other tenants' executions start and finish.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option } from "effect"
import { MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { PgStores } from "../../layers/pg/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import { StoreError } from "../../src/stores/Errors.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, makeSideEffects, oneStep, slow } from "../runtime/fixtures.ts"
import { pauseThenResume } from "./passes.ts"

const tenants = { acme: "a", globex: "b", initech: "c" } as const
const route = { tenants, default: "a" }

/** Three memory shards, each over a state made here (to read each shard's rows apart). */
const memoryShards = () => {
  const states = Object.fromEntries(
    ["a", "b", "c"].map((name) => [name, Effect.runSync(Effect.scoped(Layer.build(Layer.merge(MemoryState.layer, Ids.layer))))])
  )
  const layerOf = (name: string) => MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.succeedContext(states[name]!)))
  return { states, layerOf }
}

/** The tenants whose records shard `name` holds (read on the shard alone, not through the router). */
const tenantsOn = (layer: Layer.Layer<RecordStore>) =>
  Effect.gen(function*() {
    const records = Context.get(yield* Layer.build(layer), RecordStore)
    const held: Array<string> = []
    for (const tenantId of Object.keys(tenants)) {
      const page = yield* records.list({ tenantId, limit: 100 })
      if (page.records.length > 0) held.push(tenantId)
    }
    return held
  })

describe("the runtime over ShardedStores", () => {
  it.effect("executions of tenants on three shards pause, resume on another instance and finish; each shard holds only its tenants' rows", () => {
    const { layerOf } = memoryShards()
    const stores = ShardedStores.layer({ shards: ["a", "b", "c"].map((name) => ({ name, layer: layerOf(name) })), route })
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const work = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf, work] } })
      for (const tenantId of Object.keys(tenants)) yield* pauseThenResume(h, wf, tenantId)
      // One slow execution per tenant at once, each on its own shard; they finish as the Clock moves.
      const runs = yield* Effect.forEach(Object.keys(tenants), (tenantId) => h.run(0, (b) => b.execute(work, { log: [] }, { tenantId })))
      yield* h.advance("45 seconds")
      for (const run of runs) assert.strictEqual((yield* Fiber.join(run))._tag, "Finished")
      // Reads route by tenant: each tenant lists its own executions, from either instance.
      for (const tenantId of Object.keys(tenants)) {
        const page = yield* Fiber.join(yield* h.run(1, (b) => b.list({ tenantId })))
        assert.strictEqual(page.executions.length, 2, `${tenantId} lists its two executions`)
      }
      for (const [tenantId, shard] of Object.entries(tenants)) {
        assert.deepStrictEqual(yield* tenantsOn(layerOf(shard)), [tenantId], `shard ${shard} holds ${tenantId}'s rows only`)
      }
    }).pipe(Effect.provide(stores))
  })

  it.effect("an instance dies mid-step on each shard: the other instance's recovery sweep, over every shard, finds each tree and finishes it", () => {
    const { layerOf } = memoryShards()
    const stores = ShardedStores.layer({ shards: ["a", "b", "c"].map((name) => ({ name, layer: layerOf(name) })), route })
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const work = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [work] } })
      const handles = yield* Effect.forEach(Object.keys(tenants), (tenantId) =>
        Effect.flatMap(h.run(0, (b) => b.start(work, { log: [] }, { tenantId })), Fiber.join))
      yield* h.settle
      yield* h.kill(0)
      // Past the dead instance's leases (30 s), then the slow step again (45 s), on instance 1 alone.
      yield* h.advance("31 seconds")
      yield* h.advance("45 seconds")
      for (const [i, tenantId] of Object.keys(tenants).entries()) {
        const out = yield* Fiber.join(yield* h.run(1, (b) => b.await(handles[i]!.executionId, { tenantId })))
        assert.strictEqual(out._tag, "Finished", `${tenantId}'s tree, on shard ${tenants[tenantId as keyof typeof tenants]}`)
      }
      assert.deepStrictEqual(
        fx.runs.filter((r) => r.node === "last").map((r) => r.instanceId),
        ["instance-1", "instance-1", "instance-1"],
        "each tree finished on the instance that recovered it"
      )
    }).pipe(Effect.provide(stores))
  })

  it.effect("a shard that is down fails its tenant's calls with a StoreError naming it; the other tenants' executions start and finish", () => {
    const { layerOf } = memoryShards()
    const stores = ShardedStores.layer({
      shards: [
        { name: "a", layer: layerOf("a") },
        { name: "b", layer: layerOf("b") },
        // Nothing listens on port 1: every connection is refused at once.
        { name: "c", layer: PgStores.layer({ url: "postgres://postgres@127.0.0.1:1/down", maxConnections: 1, wakeups: false }) }
      ],
      route
    })
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const work = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [oneStep, work] } })
      const down = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.execute(oneStep, { log: [] }, { tenantId: "initech" }))))
      assert.isTrue(Exit.isFailure(down), "initech's shard is down")
      const error = Option.getOrUndefined(Exit.findErrorOption(down))
      assert.instanceOf(error, StoreError)
      const e = error as StoreError
      assert.strictEqual(e.kind, "Connection")
      assert.isTrue(e.isRetryable, "a down shard is retryable")
      assert.include(e.message, `shard "c" (tenant initech) is unavailable`)
      const read = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.list({ tenantId: "initech" }))))
      assert.strictEqual(Option.getOrUndefined(Exit.findErrorOption(read))?._tag, "StoreError", "a read of the down shard's tenant fails typed too")

      for (const tenantId of ["acme", "globex"]) {
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(oneStep, { log: [] }, { tenantId })))
        assert.strictEqual(out._tag, "Finished", tenantId)
      }
      const runs = yield* Effect.forEach(["acme", "globex"], (tenantId) => h.run(1, (b) => b.execute(work, { log: [] }, { tenantId })))
      // The sweeps run meanwhile over every shard: the down one is passed over, the others' work goes on.
      yield* h.advance("45 seconds")
      for (const run of runs) assert.strictEqual((yield* Fiber.join(run))._tag, "Finished")
      assert.deepStrictEqual(yield* tenantsOn(layerOf("a")), ["acme"])
      assert.deepStrictEqual(yield* tenantsOn(layerOf("b")), ["globex"])
    }).pipe(Effect.provide(stores))
  })
})
