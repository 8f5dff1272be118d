/**
 * `DebounceStore` over any `SqlClient`: one row per window, its definition
 * and input as JSON text, `open` as 0 / 1.
 *
 * `offer` is one `UPDATE … WHERE open = 1 RETURNING` of the key's open
 * window, else one `INSERT … ON CONFLICT DO NOTHING RETURNING`: the partial
 * unique index of migration 18 (one open window per tenant and key) lets
 * exactly one of concurrent first offers insert; the others update the
 * window it opened. `close` is one compare-and-set on `version`; `due` reads
 * the index over (open, fire_at).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as DebounceStore from "../../src/stores/DebounceStore.ts"
import { type BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { firstOf, fromJson, num, run, toJson } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "DebounceStore"

const windowOf = (row: Record<string, unknown>): DebounceStore.DebounceWindow => ({
  tenantId: String(row.tenant_id),
  key: String(row.debounce_key),
  executionId: String(row.execution_id),
  threadId: String(row.thread_id),
  definition: fromJson(row.definition),
  input: fromJson(row.input),
  fireAt: num(row.fire_at),
  open: num(row.open) === 1,
  version: num(row.version),
  createdAt: num(row.created_at),
  updatedAt: num(row.updated_at)
})

/** How many times `offer` tries again when a concurrent offer opened the window between its two statements. */
const offerAttempts = 5

/**
 * The backend over the client, without migration or argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<DebounceStore.DebounceStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { limitOf, sql, tables: t } = yield* Store.open(options)
    const windows = sql(t.debounces)
    const columns = sql`tenant_id, execution_id, debounce_key, thread_id, definition, input, fire_at, open, version, created_at, updated_at`

    return {
      offer: (o) =>
        run(store, "offer", () =>
          Effect.gen(function*() {
            for (let attempt = 0; attempt < offerAttempts; attempt++) {
              // With a longest wait, the earlier of the offer's time and the window's opening plus that wait.
              const fireAt = o.maxWaitMillis === undefined
                ? sql`${o.fireAt}`
                : sql`CASE WHEN created_at + ${o.maxWaitMillis} < ${o.fireAt} THEN created_at + ${o.maxWaitMillis} ELSE ${o.fireAt} END`
              const moved = yield* sql`UPDATE ${windows} SET input = ${toJson(o.input)}, fire_at = ${fireAt}, version = version + 1, updated_at = ${o.now}
                WHERE tenant_id = ${o.tenantId} AND debounce_key = ${o.key} AND open = 1
                RETURNING ${columns}`
              if (moved.length > 0) return { opened: false, window: windowOf(moved[0]!) }
              const made = yield* sql`INSERT INTO ${windows} (tenant_id, execution_id, debounce_key, thread_id, definition, input, fire_at, open, version, created_at, updated_at)
                VALUES (${o.tenantId}, ${o.executionId}, ${o.key}, ${o.threadId}, ${toJson(o.definition)}, ${toJson(o.input)}, ${o.fireAt}, 1, 1, ${o.now}, ${o.now})
                ON CONFLICT DO NOTHING
                RETURNING ${columns}`
              if (made.length > 0) return { opened: true, window: windowOf(made[0]!) }
              // Not inserted: a racing first offer opened the key's window (the next UPDATE moves it), or a window
              // with this id is kept already.
              const kept = yield* sql`SELECT 1 AS kept FROM ${windows} WHERE tenant_id = ${o.tenantId} AND execution_id = ${o.executionId}`
              if (kept.length > 0) return yield* Effect.fail(DebounceStore.executionIdTaken(o.executionId))
            }
            return yield* new StoreError({
              store,
              operation: "offer",
              kind: "Busy",
              reason: `the window of key ${o.key} was opened and closed by other offers ${offerAttempts} times while this one tried`
            })
          })),
      close: (tenantId, executionId, expected, now) =>
        run(store, "close", () =>
          Effect.map(
            sql`UPDATE ${windows} SET open = 0, version = version + 1, updated_at = ${now}
                WHERE tenant_id = ${tenantId} AND execution_id = ${executionId} AND open = 1 AND version = ${expected}
                RETURNING ${columns}`,
            firstOf(windowOf)
          )),
      get: (tenantId, executionId) =>
        run(store, "get", () =>
          Effect.map(sql`SELECT ${columns} FROM ${windows} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}`, firstOf(windowOf))),
      due: (now, limit) =>
        run(store, "due", () =>
          Effect.gen(function*() {
            const due = yield* sql`SELECT ${columns} FROM ${windows} WHERE open = 1 AND fire_at <= ${now}
              ORDER BY fire_at, tenant_id, execution_id LIMIT ${limitOf(limit)}`
            if (due.length >= limit) return due.map(windowOf)
            const closed = yield* sql`SELECT ${columns} FROM ${windows} WHERE open = 0
              ORDER BY tenant_id, execution_id LIMIT ${limitOf(limit - due.length)}`
            return [...due, ...closed].map(windowOf)
          })),
      nextDue: run(store, "nextDue", () => Store.earliest(sql, t.debounces, "fire_at", sql`open = 1`)),
      delete: (tenantId, executionId) =>
        run(store, "delete", () => Store.deleteKeyed(sql, t.debounces, "execution_id", tenantId, executionId)),
      ping: Store.ping(store, sql)
    } satisfies DebounceStore.DebounceStoreShape
  })

const constructors = Store.constructors(DebounceStore.DebounceStore, DebounceStore.make, makeBackend)

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `DebounceStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires
 * `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
