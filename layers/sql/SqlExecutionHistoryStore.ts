/**
 * `ExecutionHistoryStore` over any `SqlClient`: one row per ended root
 * execution, the snapshot as JSON text.
 *
 * `saveIfAbsent` is one statement — `INSERT … SELECT … WHERE EXISTS (the
 * lease is still this holder's) ON CONFLICT DO NOTHING RETURNING` — so the
 * fence and the write are one atomic step: on SQLite under the database
 * write lock; on Postgres the lease row is read `FOR SHARE`, so a takeover
 * committing at the same time either waits for the save or makes it see
 * the new holder and write nothing.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as ExecutionHistoryStore from "../../src/stores/ExecutionHistoryStore.ts"
import { firstOf, fromJson, run } from "./internal/rows.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

const store = "ExecutionHistoryStore"

/**
 * The backend over the client, without migration or argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<ExecutionHistoryStore.ExecutionHistoryStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // Sorted reads bind keys and write limits so that SQLite compiles them once (see internal/stablePlan.ts).
    const { isPg, limitOf, sortedKey, sql, tables: t } = yield* Store.open(options)
    const history = sql(t.history)
    const toSnapshot = (row: { snapshot: unknown }) => fromJson(row.snapshot) as ExecutionHistoryStore.ExecutionSnapshot

    return {
      saveIfAbsent: (s, lease, now) =>
        run(store, "saveIfAbsent", () =>
          LeaseRows.insertIfAbsent(sql, t.leases, "history snapshot", lease, now,
            sql`INSERT INTO ${history} (tenant_id, execution_id, workflow_name, ended_at, snapshot)
              SELECT ${s.tenantId}, ${s.executionId}, ${s.workflowName}, ${isPg ? sql`CAST(${s.endedAt} AS BIGINT)` : sql`${s.endedAt}`}, ${JSON.stringify(s)}
              WHERE EXISTS (${LeaseRows.live(sql, t.leases, lease, now)})
              ON CONFLICT (tenant_id, execution_id) DO NOTHING
              RETURNING execution_id`,
            Effect.map(
              sql`SELECT 1 AS found FROM ${history} WHERE tenant_id = ${s.tenantId} AND execution_id = ${s.executionId}`,
              (kept) => kept.length > 0
            )
          )),
      get: (tenantId, executionId) =>
        run(store, "get", () => Effect.map(
          sql<{ snapshot: unknown }>`SELECT snapshot FROM ${history} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}`,
          firstOf(toSnapshot)
        )),
      list: (q) =>
        run(store, "list", () => Effect.map(
          sql<{ snapshot: unknown }>`SELECT snapshot FROM ${history}
            WHERE tenant_id = ${sortedKey(q.tenantId)}
              ${q.workflowName === undefined ? sql`` : sql`AND workflow_name = ${sortedKey(q.workflowName)}`}
              ${q.from === undefined ? sql`` : sql`AND ended_at >= ${q.from}`}
              ${q.to === undefined ? sql`` : sql`AND ended_at < ${q.to}`}
              ${q.after === undefined ? sql`` : sql`AND (ended_at > ${q.after.endedAt} OR (ended_at = ${q.after.endedAt} AND execution_id > ${q.after.executionId}))`}
            ORDER BY ended_at, execution_id
            LIMIT ${limitOf(q.limit)}`,
          (rows) => rows.map(toSnapshot)
        )),
      deleteExecutions: (tenantId, executionIds) =>
        run(store, "deleteExecutions", () =>
          Effect.map(
            Effect.forEach(chunksOf(executionIds, 400), (part) =>
              sql`DELETE FROM ${history} WHERE tenant_id = ${tenantId} AND execution_id IN ${sql.in(part)} RETURNING execution_id`),
            (parts) => parts.reduce((n, rows) => n + rows.length, 0)
          )),
      deleteEndedBefore: (cutoff, limit) =>
        run(store, "deleteEndedBefore", () => Store.deleteBatch(sql, t.history, "execution_id", sql`ended_at < ${cutoff}`, "ended_at", limit)),
      ping: Store.ping(store, sql)
    } satisfies ExecutionHistoryStore.ExecutionHistoryStoreShape
  })

const constructors = Store.constructors(ExecutionHistoryStore.ExecutionHistoryStore, ExecutionHistoryStore.make, makeBackend)

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `ExecutionHistoryStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires
 * `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
