/**
 * What the Postgres benchmarks of one store share: the database they use, a
 * fresh schema of their own, one store per simulated instance (each over its
 * own pool of one connection, the schema migrated), and running the bench so
 * that its connections close and the schema is dropped however it ends.
 */
import { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import type { SqlClient } from "effect/sql"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"

/** The database: BATON_PG_URL, by default the local `test` database. */
export const url = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

/** A schema name no other run uses: `<prefix>_<random>`. */
export const freshSchema = (prefix: string) => `${prefix}_${Math.random().toString(36).slice(2, 8)}`

/** `count` stores made by `make`, each over its own pool of one connection to `schema` (migrated first). */
export const storesPerConnection = <S, E>(
  count: number,
  schema: string,
  make: Effect.Effect<S, E, SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const stores: Array<S> = []
    for (let i = 0; i < count; i++) {
      const context = yield* Layer.build(PgClient.layer({ url, schema, maxConnections: 1 }))
      stores.push(yield* Effect.provide(Effect.andThen(PgMigrations.migrate({ schema }), make), context))
    }
    return stores as ReadonlyArray<S>
  })

const dropSchema = (schema: string) =>
  Effect.scoped(Effect.flatMap(
    EffectPgClient.make({ url: Redacted.make(url), maxConnections: 1 }),
    (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
  )).pipe(Effect.provide(Reactivity.layer))

/** Runs `main` in a scope it owns; then closes the scope (its connections) and drops `schema`, however `main` ended. */
export const runInSchema = async <A, E>(schema: string, main: Effect.Effect<A, E, Scope.Scope>): Promise<A> => {
  const scope = Effect.runSync(Scope.make())
  try {
    return await Effect.runPromise(Scope.provide(main, scope))
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await Effect.runPromise(dropSchema(schema))
  }
}
