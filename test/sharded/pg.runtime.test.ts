/**
 * The runtime over `ShardedStores` on three Postgres databases: two
 * instances, one tenant per shard plus a tenant on the default shard.
 * Every execution pauses, resumes on the other instance and finishes; each
 * database then holds only its tenants' rows (records, checkpoints,
 * pauses), read with SQL in each database apart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"
import { ensureDatabases, onShard, shardNames, shardSchema, shardUrl } from "./pgShards.ts"

await ensureDatabases()
const schema = shardSchema("sharded_runtime")

const route = { tenants: { acme: "a", globex: "b", initech: "c" }, default: "a" }
const stores = ShardedStores.layer({
  shards: shardNames.map((name) => ({ name, layer: PgStores.layer({ url: shardUrl(name), schema, maxConnections: 4 }) })),
  route
})

/** The distinct tenants of `table` in shard `name`'s database. */
const tenantsIn = (name: string, table: string) =>
  Effect.promise(() =>
    onShard(shardUrl(name), (sql) => sql<{ tenant_id: string }>`SELECT DISTINCT tenant_id FROM ${sql(schema)}.${sql(table)} ORDER BY tenant_id`)
  ).pipe(Effect.map((rows) => rows.map((r) => r.tenant_id)))

describe("the runtime over ShardedStores on three Postgres databases", () => {
  it.effect("executions of tenants on each shard finish; each database holds only its tenants' rows", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const all = ["acme", "globex", "initech", "hooli"]
      for (const tenantId of all) {
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId })))
        assert.strictEqual(first._tag, "Paused", tenantId)
        if (first._tag !== "Paused") return
        const second = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: first.pauses[0]!.pauseId, decision: "yes", tenantId })))
        assert.strictEqual(second._tag, "Finished", tenantId)
      }
      const expected: Record<string, Array<string>> = { a: ["acme", "hooli"], b: ["globex"], c: ["initech"] }
      for (const name of shardNames) {
        for (const table of ["baton_records", "baton_checkpoints", "baton_pauses"]) {
          assert.deepStrictEqual(yield* tenantsIn(name, table), expected[name], `${table} on shard ${name}`)
        }
      }
    }).pipe(Effect.provide(stores)))
})
