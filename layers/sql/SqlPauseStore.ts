/**
 * `PauseStore` over any `SqlClient`. Payloads and decisions are JSON text.
 *
 * Every status move is one conditional `UPDATE … WHERE status = … RETURNING`,
 * so of two instances answering the same pause exactly one moves it.
 *
 * `saveFenced` is one statement — `INSERT … SELECT … WHERE EXISTS (the lease
 * is still this holder's) ON CONFLICT DO NOTHING RETURNING` — so the fence
 * and the write are one atomic step, as the tree store's fenced save: on
 * SQLite under the database write lock; on Postgres the lease row is read
 * `FOR SHARE`, so a takeover committing at the same time either waits for the
 * save (and then finds the pause) or makes it see the new holder and write
 * nothing. It checks the leases table of its own database: keep the
 * `LeaseStore` there (with leases elsewhere, check them first, as
 * `examples/redis-store` does).
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { type BatonConfigError, NotPausedError, UnknownPauseError } from "../../src/stores/Errors.ts"
import type { Pause, PauseStatus } from "../../src/stores/Pause.ts"
import * as PauseStore from "../../src/stores/PauseStore.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import { firstOf, fromJson, num, numOrNull, run, textOrNull, toJson } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "PauseStore"

const toPause = (row: any): Pause => ({
  tenantId: row.tenant_id,
  threadId: row.thread_id,
  pauseId: row.pause_id,
  rootExecutionId: row.root_execution_id,
  executionId: row.execution_id,
  interruptId: row.interrupt_id,
  payload: fromJson(row.payload),
  status: row.status as PauseStatus,
  decision: fromJson(row.decision),
  createdAt: num(row.created_at),
  resolvedAt: numOrNull(row.resolved_at),
  resolvedBy: textOrNull(row.resolved_by)
})

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<PauseStore.PauseStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // Sorted reads bind keys and write limits so that SQLite compiles them once (see internal/stablePlan.ts).
    const { limitOf, sortedKey, sql, tables: t } = yield* Store.open(options)
    const pauses = sql(t.pauses)

    const get = (tenantId: string, pauseId: string) => Effect.map(sql`SELECT * FROM ${pauses} WHERE tenant_id = ${tenantId} AND pause_id = ${pauseId}`, firstOf(toPause))

    const impl: PauseStore.PauseStoreBackend = {
      save: (p) =>
        run(store, "save", () => Effect.map(
          sql`INSERT INTO ${pauses} (tenant_id, pause_id, thread_id, root_execution_id, execution_id, interrupt_id,
                payload, status, decision, created_at, resolved_at, resolved_by)
              VALUES (${p.tenantId}, ${p.pauseId}, ${p.threadId}, ${p.rootExecutionId}, ${p.executionId}, ${p.interruptId},
                ${toJson(p.payload)}, 'Pending', NULL, ${p.createdAt}, NULL, NULL)
              ON CONFLICT (tenant_id, pause_id) DO NOTHING
              RETURNING pause_id`,
          (rows) => rows.length > 0
        )),
      saveFenced: (p, lease, now) =>
        run(store, "saveFenced", () =>
          // decision, resolved_at and resolved_by are left out: NULL (a bare NULL in a SELECT list would be text on Postgres).
          LeaseRows.insertIfAbsent(sql, t.leases, "pause save", lease, now,
            sql`INSERT INTO ${pauses} (tenant_id, pause_id, thread_id, root_execution_id, execution_id,
                interrupt_id, payload, status, created_at)
              SELECT ${p.tenantId}, ${p.pauseId}, ${p.threadId}, ${p.rootExecutionId}, ${p.executionId}, ${p.interruptId},
                ${toJson(p.payload)}, 'Pending', ${p.createdAt}
              WHERE EXISTS (${LeaseRows.live(sql, t.leases, lease, now)})
              ON CONFLICT (tenant_id, pause_id) DO NOTHING
              RETURNING pause_id`,
            Effect.map(get(p.tenantId, p.pauseId), Option.isSome)
          )),
      get: (tenantId, pauseId) => run(store, "get", () => get(tenantId, pauseId)),
      resolve: (input) =>
        run(store, "resolve", () => Effect.gen(function*() {
          const rows = yield* sql`UPDATE ${pauses}
            SET status = 'Resolved', decision = ${toJson(input.decision)}, resolved_at = ${input.now}, resolved_by = ${input.resolvedBy}
            WHERE tenant_id = ${input.tenantId} AND pause_id = ${input.pauseId} AND status = 'Pending'
            RETURNING *`
          if (rows.length > 0) return toPause(rows[0])
          const existing = yield* get(input.tenantId, input.pauseId)
          if (Option.isNone(existing)) {
            return yield* new UnknownPauseError({ tenantId: input.tenantId, pauseId: input.pauseId })
          }
          return yield* new NotPausedError({ tenantId: input.tenantId, pauseId: input.pauseId, status: existing.value.status })
        })),
      take: (tenantId, pauseId) =>
        run(store, "take", () => Effect.map(
          sql`UPDATE ${pauses} SET status = 'Taken'
              WHERE tenant_id = ${tenantId} AND pause_id = ${pauseId} AND status = 'Resolved'
              RETURNING pause_id`,
          (rows) => rows.length > 0
        )),
      withdraw: (tenantId, pauseId, now) =>
        run(store, "withdraw", () => Effect.map(
          sql`UPDATE ${pauses} SET status = 'Cancelled', resolved_at = COALESCE(resolved_at, ${now})
              WHERE tenant_id = ${tenantId} AND pause_id = ${pauseId} AND status IN ('Pending', 'Resolved')
              RETURNING pause_id`,
          (rows) => rows.length > 0
        )),
      listByRoot: (tenantId, root, statuses) =>
        statuses.length === 0
          ? Effect.succeed([])
          : run(store, "listByRoot", () => Effect.map(
            sql`SELECT * FROM ${pauses}
                WHERE tenant_id = ${sortedKey(tenantId)} AND root_execution_id = ${sortedKey(root)} AND status IN ${sql.in(statuses)}
                ORDER BY created_at, pause_id`,
            (rows) => rows.map(toPause)
          )),
      findResolvedRoots: (limit, after) =>
        run(store, "findResolvedRoots", () => Effect.map(
          Option.isNone(after)
            ? sql`SELECT DISTINCT tenant_id, root_execution_id FROM ${pauses} WHERE status = 'Resolved'
                  ORDER BY tenant_id, root_execution_id LIMIT ${limitOf(limit)}`
            : sql`SELECT DISTINCT tenant_id, root_execution_id FROM ${pauses} WHERE status = 'Resolved'
                    AND (tenant_id, root_execution_id) > (${after.value.tenantId}, ${after.value.rootExecutionId})
                  ORDER BY tenant_id, root_execution_id LIMIT ${limitOf(limit)}`,
          (rows) => rows.map((r: any) => ({ tenantId: r.tenant_id, rootExecutionId: r.root_execution_id }))
        )),
      deleteThread: (tenantId, threadId) =>
        run(store, "deleteThread", () => Effect.map(
          sql`DELETE FROM ${pauses} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId} RETURNING pause_id`,
          (rows) => rows.length
        )),
      deleteSettledBefore: (cutoff) =>
        run(store, "deleteSettledBefore", () => Effect.map(
          sql`DELETE FROM ${pauses} WHERE status IN ('Taken', 'Cancelled') AND resolved_at < ${cutoff}
              RETURNING pause_id`,
          (rows) => rows.length
        )),
      ping: Store.ping(store, sql)
    }
    return PauseStore.make(impl)
  })

/**
 * `PauseStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<PauseStore.PauseStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(PauseStore.PauseStore, make, options)
