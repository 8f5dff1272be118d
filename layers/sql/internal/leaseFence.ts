/**
 * The lease checks the SQL stores make inside their own statements: a write
 * fenced by the holder's lease, and the lease row read to say why a write
 * was refused.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { Lease } from "../../../src/stores/Lease.ts"
import type { LeaseRowView } from "../../../src/stores/internal/fence.ts"
import { num, textOrNull } from "./rows.ts"

/**
 * A subquery for `EXISTS (…)`: `lease`'s tree's lease row is still (holder,
 * epoch) and live at `now`. On Postgres the row is read `FOR SHARE`, so a
 * takeover (which locks it `FOR UPDATE`) waits for the write; SQLite runs the
 * statement under its write lock.
 */
export const liveLease = (sql: SqlClient, leasesTable: string, lease: Lease, now: number) =>
  sql`SELECT 1 FROM ${sql(leasesTable)}
    WHERE tenant_id = ${lease.tenantId} AND root_execution_id = ${lease.rootExecutionId}
      AND holder = ${lease.holder} AND epoch = ${lease.epoch} AND expires_at > ${now}${
    sql.onDialectOrElse({ pg: () => sql.literal(" FOR SHARE"), orElse: () => sql.literal("") })
  }`

/** `lease`'s tree's lease row as it is now (`FOR UPDATE` on Postgres when asked), or undefined when there is none. */
export const leaseRow = (sql: SqlClient, leasesTable: string, lease: Lease, options: { readonly forUpdate?: boolean } = {}) =>
  Effect.map(
    sql`SELECT holder, epoch, expires_at FROM ${sql(leasesTable)}
      WHERE tenant_id = ${lease.tenantId} AND root_execution_id = ${lease.rootExecutionId}${
      options.forUpdate === true ? sql.onDialectOrElse({ pg: () => sql.literal(" FOR UPDATE"), orElse: () => sql.literal("") }) : sql.literal("")
    }`,
    (rows): LeaseRowView | undefined =>
      rows.length === 0 ? undefined : { holder: textOrNull(rows[0]!.holder), epoch: num(rows[0]!.epoch), expiresAt: num(rows[0]!.expires_at) }
  )
