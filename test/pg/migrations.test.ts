/**
 * Migrations on Postgres: many instances starting at once migrate once (an
 * advisory lock orders them); an older schema is upgraded in place; two
 * deployments in one database (by schema or table prefix) keep apart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient, PgMigrations, PgStores } from "../../layers/pg/index.ts"
import * as PgLiveness from "../../layers/pg/PgLiveness.ts"
import { InstanceLiveness } from "../../src/stores/InstanceLiveness.ts"
import * as SqlMigrations from "../../layers/sql/SqlMigrations.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { cuttingProxy } from "./cuttingProxy.ts"
import { randomName, testSchemas, url } from "./db.ts"

/** A schema name of this run (dropped after the file). */
const freshSchema = testSchemas("migrations")

/** Runs `effect` on a pool of its own (one instance). */
const onPool = <A, E>(schema: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.scoped(Effect.flatMap(Layer.build(PgClient.layer({ url, schema, maxConnections: 2 })), (ctx) => Effect.provide(effect, ctx)))

describe("PgMigrations", () => {
  const racing = 8
  const schemaA = freshSchema()
  it.live(`${racing} instances migrating a new schema at once: the migrations run once`, () =>
    Effect.gen(function*() {
      const applied = yield* Effect.all(
        Array.from({ length: racing }, () => onPool(schemaA, PgMigrations.migrate({ schema: schemaA }))),
        { concurrency: "unbounded" }
      )
      const all = applied.flat().map(([id]) => id).sort((a, b) => a - b)
      assert.deepStrictEqual(all, SqlMigrations.migrations.map(([id]) => id), "each migration applied by exactly one instance")
      assert.strictEqual(applied.filter((a) => a.length > 0).length, 1, "one instance did all of it")
      const recorded = yield* onPool(schemaA, Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM baton_migrations`))
      assert.strictEqual(recorded[0]!.n, SqlMigrations.migrations.length)
      assert.deepStrictEqual(yield* onPool(schemaA, PgMigrations.migrate({ schema: schemaA })), [], "a later start has nothing to do")
    }))

  it.live("a connection cut in the middle of migrating (a restart, a terminated backend): the migrations run again on a new connection, once", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      const proxy = yield* cuttingProxy({ at: "pg_advisory_xact_lock", cuts: 1 })
      const applied = yield* Effect.scoped(Effect.flatMap(
        Layer.build(PgClient.layer({ url: proxy.url, schema, maxConnections: 1 })),
        (ctx) => Effect.provide(PgMigrations.migrate({ schema }), ctx)
      ))
      assert.strictEqual(proxy.cut(), 1, "the proxy cut the first migration transaction")
      assert.deepStrictEqual(applied.map(([id]) => id), SqlMigrations.migrations.map(([id]) => id), "every migration applied, once")
      assert.deepStrictEqual(yield* onPool(schema, PgMigrations.migrate({ schema })), [], "a later start has nothing to do")
    }).pipe(Effect.scoped))

  it.live("a connection cut while the liveness table is made (a restart, a terminated backend): it is made on a new connection and the instance registers", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      yield* onPool(schema, PgMigrations.migrate({ schema }))
      const proxy = yield* cuttingProxy({ at: "(instance_key TEXT PRIMARY KEY", cuts: 1 })
      const registered = yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(PgLiveness.layer({ schema }).pipe(Layer.provide(PgClient.layer({ url: proxy.url, schema, maxConnections: 2 }))))
        const liveness = Context.get(ctx, InstanceLiveness)
        const held = yield* liveness.register("probe-instance")
        return held.held()
      }))
      assert.strictEqual(proxy.cut(), 1, "the proxy cut the liveness table's transaction")
      assert.isTrue(registered, "the instance holds its liveness lock")
    }).pipe(Effect.scoped))

  it.live("a connection cut while an instance first takes its liveness lock: it takes it on a new connection", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      yield* onPool(schema, PgMigrations.migrate({ schema }))
      const proxy = yield* cuttingProxy({ at: "pg_try_advisory_lock($1::bigint)", cuts: 1 })
      const registered = yield* Effect.scoped(Effect.gen(function*() {
        const ctx = yield* Layer.build(PgLiveness.layer({ schema }).pipe(Layer.provide(PgClient.layer({ url: proxy.url, schema, maxConnections: 2 }))))
        return (yield* Context.get(ctx, InstanceLiveness).register("probe-instance")).held()
      }))
      assert.strictEqual(proxy.cut(), 1, "the proxy cut the first lock session")
      assert.isTrue(registered, "the instance holds its liveness lock")
    }).pipe(Effect.scoped))

  it.live("an older schema is upgraded in place by the migrations it lacks", () =>
    Effect.gen(function*() {
      const schema = freshSchema()
      assert.deepStrictEqual((yield* onPool(schema, PgMigrations.migrate({ schema, upTo: 1 }))).map(([id]) => id), [1])
      assert.strictEqual(yield* onPool(schema, SqlMigrations.currentVersion()), 1)
      const rest = yield* onPool(schema, PgMigrations.migrate({ schema }))
      assert.deepStrictEqual(rest.map(([id]) => id), SqlMigrations.migrations.slice(1).map(([id]) => id))
      assert.strictEqual(yield* onPool(schema, SqlMigrations.currentVersion()), SqlMigrations.latestVersion)
    }))

  it.live("two deployments in one database — another schema, or another table prefix — see none of each other's rows", () =>
    Effect.gen(function*() {
      const schemaB = freshSchema()
      const root = randomName("root")
      const deployments: ReadonlyArray<PgStores.PgStoresOptions> = [
        { schema: schemaA },
        { schema: schemaB },
        { schema: schemaA, tablePrefix: "other_" }
      ]
      for (const [i, options] of deployments.entries()) {
        const acquired = yield* Effect.scoped(Effect.flatMap(
          Layer.build(PgStores.layerLeaseStore({ url, maxConnections: 1, ...options })),
          (ctx) => Context.get(ctx, LeaseStore).acquire("default", root, `holder-${i}`, 30_000, 0)
        ))
        assert.isTrue(Option.isSome(acquired), `deployment ${i} has its own lease table`)
        assert.strictEqual(Option.getOrThrow(acquired).epoch, 1)
      }
    }))
})
