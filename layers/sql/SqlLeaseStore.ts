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
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import type { Lease } from "../../src/stores/Lease.ts"
import { LeaseStore, type LeaseStoreShape } from "../../src/stores/LeaseStore.ts"
import { num, run } from "./internal/rows.ts"
import { takeOver } from "./internal/takeover.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "LeaseStore"

/**
 * The backend over the client (no migration; use {@link layer} or run `SqlMigrations.migrate` first).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<LeaseStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* SqlTables.make(options)
    const leases = sql(t.leases)
    const later = sql.literal(sql.onDialectOrElse({ pg: () => "GREATEST", orElse: () => "MAX" }))

    const toLease = (tenantId: string, rootExecutionId: string, row: any): Lease => ({
      tenantId,
      rootExecutionId,
      holder: row.holder,
      epoch: num(row.epoch),
      expiresAt: num(row.expires_at)
    })

    const impl: LeaseStoreShape = {
      acquire: (tenantId, root, holder, ttl, now) =>
        run(store, "acquire", () => Effect.map(
          sql`INSERT INTO ${leases} AS cur (tenant_id, root_execution_id, holder, epoch, expires_at)
              VALUES (${tenantId}, ${root}, ${holder}, 1, ${now + ttl})
              ON CONFLICT (tenant_id, root_execution_id) DO UPDATE SET
                epoch = CASE WHEN cur.holder = excluded.holder AND cur.expires_at > ${now} THEN cur.epoch ELSE cur.epoch + 1 END,
                holder = excluded.holder,
                expires_at = excluded.expires_at
              WHERE cur.holder IS NULL OR cur.expires_at <= ${now} OR cur.holder = excluded.holder
              RETURNING holder, epoch, expires_at`,
          (rows) => rows.length === 0 ? Option.none() : Option.some(toLease(tenantId, root, rows[0]))
        )),
      renew: (lease, ttl, now) =>
        run(store, "renew", () => Effect.map(
          // Never backward (see the invariant above): the later of the stored expiry and now + ttl.
          sql`UPDATE ${leases} SET expires_at = ${later}(expires_at, ${now + ttl})
              WHERE tenant_id = ${lease.tenantId} AND root_execution_id = ${lease.rootExecutionId}
                AND holder = ${lease.holder} AND epoch = ${lease.epoch} AND expires_at > ${now}
              RETURNING epoch`,
          (rows) => rows.length > 0
        )),
      release: (lease) =>
        run(store, "release", () => Effect.map(
          sql`UPDATE ${leases} SET holder = NULL
              WHERE tenant_id = ${lease.tenantId} AND root_execution_id = ${lease.rootExecutionId}
                AND holder = ${lease.holder} AND epoch = ${lease.epoch}
              RETURNING epoch`,
          (rows) => rows.length > 0
        )),
      get: (tenantId, root) =>
        run(store, "get", () => Effect.map(
          sql`SELECT holder, epoch, expires_at FROM ${leases}
              WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} AND holder IS NOT NULL`,
          (rows) => rows.length === 0 ? Option.none() : Option.some(toLease(tenantId, root, rows[0]))
        )),
      // One statement for a page of roots, each answered by the primary key index. On Postgres the keys go as one
      // JSON parameter (one statement text whatever the count), each looked up by a LATERAL subquery whose LIMIT
      // keeps it a per-key index lookup (joined plainly, the planner hashes a small table whole: a seq scan
      // that grows with it); elsewhere an OR of primary-key equalities.
      getMany: (roots) =>
        run(store, "getMany", () => Effect.map(
          sql.onDialectOrElse({
            pg: () =>
              sql`SELECT l.tenant_id, l.root_execution_id, l.holder, l.epoch, l.expires_at
                  FROM jsonb_array_elements(${JSON.stringify(roots.map((r) => [r.tenantId, r.rootExecutionId]))}::jsonb) AS k
                  CROSS JOIN LATERAL (SELECT * FROM ${leases}
                    WHERE tenant_id = k->>0 AND root_execution_id = k->>1 AND holder IS NOT NULL LIMIT 1) AS l`,
            orElse: () =>
              sql`SELECT tenant_id, root_execution_id, holder, epoch, expires_at FROM ${leases}
                  WHERE holder IS NOT NULL AND (${
                sql.or(roots.map((r) => sql`(tenant_id = ${r.tenantId} AND root_execution_id = ${r.rootExecutionId})`))
              })`
          }),
          (rows) => rows.map((row: any) => toLease(row.tenant_id, row.root_execution_id, row))
        )),
      ping: run(store, "ping", () => Effect.asVoid(sql`SELECT 1`)),
      takeOver: takeOver(sql, t.leases)
    }
    return LeaseStore.make(impl)
  })

/**
 * `LeaseStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<LeaseStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Layer.effect(LeaseStore, Effect.andThen(SqlMigrations.requireMigrated(options), make(options)))
