/**
 * `EventStore` over any `SqlClient`: one row per event, keyed (tenant,
 * thread, id), unique by (tenant, thread, key).
 *
 * `append` is one statement — `INSERT … SELECT … FROM (VALUES …) CROSS JOIN
 * (the thread's top id) WHERE EXISTS (the lease is still this holder's) AND
 * NOT EXISTS (the key is held) RETURNING` — so the fence, the numbering and
 * the write are one atomic step: on SQLite under the database write lock; on
 * Postgres the lease row is read `FOR SHARE`, so a takeover committing at the
 * same time either waits for the append or makes it see the new holder and
 * append nothing. Only the tree's holder appends to its thread, so two
 * appends never number one thread at once (a race that could only come from
 * two live holders fails on the primary key: a transient error, retried).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as EventStore from "../../src/stores/EventStore.ts"
import { fromJson, num, run, transaction } from "./internal/rows.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "EventStore"

/**
 * The backend over the client, without migration or argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<EventStore.EventStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // Keys of statements that sort (MAX, ORDER BY) are bound so that SQLite compiles them once (see internal/stablePlan.ts).
    const { isPg, limitOf, sortedKey, sql, tables: t } = yield* Store.open(options)
    const events = sql(t.events)
    const big = (n: number) => isPg ? sql`CAST(${n} AS BIGINT)` : sql`${n}`
    const toEvent = (tenantId: string, threadId: string) => (row: any): EventStore.StreamEvent => ({
      id: num(row.event_id),
      tenantId,
      threadId,
      executionId: row.execution_id,
      mode: row.mode as EventStore.EventMode,
      data: fromJson(row.data),
      at: num(row.at),
      instanceId: row.instance_id
    })

    /**
     * SQLite: the same steps as plain statements in one write transaction (under
     * the database write lock: no other writer between the fence and the
     * insert). The one-statement form, with bound values in `VALUES`, made
     * SQLite compile it again on every call.
     */
    const appendSqlite: EventStore.EventStoreShape["append"] = (lease, threadId, list, now) =>
      run(store, "append", () =>
        transaction(sql, Effect.gen(function*() {
          const held = yield* sql`${LeaseRows.live(sql, t.leases, lease, now)}`
          if (held.length === 0) return yield* Effect.flatMap(LeaseRows.refusal(sql, t.leases, "event append", lease, now), Effect.fail)
          const top = yield* sql<{ top: unknown }>`SELECT COALESCE(MAX(event_id), 0) AS top FROM ${events}
            WHERE tenant_id = ${sortedKey(lease.tenantId)} AND thread_id = ${sortedKey(threadId)}`
          const kept = yield* sql<{ event_key: string }>`SELECT event_key FROM ${events}
            WHERE tenant_id = ${lease.tenantId} AND thread_id = ${threadId} AND event_key IN ${sql.in(list.map((e) => e.key))}`
          const held_ = new Set(kept.map((r) => r.event_key))
          const fresh = list.filter((e) => !held_.has(e.key))
          if (fresh.length === 0) return []
          const first = num(top[0]?.top ?? 0) + 1
          const ids = fresh.map((_, i) => first + i)
          yield* sql`INSERT INTO ${events} (tenant_id, thread_id, event_id, event_key, execution_id, mode, data, at, instance_id)
            VALUES ${sql.csv(fresh.map((e, i) =>
              sql`(${lease.tenantId}, ${threadId}, ${ids[i]!}, ${e.key}, ${e.executionId}, ${e.mode}, ${JSON.stringify(e.data ?? null)}, ${e.at}, ${e.instanceId})`
            ))}`
          return ids
        })))

    return {
      append: (lease, threadId, list, now) =>
        !isPg ? appendSqlite(lease, threadId, list, now) : run(store, "append", () =>
          Effect.gen(function*() {
            const values = sql.csv(list.map((e, i) =>
              sql`(${big(i + 1)}, ${e.key}, ${e.executionId}, ${e.mode}, ${JSON.stringify(e.data ?? null)}, ${big(e.at)}, ${e.instanceId})`
            ))
            const rows = yield* sql`INSERT INTO ${events} (tenant_id, thread_id, event_id, event_key, execution_id, mode, data, at, instance_id)
              SELECT ${lease.tenantId}, ${threadId}, m.top + v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7
              FROM (VALUES ${values}) AS v
              CROSS JOIN (SELECT COALESCE(MAX(event_id), 0) AS top FROM ${events} WHERE tenant_id = ${sortedKey(lease.tenantId)} AND thread_id = ${sortedKey(threadId)}) AS m
              WHERE EXISTS (${LeaseRows.live(sql, t.leases, lease, now)})
                AND NOT EXISTS (SELECT 1 FROM ${events} AS e WHERE e.tenant_id = ${lease.tenantId} AND e.thread_id = ${threadId} AND e.event_key = v.column2)
              RETURNING event_id`
            if (rows.length > 0) return rows.map((r: any) => num(r.event_id)).sort((a, b) => a - b)
            // Nothing appended: every key was held (the lease still holds), or the fence refused.
            const held = yield* sql`${LeaseRows.live(sql, t.leases, lease, now)}`
            if (held.length > 0) return []
            return yield* Effect.flatMap(LeaseRows.refusal(sql, t.leases, "event append", lease, now), Effect.fail)
          })),
      read: (tenantId, threadId, after, limit) =>
        run(store, "read", () =>
          Effect.map(
            sql`SELECT event_id, execution_id, mode, data, at, instance_id FROM ${events}
              WHERE tenant_id = ${sortedKey(tenantId)} AND thread_id = ${sortedKey(threadId)} AND event_id > ${after}
              ORDER BY event_id
              LIMIT ${limitOf(limit)}`,
            (rows) => rows.map(toEvent(tenantId, threadId))
          )),
      deleteBefore: (cutoff, limit) =>
        run(store, "deleteBefore", () =>
          Effect.map(
            sql`DELETE FROM ${events} WHERE (tenant_id, thread_id, event_id) IN (
                SELECT e.tenant_id, e.thread_id, e.event_id FROM ${events} AS e
                WHERE e.at < ${cutoff}
                  AND e.event_id < (SELECT MAX(x.event_id) FROM ${events} AS x WHERE x.tenant_id = e.tenant_id AND x.thread_id = e.thread_id)
                ORDER BY e.at LIMIT ${limitOf(limit)}
              ) RETURNING event_id`,
            (rows) => rows.length
          )),
      ping: Store.ping(store, sql)
    } satisfies EventStore.EventStoreShape
  })

const constructors = Store.constructors(EventStore.EventStore, EventStore.make, makeBackend)

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `EventStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires
 * `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
