/**
 * Every statement over the lease table, in one place: the `LeaseStore`'s
 * own (acquire, renew, release, reads), the conditions the fenced writes of
 * the other stores put in their statements, the checkpoint store's check
 * and push of the lease inside a write, and the read that says why a fenced
 * write was refused.
 *
 * One row per tree, keyed by the primary key (tenant_id, root_execution_id):
 * every statement here looks a row up by that key, so each is one index
 * lookup. Locking on Postgres: a fenced write reads the row `FOR SHARE`
 * ({@link live}) or `FOR UPDATE` ({@link held}, {@link row} when asked), so a
 * takeover waits for the write or the write sees the new holder; SQLite runs
 * each under its database write lock.
 *
 * Each builder takes the client, the table's name and the values, and
 * interpolates the values in the order its doc says: the checkpoint store
 * compiles some of these once and passes the parameters itself.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { Fragment } from "effect/sql/Statement"
import type { LeaseLostError } from "../../../src/stores/Errors.ts"
import type { Lease } from "../../../src/stores/Lease.ts"
import { type LeaseRowView, refused } from "../../../src/stores/internal/fence.ts"
import { num, textOrNull } from "./rows.ts"

/** The tree a lease row is for. */
export interface TreeKey {
  readonly tenantId: string
  readonly rootExecutionId: string
}

const forShare = (sql: SqlClient) => sql.onDialectOrElse({ pg: () => sql.literal(" FOR SHARE"), orElse: () => sql.literal("") })
const forUpdate = (sql: SqlClient) => sql.onDialectOrElse({ pg: () => sql.literal(" FOR UPDATE"), orElse: () => sql.literal("") })

/** The primary key condition; parameters tenant, root. */
const keyOf = (sql: SqlClient, key: TreeKey) => sql`tenant_id = ${key.tenantId} AND root_execution_id = ${key.rootExecutionId}`

/** A row read back as a {@link Lease} of `key`'s tree. */
export const toLease = (key: TreeKey, row: any): Lease => ({
  tenantId: key.tenantId,
  rootExecutionId: key.rootExecutionId,
  holder: row.holder,
  epoch: num(row.epoch),
  expiresAt: num(row.expires_at)
})

/**
 * Takes the lease of `key`'s tree for `holder` until `now + ttl` when it is
 * free at `now` or already `holder`'s (its epoch kept when it is still live,
 * else one more): one `INSERT … ON CONFLICT … DO UPDATE … WHERE … RETURNING`,
 * atomic without a transaction. No row: someone else holds it.
 */
export const acquire = (sql: SqlClient, table: string, key: TreeKey, holder: string, ttl: number, now: number) =>
  sql`INSERT INTO ${sql(table)} AS cur (tenant_id, root_execution_id, holder, epoch, expires_at)
      VALUES (${key.tenantId}, ${key.rootExecutionId}, ${holder}, 1, ${now + ttl})
      ON CONFLICT (tenant_id, root_execution_id) DO UPDATE SET
        epoch = CASE WHEN cur.holder = excluded.holder AND cur.expires_at > ${now} THEN cur.epoch ELSE cur.epoch + 1 END,
        holder = excluded.holder,
        expires_at = excluded.expires_at
      WHERE cur.holder IS NULL OR cur.expires_at <= ${now} OR cur.holder = excluded.holder
      RETURNING holder, epoch, expires_at`

/**
 * Renews `lease` while it is still (holder, epoch) and live at `now`, never
 * backward: the later of the stored expiry and `now + ttl`. A row back: renewed.
 */
export const renew = (sql: SqlClient, table: string, lease: Lease, ttl: number, now: number) =>
  sql`UPDATE ${sql(table)} SET expires_at = ${sql.literal(sql.onDialectOrElse({ pg: () => "GREATEST", orElse: () => "MAX" }))}(expires_at, ${now + ttl})
      WHERE ${keyOf(sql, lease)} AND holder = ${lease.holder} AND epoch = ${lease.epoch} AND expires_at > ${now}
      RETURNING epoch`

/** Releases `lease` while it is still (holder, epoch): the row stays, holder NULL, so the epoch never goes back. */
export const release = (sql: SqlClient, table: string, lease: Lease) =>
  sql`UPDATE ${sql(table)} SET holder = NULL
      WHERE ${keyOf(sql, lease)} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
      RETURNING epoch`

