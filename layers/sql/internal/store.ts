/**
 * What every SQL store is built from: the client and its table names (with
 * the helpers that keep SQLite's plans, see `stablePlan.ts`), its `ping`, its
 * Layer over a migrated schema, and the batched delete the retention sweeps
 * run.
 */
import { type Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { BatonConfigError } from "../../../src/stores/Errors.ts"
import * as SqlMigrations from "../SqlMigrations.ts"
import * as SqlTables from "../SqlTables.ts"
import { num, run } from "./rows.ts"
import { keyEquals, literalLimit } from "./stablePlan.ts"

/** A store's client and tables. */
export interface Store {
  readonly sql: SqlClient.SqlClient
  readonly tables: SqlTables.SqlTables
  /** Whether the client is Postgres. */
  readonly isPg: boolean
  /** Sorted reads bind keys with it so that SQLite compiles them once. */
  readonly sortedKey: (value: string) => Fragment
  /** Limits are written into the statement with it so that SQLite compiles it once. */
  readonly limitOf: (limit: number) => Fragment
}

/** The client in context and the tables `options` name. */
export const open = (options: SqlTables.SqlStoreOptions): Effect.Effect<Store, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const tables = yield* SqlTables.make(options)
    return {
      sql,
      tables,
      isPg: sql.onDialectOrElse({ pg: () => true, orElse: () => false }),
      sortedKey: keyEquals(sql),
      limitOf: literalLimit(sql)
    }
  })

/** A store's `ping`: one round trip. */
export const ping = (store: string, sql: SqlClient.SqlClient) => run(store, "ping", () => Effect.asVoid(sql`SELECT 1`))

/**
 * The Layer of a store made by `make(options)`, over the schema a migrations
 * Layer migrated with the same options (`SqlMigrations.requireMigrated`).
 */
export const migratedLayer = <I, S, R>(
  tag: Context.Key<I, S>,
  make: (options: SqlTables.SqlStoreOptions) => Effect.Effect<S, BatonConfigError, R>,
  options: SqlTables.SqlStoreOptions
): Layer.Layer<I, BatonConfigError, R | SqlMigrations.Migrated> =>
  Layer.effect(tag, Effect.andThen(SqlMigrations.requireMigrated(options), make(options)))

/**
 * The smallest `column` (a time) of the rows of `table` that match `where`,
 * or none: what a store's `nextDue` reads.
 */
export const earliest = (sql: SqlClient.SqlClient, table: string, column: string, where: Fragment) =>
  Effect.map(
    sql`SELECT ${sql(column)} AS at FROM ${sql(table)} WHERE ${where} ORDER BY ${sql(column)} LIMIT 1`,
    (rows) => rows.length === 0 ? Option.none<number>() : Option.some(num(rows[0]!.at))
  )

/**
 * Deletes the row of `table` keyed `(tenant_id, <key>)`; answers whether
 * there was one.
 */
export const deleteKeyed = (sql: SqlClient.SqlClient, table: string, key: string, tenantId: string, id: string) =>
  Effect.map(
    sql`DELETE FROM ${sql(table)} WHERE tenant_id = ${tenantId} AND ${sql(key)} = ${id} RETURNING ${sql(key)}`,
    (rows) => rows.length > 0
  )

/**
 * A store module's `make` (its backend behind the contract's checks, no
 * migration) and `layer` (that, over a schema a migrations Layer migrated):
 * what every SQL store module exports, made once here.
 */
export const constructors = <I, S, B>(
  tag: Context.Key<I, S>,
  contract: (backend: B) => S,
  makeBackend: (options: SqlTables.SqlStoreOptions) => Effect.Effect<B, BatonConfigError, SqlClient.SqlClient>
) => {
  const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<S, BatonConfigError, SqlClient.SqlClient> =>
    Effect.map(makeBackend(options), contract)
  const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<I, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
    migratedLayer(tag, make, options)
  return { make, layer } as const
}

/**
 * Deletes at most `limit` rows of `table` matching `where`, in `orderBy`
 * order, each found by its key `(tenant_id, <key>)`; answers how many went.
 */
export const deleteBatch = (sql: SqlClient.SqlClient, table: string, key: string, where: Fragment, orderBy: string, limit: number) => {
  const keys = sql.literal(`tenant_id, ${key}`)
  return Effect.map(
    sql`DELETE FROM ${sql(table)} WHERE (${keys}) IN (
          SELECT ${keys} FROM ${sql(table)} WHERE ${where} ORDER BY ${sql.literal(orderBy)} LIMIT ${literalLimit(sql)(limit)}
        ) RETURNING ${sql.literal(key)}`,
    (rows) => rows.length
  )
}
