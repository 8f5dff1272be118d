/**
 * `StoreError` on Postgres tells the truth about what failed: its `kind`
 * (Busy, Connection, Constraint, Data, Config) from the SQLSTATE, whether it
 * is `transient`, and a message that says "can be retried" only when it is.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient, PgMigrations, PgStores } from "../../layers/pg/index.ts"
import { run } from "../../layers/sql/internal/rows.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import type { StoreError } from "../../src/stores/Errors.ts"
import { assertPermanent, assertTransient, storeFailure } from "../storeErrors.ts"
import type { LeaseStoreShape } from "../../src/stores/LeaseStore.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("errors")

interface Env {
  readonly leases: LeaseStoreShape
  readonly sql: SqlClient.SqlClient
}
const Env = Context.Service<Env>("test/pg/errors/Env")

const env = Layer.effect(
  Env,
  Effect.gen(function*() {
    yield* PgMigrations.migrate({ schema })
    return { leases: yield* SqlLeaseStore.make(), sql: yield* SqlClient.SqlClient }
  })
).pipe(Layer.provide(PgClient.layer({ url, schema, maxConnections: 2 })))


layer(env, { excludeTestServices: true })("StoreError kinds on Postgres", (it) => {
  it.effect("a NUL byte in a value is a permanent Data error", () =>
    Effect.gen(function*() {
      const { leases } = yield* Env
      assertPermanent(yield* storeFailure(leases.acquire("default", "root-nul", "holder\u0000x", 30_000, 0)), "Data")
    }))

  it.effect("numeric overflow is a permanent Data error", () =>
    Effect.gen(function*() {
      const { sql } = yield* Env
      assertPermanent(yield* storeFailure(run("Test", "overflow", () => sql`SELECT ${2147483647}::int4 + 1 AS n`)), "Data")
    }))

  it.effect("a unique violation is a permanent Constraint error", () =>
    Effect.gen(function*() {
      const { sql } = yield* Env
      const insert = () => sql`INSERT INTO baton_threads (tenant_id, thread_id, created_at) VALUES ('default', 'dup', 0)`
      yield* run("Test", "insert", insert)
      assertPermanent(yield* storeFailure(run("Test", "insert", insert)), "Constraint")
    }))

  it.effect("a missing table (a schema that does not match) is a permanent Config error", () =>
    Effect.gen(function*() {
      const { sql } = yield* Env
      assertPermanent(yield* storeFailure(run("Test", "read", () => sql`SELECT * FROM baton_no_such_table`)), "Config")
    }))

  it.effect("a lock wait that timed out is a transient Busy error that says it can be retried", () =>
    Effect.gen(function*() {
      const { sql } = yield* Env
      const held = yield* Deferred.make<void>()
      const done = yield* Deferred.make<void>()
      const holder = yield* sql.withTransaction(
        sql`SELECT pg_advisory_xact_lock(${7}, ${8})`.pipe(Effect.andThen(Deferred.succeed(held, void 0)), Effect.andThen(Deferred.await(done)))
      ).pipe(Effect.forkChild)
      yield* Deferred.await(held)
      const error = yield* storeFailure(run("Test", "lock", () =>
        sql.withTransaction(Effect.andThen(sql`SET LOCAL lock_timeout = '50ms'`, sql`SELECT pg_advisory_xact_lock(${7}, ${8})`))
      ))
      yield* Deferred.succeed(done, void 0)
      yield* Fiber.join(holder)
      assertTransient(error, "Busy")
    }))

  it.effect("an unreachable server at build is a transient Connection error", () =>
    Effect.gen(function*() {
      const error = yield* Layer.build(PgStores.layer({ url: "postgres://postgres@127.0.0.1:1/test", connectTimeout: "500 millis" })).pipe(
        Effect.scoped,
        Effect.flip
      ) as Effect.Effect<StoreError>
      assert.strictEqual(error._tag, "StoreError")
      assertTransient(error, "Connection")
    }))
})
