/**
 * Each Postgres store alone (its own pool, migrating on build) answers its
 * ping; a CheckpointStore alone fences its writes with the leases of a
 * LeaseStore alone on the same schema.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PgStores } from "../../layers/pg/index.ts"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import { fenceKey } from "../../src/stores/Fence.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { LedgerStore } from "../../src/stores/LedgerStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import { randomName, testSchema, url } from "./db.ts"

const schema = testSchema("stores")
const options = { url, schema, maxConnections: 2 }

describe("PgStores, each store alone", () => {
  it.live("every store alone builds on its own pool and answers ping", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(Layer.mergeAll(
        PgStores.layerLeaseStore(options),
        PgStores.layerRecordStore(options).pipe(Layer.provide(Ids.layer)),
        PgStores.layerPauseStore(options),
        PgStores.layerTreeStore(options),
        PgStores.layerCheckpointStore(options),
        PgStores.layerLedgerStore(options),
        PgStores.layerRateLimitStore(options),
        PgStores.layerChildQueueStore(options),
        PgStores.layerExecutionHistoryStore(options),
        PgStores.layerRequestStore(options)
      ))
      for (const key of [LeaseStore, RecordStore, PauseStore, TreeStore, CheckpointStore, LedgerStore, RateLimitStore, ChildQueueStore, ExecutionHistoryStore, RequestStore] as const) {
        yield* (Context.get(context, key as typeof LeaseStore) as { readonly ping: Effect.Effect<void, unknown> }).ping
      }
    }).pipe(Effect.scoped))

  it.live("a CheckpointStore alone fences with the leases of a LeaseStore alone on the same schema", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(Layer.merge(PgStores.layerLeaseStore(options), PgStores.layerCheckpointStore(options)))
      const leases = Context.get(context, LeaseStore)
      const saver = Context.get(context, CheckpointStore).saver
      const root = randomName("root")
      const lease = Option.getOrThrow(yield* leases.acquire("default", root, "holder", 30_000, Date.now()))
      const confirmed: Array<readonly [number, boolean]> = []
      const fence = {
        lease,
        // Due at once: the lease (30 s) ends before now + 60 s - 20 s.
        ttlMillis: 60_000,
        renewMillis: 20_000,
        now: () => Date.now(),
        refusal: () => undefined,
        confirmed: (_at: number, expiresAt: number, renewed: boolean) => void confirmed.push([expiresAt, renewed]),
        lost: () => {},
        renewBeforeWrite: async () => {}
      }
      yield* Effect.promise(() =>
        saver.put(
          { configurable: { thread_id: root, checkpoint_ns: "", [fenceKey]: fence } },
          { v: 4, id: "1", ts: new Date().toISOString(), channel_values: {}, channel_versions: {}, versions_seen: {} },
          { source: "input", step: -1, parents: {} },
          {}
        )
      )
      assert.strictEqual(confirmed.length, 1, "the write confirmed the lease")
      assert.isTrue(confirmed[0]![1], "the write renewed the lease (a renewal was due)")
      assert.strictEqual(Option.getOrThrow(yield* leases.get("default", root)).expiresAt, confirmed[0]![0])
    }).pipe(Effect.scoped))
})

describe("PgStores.layerConfig", () => {
  const configSchema = testSchema("config")
  const build = (env: Record<string, string>) =>
    Layer.build(PgStores.layerConfig()).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))))

  it.live("reads the URL, schema, pool size, wake-ups and table prefix through Effect Config", () =>
    Effect.gen(function*() {
      const context = yield* build({
        BATON_PG_URL: url,
        BATON_PG_SCHEMA: configSchema,
        BATON_PG_MAX_CONNECTIONS: "2",
        BATON_PG_WAKEUPS: "false",
        BATON_TABLE_PREFIX: "cfg_"
      })
      const leases = Context.get(context, LeaseStore)
      assert.isTrue(Option.isSome(yield* leases.acquire("default", "root", "me", 30_000, Date.now())))
      const sql = Context.get(context, SqlClient.SqlClient)
      const rows = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM ${sql(configSchema)}.cfg_leases`
      assert.strictEqual(Number(rows[0]!.n), 1, "the row landed in BATON_PG_SCHEMA under BATON_TABLE_PREFIX")
    }).pipe(Effect.scoped))

  it.live("a setting that cannot be read, or cannot work, fails the build with a BatonConfigError naming it", () =>
    Effect.gen(function*() {
      const unreadable = yield* Effect.flip(build({ BATON_PG_URL: url, BATON_PG_MAX_CONNECTIONS: "many" }))
      assert.strictEqual(unreadable._tag, "BatonConfigError")
      assert.strictEqual((unreadable as any).field, "BATON_PG_MAX_CONNECTIONS")
      const system = yield* Effect.flip(build({ BATON_PG_URL: url, BATON_PG_SCHEMA: "pg_catalog" }))
      assert.strictEqual(system._tag, "BatonConfigError")
      assert.strictEqual((system as any).field, "schema")
      const missing = yield* Effect.flip(build({}))
      assert.strictEqual((missing as any).field, "BATON_PG_URL")
    }).pipe(Effect.scoped))
})
