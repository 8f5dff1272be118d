/**
 * `LedgerStore` over any `SqlClient`: one row per (tenant, scope, scope id, day).
 *
 * `add` with a limit is one upsert whose update only happens when the new
 * total stays within the limit, so concurrent adds never pass it; the total
 * reported with `WouldExceed` is read in the same transaction.
 *
 * @since 0.1.0
 */
import { Array as Arr, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as LedgerStore from "../../src/stores/LedgerStore.ts"
import { num, run, transaction } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "LedgerStore"

/** Days read by one statement of `totals` (well under both databases' bound on parameters). */
const maxDays = 500

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<LedgerStore.LedgerStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { sql, tables: t } = yield* Store.open(options)
    const ledger = sql(t.ledger)

    const total = (key: LedgerStore.LedgerKey) =>
      Effect.map(
        sql`SELECT total FROM ${ledger}
            WHERE tenant_id = ${key.tenantId} AND scope = ${key.scope} AND scope_id = ${key.scopeId} AND day = ${key.day}`,
        (rows) => rows.length === 0 ? 0 : num(rows[0].total)
      )

    const impl: LedgerStore.LedgerStoreShape = {
      add: (key, amount, limit) =>
        run(store, "add", () => transaction(sql, Effect.gen(function*() {
          if (limit !== undefined && amount > limit) {
            return { _tag: "WouldExceed", total: yield* total(key), limit } satisfies LedgerStore.LedgerResult
          }
          const rows = limit === undefined
            ? yield* sql`INSERT INTO ${ledger} AS cur (tenant_id, scope, scope_id, day, total)
                VALUES (${key.tenantId}, ${key.scope}, ${key.scopeId}, ${key.day}, ${amount})
                ON CONFLICT (tenant_id, scope, scope_id, day) DO UPDATE SET total = cur.total + excluded.total
                RETURNING total`
            : yield* sql`INSERT INTO ${ledger} AS cur (tenant_id, scope, scope_id, day, total)
                VALUES (${key.tenantId}, ${key.scope}, ${key.scopeId}, ${key.day}, ${amount})
                ON CONFLICT (tenant_id, scope, scope_id, day) DO UPDATE SET total = cur.total + excluded.total
                WHERE cur.total + excluded.total <= ${limit}
                RETURNING total`
          if (rows.length > 0) return { _tag: "Added", total: num(rows[0].total) } satisfies LedgerStore.LedgerResult
          return { _tag: "WouldExceed", total: yield* total(key), limit: limit! } satisfies LedgerStore.LedgerResult
        }))),
      get: (key) => run(store, "get", () => total(key)),
      // One statement per `maxDays` days (a long execution's spend reads every day it lasted).
      totals: (key, days) =>
        run(store, "totals", () =>
          Effect.map(
            Effect.forEach(Arr.chunksOf(days, maxDays), (some) =>
              sql<{ day: string; total: unknown }>`SELECT day, total FROM ${ledger}
                WHERE tenant_id = ${key.tenantId} AND scope = ${key.scope} AND scope_id = ${key.scopeId} AND day IN ${sql.in(some)}`),
            (pages) => {
              const found = new Map(pages.flat().map((row) => [String(row.day), num(row.total)]))
              return days.map((day) => found.get(day) ?? 0)
            }
          )),
      ping: Store.ping(store, sql)
    }
    return LedgerStore.make(impl)
  })

/**
 * `LedgerStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<LedgerStore.LedgerStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(LedgerStore.LedgerStore, make, options)
