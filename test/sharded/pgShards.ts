/**
 * Three Postgres databases on the local server (127.0.0.1:5432, or the
 * server of `BATON_TEST_PG_URL`): `baton_shard_a`, `_b`, `_c`, created when
 * missing. Each test file works in a schema of its own in every one of
 * them, dropped after the file.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { afterAll } from "vitest"
import { randomName, url, withAdmin } from "../pg/db.ts"

/** The shards' names. */
export const shardNames = ["a", "b", "c"] as const

/** The URL of shard `name`'s database. */
export const shardUrl = (name: string): string => {
  const u = new URL(url)
  u.pathname = `/baton_shard_${name}`
  return u.toString()
}

const onDatabase = <A, E>(target: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(target), maxConnections: 1 }), f)).pipe(Effect.provide(Reactivity.layer))
  )

/** Creates the shards' databases that are missing. */
export const ensureDatabases = (): Promise<void> =>
  withAdmin((sql) =>
    Effect.forEach(shardNames, (name) =>
      Effect.gen(function*() {
        const db = `baton_shard_${name}`
        const found = yield* sql`SELECT 1 FROM pg_database WHERE datname = ${db}`
        // Two files may race to create it: the loser's "already exists" is fine.
        if (found.length === 0) yield* sql.unsafe(`CREATE DATABASE ${db}`).pipe(Effect.ignore)
      }), { discard: true }))

/** A schema name for this file in every shard's database, dropped after the file. Call it at the top level. */
export const shardSchema = (name: string): string => {
  const schema = randomName(`baton_t_${name}`)
  afterAll(() =>
    Promise.all(shardNames.map((shard) => onDatabase(shardUrl(shard), (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))).then(() => undefined)
  )
  return schema
}

/** Runs `f` on a one-connection client to shard `name`'s database. */
export const onShard = onDatabase
