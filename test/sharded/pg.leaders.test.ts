/**
 * A leader per shard on three Postgres databases: shard b — the home shard,
 * the shard of the runtime's tenant `@baton`, where the one fleet leader's
 * lease used to be — reaches its database through a proxy on 127.0.0.1 that
 * the test stops mid-run. Retention still prunes the settled pauses of
 * shards a and c, each under its own leader with its lease in its own
 * database. (What becomes of the executions on shards a and c across the
 * cut is pg.liveness.test.ts's.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ShardedStores } from "../../layers/sharded/index.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, makeSideEffects, oneStep } from "../runtime/fixtures.ts"
import { pauseThenResume } from "./passes.ts"
import { proxy } from "./pgProxy.ts"
import { ensureDatabases, shardBundles, onShard, shardSchema, shardUrl } from "./pgShards.ts"

await ensureDatabases()
const schema = shardSchema("sharded_leaders")

const tenants = { acme: "a", initech: "c" } as const

/** How many pauses of `tenantId` shard `name`'s database holds (read with SQL, apart from the router). */
const pausesOf = (name: string, tenantId: string) =>
  Effect.promise(() =>
    onShard(shardUrl(name), (sql) => sql<{ n: string }>`SELECT count(*) AS n FROM ${sql(schema)}.baton_pauses WHERE tenant_id = ${tenantId}`)
  ).pipe(Effect.map((rows) => Number(rows[0]!.n)))

describe("a leader per shard on Postgres", () => {
  it.effect("the home shard b lost mid-run: retention prunes the settled pauses of shards a and c", () =>
    Effect.gen(function*() {
      const cut = yield* proxy(shardUrl("b"))
      const stores = ShardedStores.layer({
        shards: shardBundles(schema, "b", cut.url),
        route: { tenants: { ...tenants, globex: "b" }, default: "b" }
      })
      return yield* Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [wf, oneStep], tenantQuota: 1, pauseRetention: "1 hour", sweepInterval: "1 minute" }
        })
        for (const tenantId of Object.keys(tenants)) yield* pauseThenResume(h, wf, tenantId)
        cut.stop()
        for (const [tenantId, shard] of Object.entries(tenants)) {
          assert.strictEqual(yield* pausesOf(shard, tenantId), 1, `${tenantId}'s settled pause is kept within its retention`)
        }
        yield* h.advance("1 hour")
        // Each round is real I/O on the databases: move the Clock on a sweep at a time until both shards are pruned (bounded).
        let left = Number.POSITIVE_INFINITY
        for (let i = 0; i < 60 && left > 0; i++) {
          yield* h.advance("1 minute")
          left = (yield* pausesOf("a", "acme")) + (yield* pausesOf("c", "initech"))
        }
        assert.strictEqual(left, 0, "the leaders of shards a and c pruned their settled pauses with shard b lost")
      }).pipe(Effect.provide(stores))
    }))
})
