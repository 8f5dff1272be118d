/**
 * `LeaseStore` over any `SqlClient` (SQLite, Postgres): one row per tree.
 *
 * A released lease keeps its row (holder NULL) so the epoch never goes back.
 *
 * Invariant: for one (holder, epoch) the stored `expires_at` only moves
 * forward. `renew` keeps the later of the stored expiry and `now + ttl`, so a
 * renewal that lands after a later one (the background renewal and a
 * renewing checkpoint write of one holder, out of order) or asks a shorter
 * lease never shortens it. The holder trusts its latest confirmed expiry, and
 * the fenced checkpoint writes rely on it (`SqlCheckpointStore`: a write
 * guarded by the remembered expiry, and a renewal only when one is due).
 * `acquire` is one `INSERT … ON CONFLICT … DO UPDATE … WHERE … RETURNING`:
 * atomic on both databases without a transaction.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as LeaseStore from "../../src/stores/LeaseStore.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import { firstOf, run } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "LeaseStore"

/**
 * The backend over the client (no migration; use {@link layer} or run `SqlMigrations.migrate` first).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<LeaseStore.LeaseStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { sql, tables: t } = yield* Store.open(options)
    const leases = t.leases
    const leaseOf = (key: LeaseRows.TreeKey) => firstOf((row) => LeaseRows.toLease(key, row))

    const impl: LeaseStore.LeaseStoreShape = {
      acquire: (tenantId, rootExecutionId, holder, ttl, now) =>
        run(store, "acquire", () => Effect.map(LeaseRows.acquire(sql, leases, { tenantId, rootExecutionId }, holder, ttl, now), leaseOf({ tenantId, rootExecutionId }))),
      // Never backward (see the invariant above): the later of the stored expiry and now + ttl.
      renew: (lease, ttl, now) => run(store, "renew", () => Effect.map(LeaseRows.renew(sql, leases, lease, ttl, now), (rows) => rows.length > 0)),
      release: (lease) => run(store, "release", () => Effect.map(LeaseRows.release(sql, leases, lease), (rows) => rows.length > 0)),
      get: (tenantId, rootExecutionId) =>
        run(store, "get", () => Effect.map(LeaseRows.get(sql, leases, { tenantId, rootExecutionId }), leaseOf({ tenantId, rootExecutionId }))),
      // One statement for a page of roots, each answered by the primary key index (see `LeaseRows.getMany`).
      getMany: (roots) =>
        run(store, "getMany", () =>
          Effect.map(
            LeaseRows.getMany(sql, leases, roots),
            (rows) => rows.map((row: any) => LeaseRows.toLease({ tenantId: row.tenant_id, rootExecutionId: row.root_execution_id }, row))
          )),
      ping: Store.ping(store, sql),
      takeOver: (lease, holder, ttl, now) =>
        run(store, "takeOver", () => Effect.map(LeaseRows.takeOver(sql, leases, lease, holder, ttl, now), leaseOf(lease)))
    }
    return LeaseStore.make(impl)
  })

/**
 * `LeaseStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<LeaseStore.LeaseStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(LeaseStore.LeaseStore, make, options)
