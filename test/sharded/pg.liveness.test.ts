/**
 * Instance liveness per shard on three Postgres databases: the home shard b
 * reaches its database through a proxy on 127.0.0.1 that the test stops
 * while an instance runs executions on shards a and c. Its liveness signal
 * on b (a session lock on a connection through the proxy) is lost with the
 * shard; its signals on a and c are not, so its trees there keep their
 * leases and finish on it, and nobody takes them. And a shard down when the
 * instances start (nothing listening at its port yet) gets its signals once
 * it is up: its trees move at once again instead of at lease expiry.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as Net from "node:net"
import { PgStores } from "../../layers/pg/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { errorTag, makeSideEffects, slow } from "../runtime/fixtures.ts"
import { proxy } from "./pgProxy.ts"
import { ensureDatabases, shardBundles, shardSchema, shardUrl } from "./pgShards.ts"

await ensureDatabases()
const schema = shardSchema("sharded_liveness")

describe("instance liveness per shard on Postgres", () => {
  it.effect("the home shard lost mid-run: the executions of the tenants on the other shards finish on the instance running them", () =>
    Effect.gen(function*() {
      const cut = yield* proxy(shardUrl("b"))
      const stores = ShardedStores.layer({
        shards: shardBundles(schema, "b", cut.url),
        route: { tenants: { acme: "a", initech: "c" }, default: "b" }
      })
      return yield* Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "20 seconds")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const runs = yield* Effect.forEach(["acme", "initech"], (tenantId) => h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId })))
        // Both are in their slow step, on instance 0.
        for (let i = 0; i < 200 && fx.runs.filter((r) => r.node === "slow").length < 2; i++) yield* h.advance("10 millis")
        assert.strictEqual(fx.runs.filter((r) => r.node === "slow").length, 2)
        cut.stop()
        // Real I/O on the databases at each renewal: move the Clock a second at a time until both calls end (bounded).
        for (let i = 0; i < 120 && runs.some((run) => run.pollUnsafe() === undefined); i++) yield* h.advance("1 second")
        for (const run of runs) assert.strictEqual(errorTag(yield* Fiber.await(run)), "Success", "finished on instance 0, not lost")
        assert.deepStrictEqual(fx.runs.map((r) => r.instanceId).filter((id) => id !== h.instance(0).instanceId), [], "nobody else ran a step")
        assert.deepStrictEqual([...new Set(fx.applied.values())], [1], "each step's effect once")
      }).pipe(Effect.provide(stores))
    }), 120_000)
})

/** A free port on 127.0.0.1 where nothing listens (yet). */
const freePort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
)

describe("a shard down when the instances start", () => {
  it.effect("keeps lease expiry for its trees while down, and registers the instances' signals there once it is up", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const later = new URL(shardUrl("c"))
      later.port = String(port)
      const stores = ShardedStores.layer({
        shards: [
          { name: "a", layer: PgStores.layer({ url: shardUrl("a"), schema, maxConnections: 4 }) },
          { name: "c", layer: PgStores.layer({ url: later.toString(), schema, maxConnections: 2, wakeups: false }) }
        ],
        route: { tenants: { initech: "c" }, default: "a" }
      })
      return yield* Effect.gen(function*() {
        const wf = slow(makeSideEffects(), "1 second")
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const takeover = Effect.map(h.instance(0).baton.checkReadiness, (r) => r.components.find((c) => c.name === "crash-takeover")?.message ?? "")
        const before = yield* takeover
        assert.include(before, "partition a: liveness (")
        assert.match(before, /partition c: lease expiry: .*because registering this instance's liveness failed \(tried again every 30 s\): .*shard "c"/)
        // From now on the port forwards to shard c's database.
        yield* proxy(shardUrl("c"), port)
        // The shard is built again after its retryAfter, the signal registered again every 30 s: move the Clock on in
        // small steps (each lets the build's real connect go on), bounded.
        let after = before
        for (let i = 0; i < 2000 && !after.includes("partition c: liveness ("); i++) {
          yield* h.advance("50 millis")
          after = yield* takeover
        }
        assert.include(after, "partition c: liveness (", after)
        const run = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId: "initech" }))
        for (let i = 0; i < 600 && run.pollUnsafe() === undefined; i++) yield* h.advance("50 millis")
        assert.strictEqual((yield* Fiber.join(run))._tag, "Finished", "the shard works once up")
      }).pipe(Effect.provide(stores))
    }), 120_000)
})
