/**
 * baton's schema on Postgres: the migrations of `layers/sql` (`SqlMigrations`),
 * run once however many instances start at the same moment.
 *
 * An instance whose database is already at the latest version only reads the
 * version (one round trip, no lock). Otherwise, in one transaction, it takes a
 * transaction-scoped advisory lock keyed by (schema, table prefix), creates
 * the schema if one is named, and runs the missing migrations. The others
 * wait on the lock, then find nothing to do; the lock goes with the
 * transaction, so a crashed migrator never leaves it behind. A connection lost
 * under a migration rolls its transaction back; the migration runs again on a
 * new connection (up to 5 times, 200 ms apart on the Clock). Two deployments
 * with different schemas or prefixes lock different keys.
 *
 * @since 0.1.0
 */
import { Effect, type Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { type BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { againOnLostConnection } from "./internal/lostConnection.ts"
import { kindOf } from "../sql/internal/classify.ts"
import { checkSchema } from "./PgClient.ts"
import { sqlErrorDetail, transaction } from "../sql/internal/rows.ts"
import * as SqlMigrations from "../sql/SqlMigrations.ts"
import * as SqlTables from "../sql/SqlTables.ts"

/**
 * The options of the Postgres migrations: the table prefix, an optional schema, and `upTo` for tests of upgrades.
 *
 * @category models
 * @since 0.1.0
 */
export interface PgMigrateOptions extends SqlMigrations.MigrateOptions {
  /** The schema the client's `search_path` names (see `PgClient`); created when missing. */
  readonly schema?: string | undefined
}

/**
 * The advisory lock's first key: "btn". The second is a hash of (schema, prefix).
 *
 * @category utils
 * @since 0.1.0
 */
export const lockClass = 0x62746e

/** 32-bit FNV-1a of `text`, as a signed int4. */
const hash32 = (text: string): number => {
  let h = 0x811c9dc5
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte
    h = Math.imul(h, 0x01000193)
  }
  return h | 0
}

/**
 * The advisory lock key `(lockClass, key)` migrations of these options take.
 *
 * @category utils
 * @since 0.1.0
 */
export const lockKey = (options: PgMigrateOptions): number =>
  hash32(`${options.schema ?? ""}.${options.tablePrefix ?? SqlTables.defaultTablePrefix}`)

const failed = (operation: string) => (e: SqlError) =>
  new StoreError({ store: "PgMigrations", operation, reason: sqlErrorDetail(e), kind: kindOf(e), cause: e })

/**
 * Brings the database (the schema, when named) to the latest version, or
 * `upTo`; answers the migrations this call applied (none when another
 * instance did it first). Safe to call at every start, from any number of
 * instances at once.
 *
 * @category utils
 * @since 0.1.0
 */
export const migrate = (options: PgMigrateOptions = {}): Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  StoreError | BatonConfigError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    yield* checkSchema(options.schema)
    const target = options.upTo ?? SqlMigrations.latestVersion
    if ((yield* SqlMigrations.currentVersion(options)) >= target) return []
    const sql = yield* SqlClient.SqlClient
    return yield* transaction(sql, Effect.gen(function*() {
      yield* sql`SELECT pg_advisory_xact_lock(${lockClass}, ${lockKey(options)})`.pipe(Effect.mapError(failed("lock")))
      if (options.schema !== undefined) {
        yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(options.schema)}`.pipe(Effect.mapError(failed("createSchema")))
      }
      return yield* SqlMigrations.migrate(options)
    })).pipe(Effect.mapError((e) => e._tag === "SqlError" ? failed("migrate")(e) : e))
  }).pipe(againOnLostConnection)

/**
 * Migrates the Postgres database (the schema, when named) of the `SqlClient`
 * in context (a `PgClient.layer`) once, at build, under the advisory lock of
 * `migrate`; provides `SqlMigrations.Migrated`, which every SQL store Layer
 * requires.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: (options?: PgMigrateOptions) => Layer.Layer<SqlMigrations.Migrated, StoreError | BatonConfigError, SqlClient.SqlClient> = (
  options = {}
) => SqlMigrations.layerWith(migrate)(options)