/**
 * `lease` passes to `holder` with epoch + 1 while it is still the dead
 * holder's (same holder, same epoch), whatever its expiry: one conditional
 * `UPDATE … RETURNING`, atomic on SQLite and Postgres without a transaction.
 */
export const takeOver = (sql: SqlClient, table: string, lease: Lease, holder: string, ttl: number, now: number) =>
  sql`UPDATE ${sql(table)} SET holder = ${holder}, epoch = epoch + 1, expires_at = ${now + ttl}
      WHERE ${keyOf(sql, lease)} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
      RETURNING holder, epoch, expires_at`

/** The held lease of `key`'s tree (live or not), none once released. */
export const get = (sql: SqlClient, table: string, key: TreeKey) =>
  sql`SELECT holder, epoch, expires_at FROM ${sql(table)}
      WHERE ${keyOf(sql, key)} AND holder IS NOT NULL`

/**
 * The held leases of a page of trees, each answered by the primary key
 * index. On Postgres the keys go as one JSON parameter (one statement text
 * whatever the count), each looked up by a LATERAL subquery whose LIMIT keeps
 * it a per-key index lookup (joined plainly, the planner hashes a small
 * table whole: a seq scan that grows with it); elsewhere an OR of
 * primary-key equalities. Rows carry their key columns.
 */
export const getMany = (sql: SqlClient, table: string, keys: ReadonlyArray<TreeKey>) =>
  sql.onDialectOrElse({
    pg: () =>
      sql`SELECT l.tenant_id, l.root_execution_id, l.holder, l.epoch, l.expires_at
          FROM jsonb_array_elements(${JSON.stringify(keys.map((r) => [r.tenantId, r.rootExecutionId]))}::jsonb) AS k
          CROSS JOIN LATERAL (SELECT * FROM ${sql(table)}
            WHERE tenant_id = k->>0 AND root_execution_id = k->>1 AND holder IS NOT NULL LIMIT 1) AS l`,
    orElse: () =>
      sql`SELECT tenant_id, root_execution_id, holder, epoch, expires_at FROM ${sql(table)}
          WHERE holder IS NOT NULL AND (${sql.or(keys.map((r) => sql`(${keyOf(sql, r)})`))})`
  })

/**
 * A subquery for `EXISTS (…)`: `lease`'s tree's lease row is still (holder,
 * epoch) and live at `now`. On Postgres the row is read `FOR SHARE`, so a
 * takeover (which locks it `FOR UPDATE`) waits for the write; SQLite runs the
 * statement under its write lock. Parameters: tenant, root, holder, epoch, now.
 */
export const live = (sql: SqlClient, table: string, lease: Lease, now: number) =>
  sql`SELECT 1 FROM ${sql(table)}
    WHERE ${keyOf(sql, lease)} AND holder = ${lease.holder} AND epoch = ${lease.epoch} AND expires_at > ${now}${forShare(sql)}`

/**
 * The expiry of `lease`'s row when it is still (holder, epoch) and live at
 * `now`, locked `FOR UPDATE` on Postgres (a concurrent acquire, renew or
 * release waits for the write's commit); no row otherwise. Parameters:
 * tenant, root, holder, epoch, now.
 */
export const held = (sql: SqlClient, table: string, lease: Lease, now: number) =>
  sql`SELECT expires_at FROM ${sql(table)}
      WHERE ${keyOf(sql, lease)} AND holder = ${lease.holder} AND epoch = ${lease.epoch} AND expires_at > ${now}${forUpdate(sql)}`

/**
 * A condition for `EXISTS (…)`-guarded writes: `lease`'s row is still
 * exactly (holder, epoch, `expiresAt`) — nobody renewed, took or released it
 * since it was read. Parameters: tenant, root, holder, epoch, expiresAt.
 */
export const unchanged = (sql: SqlClient, table: string, lease: Lease, expiresAt: number) =>
  sql`EXISTS (SELECT 1 FROM ${sql(table)} WHERE ${keyOf(sql, lease)} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
        AND expires_at = ${expiresAt})`

/**
 * {@link unchanged} as DDL text for a trigger: the lease is named by columns
 * of the trigger's `NEW` row (SQLite; `internal/checkpointPuts.ts`).
 */
