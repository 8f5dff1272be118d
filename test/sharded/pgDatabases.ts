/**
 * Three Postgres databases on the local server (127.0.0.1:5432, or the
 * server of `BATON_TEST_PG_URL`): `baton_shard_a`, `_b`, `_c`, created when
 * missing. No vitest here: the benchmarks use it too.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { url, withAdmin } from "../pg/admin.ts"

/** The shards' names. */
export const shardNames = ["a", "b", "c"] as const

/** The URL of shard `name`'s database. */
export const shardUrl = (name: string): string => {
  const u = new URL(url)
  u.pathname = `/baton_shard_${name}`
  return u.toString()
}

/** Runs `f` on a one-connection client to the database at `target` (a shard's URL). */
export const onShard = <A, E>(target: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(target), maxConnections: 1 }), f)).pipe(Effect.provide(Reactivity.layer))
  )

/** Creates the shards' databases that are missing (under a session advisory lock: test files run at once). */
export const ensureDatabases = (): Promise<void> =>
  withAdmin((sql) =>
    Effect.acquireUseRelease(
      sql`SELECT pg_advisory_lock(72011)`,
      () =>
        Effect.forEach(shardNames, (name) =>
          Effect.gen(function*() {
            const db = `baton_shard_${name}`
            const found = yield* sql`SELECT 1 FROM pg_database WHERE datname = ${db}`
            if (found.length === 0) yield* sql.unsafe(`CREATE DATABASE ${db}`)
          }), { discard: true }),
      () => Effect.ignore(sql`SELECT pg_advisory_unlock(72011)`)
    ))