export const unchangedAsOf = (
  table: string,
  row: { readonly tenantId: string; readonly rootExecutionId: string; readonly holder: string; readonly epoch: string; readonly expiresAt: string }
) =>
  `EXISTS (SELECT 1 FROM "${table}" WHERE tenant_id = NEW.${row.tenantId} AND root_execution_id = NEW.${row.rootExecutionId}
    AND holder = NEW.${row.holder} AND epoch = NEW.${row.epoch} AND expires_at = NEW.${row.expiresAt})`

/**
 * Moves the expiry of `key`'s row to `expiresAt`, with no check: for a row
 * the same transaction found held ({@link held}). Parameters: expiresAt,
 * tenant, root.
 */
export const push = (sql: SqlClient, table: string, key: TreeKey, expiresAt: number) =>
  sql`UPDATE ${sql(table)} SET expires_at = ${expiresAt} WHERE ${keyOf(sql, key)}`

/**
 * Postgres, as CTEs of one statement: `lease`, the row {@link held} (locked,
 * empty unless current), and `renewed`, the row pushed to `now + ttl` only
 * when its expiry is before `dueBefore`. The statement's writes read
 * `WHERE EXISTS (SELECT 1 FROM lease)`; its main query selects
 * {@link fencedResult}.
 */
export const fenceCtes = (
  sql: SqlClient,
  table: string,
  lease: Lease,
  at: { readonly now: number; readonly ttlMillis: number; readonly dueBefore: number }
): ReadonlyArray<Fragment> => [
  sql`lease AS MATERIALIZED (${held(sql, table, lease, at.now)})`,
  sql`renewed AS (UPDATE ${sql(table)} SET expires_at = ${at.now + at.ttlMillis}
    WHERE ${keyOf(sql, lease)} AND EXISTS (SELECT 1 FROM lease WHERE expires_at < ${at.dueBefore})
    RETURNING expires_at)`
]

/** The main query of a statement over {@link fenceCtes}: the expiry held (NULL when refused) and the one renewed to (NULL when not due). */
export const fencedResult = (sql: SqlClient) =>
  sql.literal("SELECT (SELECT expires_at FROM lease) AS held, (SELECT expires_at FROM renewed) AS renewed")

/** `key`'s tree's lease row as it is now, any holder or none (`FOR UPDATE` on Postgres when asked). */
export const row = (sql: SqlClient, table: string, key: TreeKey, options: { readonly forUpdate?: boolean } = {}) =>
  sql`SELECT holder, epoch, expires_at FROM ${sql(table)}
    WHERE ${keyOf(sql, key)}${options.forUpdate === true ? forUpdate(sql) : sql.literal("")}`

/** The rows {@link row} answered, as the view {@link refused} reads; undefined when there is no row. */
export const rowView = (rows: ReadonlyArray<any>): LeaseRowView | undefined =>
  rows.length === 0 ? undefined : { holder: textOrNull(rows[0].holder), epoch: num(rows[0].epoch), expiresAt: num(rows[0].expires_at) }

/** {@link row}, read. */
export const readRow = (sql: SqlClient, table: string, key: TreeKey, options: { readonly forUpdate?: boolean } = {}) =>
  Effect.map(row(sql, table, key, options), rowView)

/**
 * The refusal of a fenced `what` by `lease` at `now`, told from the lease row
 * as it is now (read only on the failure path).
 */
export const refusal = (sql: SqlClient, table: string, what: string, lease: Lease, now: number): Effect.Effect<LeaseLostError, SqlError> =>
  Effect.map(readRow(sql, table, lease), (found) => refused(what, found, lease, now))

/**
 * A fenced insert of a row kept once written: true when `insert` (guarded by
 * {@link live}) wrote it, false when it was not written because `kept` finds
 * the row already there, else the refusal of `what` told from the lease row.
 */
export const insertIfAbsent = <E, R>(
  sql: SqlClient,
  table: string,
  what: string,
  lease: Lease,
  now: number,
  insert: Effect.Effect<ReadonlyArray<unknown>, E, R>,
  kept: Effect.Effect<boolean, E, R>
): Effect.Effect<boolean, E | SqlError | LeaseLostError, R> =>
  Effect.flatMap(insert, (inserted) =>
    inserted.length > 0
      ? Effect.succeed(true)
      : Effect.flatMap(kept, (found) => found ? Effect.succeed(false) : Effect.flatMap(refusal(sql, table, what, lease, now), Effect.fail)))
