/**
 * `TimerStore` over any `SqlClient`. Payloads are JSON text.
 *
 * `claimDue` is one `UPDATE … RETURNING *` of the rows an inner `SELECT …
 * WHERE wakes_at <= now ORDER BY wakes_at LIMIT n` finds over the partial
 * index on `wakes_at`: its cost is the page's, not the table's. On SQLite
 * the statement holds the write lock (the rows matched by key); on Postgres
 * the inner select takes its rows `FOR UPDATE SKIP LOCKED`, so two sweepers
 * take different timers, and the update reaches them by their `ctid`s (a TID
 * scan, whatever the planner thinks of the table's size).
 *
 * `send` and `consume` of one tree run in transactions that serialize per
 * tree (Postgres: a transaction-scoped advisory lock on the tree; SQLite:
 * `BEGIN IMMEDIATE`), so a wait that looks for its signal after a send
 * returned finds it, and a send after the wait was armed makes it due.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as TimerStore from "../../src/stores/TimerStore.ts"
import { firstOf, fromJson, num, numOrNull, run, textOrNull, toJson, transaction } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import type * as SqlMigrations from "./SqlMigrations.ts"
import type * as SqlTables from "./SqlTables.ts"

const store = "TimerStore"

const toTimer = (row: any): TimerStore.Timer => ({
  tenantId: row.tenant_id,
  pauseId: row.pause_id,
  rootExecutionId: row.root_execution_id,
  threadId: row.thread_id,
  kind: row.kind as TimerStore.TimerKind,
  name: textOrNull(row.name),
  dueAt: numOrNull(row.due_at),
  wakesAt: numOrNull(row.wakes_at),
  claimedBy: textOrNull(row.claimed_by),
  createdAt: num(row.created_at)
})

const toSignal = (row: any): TimerStore.Signal => ({
  tenantId: row.tenant_id,
  threadId: row.thread_id,
  rootExecutionId: row.root_execution_id,
  seq: num(row.seq),
  name: row.name,
  payload: fromJson(row.payload),
  sentAt: num(row.sent_at),
  consumedBy: textOrNull(row.consumed_by)
})

/** A row a pause took: its signal, or its timeout seal. */
const takenOf = (row: any): TimerStore.Taken => num(row.timed_out) === 1 ? { _tag: "TimedOut" } : { _tag: "Signal", signal: toSignal(row) }

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<TimerStore.TimerStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { isPg, limitOf, sql, tables: t } = yield* Store.open(options)
    const timers = sql(t.timers)
    const signals = sql(t.signals)
    /** Serializes the tree's signal transactions (SQLite's `BEGIN IMMEDIATE` does it already). */
    const lockTree = (tenantId: string, root: string) =>
      isPg
        ? Effect.asVoid(sql`SELECT pg_advisory_xact_lock(hashtextextended(${tenantId}::text || '/' || ${root}::text, 13))`)
        : Effect.void

    const impl: TimerStore.TimerStoreShape = {
      arm: (x) =>
        run(store, "arm", () => Effect.map(
          sql`INSERT INTO ${timers} (tenant_id, pause_id, root_execution_id, thread_id, kind, name, due_at, wakes_at, claimed_by, created_at)
              VALUES (${x.tenantId}, ${x.pauseId}, ${x.rootExecutionId}, ${x.threadId}, ${x.kind}, ${x.name}, ${x.dueAt}, ${x.wakesAt}, NULL, ${x.createdAt})
              ON CONFLICT (tenant_id, pause_id) DO NOTHING
              RETURNING pause_id`,
          (rows) => rows.length > 0
        )),
      get: (tenantId, pauseId) =>
        run(store, "get", () => Effect.map(
          sql`SELECT * FROM ${timers} WHERE tenant_id = ${tenantId} AND pause_id = ${pauseId}`,
          firstOf(toTimer)
        )),
      claimDue: (now, limit, claimant, claimMillis) =>
        run(store, "claimDue", () => Effect.map(
          isPg
            // By the rows' ctids, locked by the inner select: a TID scan whatever the table's size (a join on the key
            // lets the planner scan a small table whole, and the page's cost then grows with the table).
            ? sql`UPDATE ${timers} SET wakes_at = ${now + claimMillis}, claimed_by = ${claimant}
                WHERE ctid = ANY(ARRAY(
                  SELECT ctid FROM ${timers}
                  WHERE wakes_at IS NOT NULL AND wakes_at <= ${now}
                  ORDER BY wakes_at
                  LIMIT ${limitOf(limit)} FOR UPDATE SKIP LOCKED
                )) AND wakes_at <= ${now}
                RETURNING *`
            : sql`UPDATE ${timers} SET wakes_at = ${now + claimMillis}, claimed_by = ${claimant}
                WHERE (tenant_id, pause_id) IN (
                  SELECT tenant_id, pause_id FROM ${timers}
                  WHERE wakes_at IS NOT NULL AND wakes_at <= ${now}
                  ORDER BY wakes_at
                  LIMIT ${limitOf(limit)}
                ) AND wakes_at <= ${now}
                RETURNING *`,
          (rows) => rows.map(toTimer)
        )),
      nextWake: run(store, "nextWake", () => Effect.map(
        sql`SELECT wakes_at FROM ${timers} WHERE wakes_at IS NOT NULL ORDER BY wakes_at LIMIT 1`,
        (rows) => firstOf((r: any) => num(r.wakes_at))(rows)
      )),
      release: (tenantId, pauseId, claimant, wakesAt) =>
        run(store, "release", () => Effect.map(
          sql`UPDATE ${timers} SET wakes_at = ${wakesAt}, claimed_by = NULL
              WHERE tenant_id = ${tenantId} AND pause_id = ${pauseId} AND claimed_by = ${claimant}
              RETURNING pause_id`,
          (rows) => rows.length > 0
        )),
      disarm: (tenantId, pauseId) =>
        run(store, "disarm", () => Effect.map(
          sql`DELETE FROM ${timers} WHERE tenant_id = ${tenantId} AND pause_id = ${pauseId} RETURNING pause_id`,
          (rows) => rows.length > 0
        )),
      listByRoot: (tenantId, root) =>
        run(store, "listByRoot", () => Effect.map(
          sql`SELECT * FROM ${timers} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} ORDER BY pause_id`,
          (rows) => rows.map(toTimer)
        )),
      send: (s) =>
        run(store, "send", () =>
          transaction(sql, Effect.gen(function*() {
            yield* lockTree(s.tenantId, s.rootExecutionId)
            const rows = yield* sql`INSERT INTO ${signals} (tenant_id, thread_id, root_execution_id, name, payload, sent_at, consumed_by)
              VALUES (${s.tenantId}, ${s.threadId}, ${s.rootExecutionId}, ${s.name}, ${toJson(s.payload)}, ${s.sentAt}, NULL)
              RETURNING *`
            yield* sql`UPDATE ${timers} SET wakes_at = ${s.sentAt}, claimed_by = NULL
              WHERE tenant_id = ${s.tenantId} AND root_execution_id = ${s.rootExecutionId} AND kind = 'Signal' AND name = ${s.name}`
            return toSignal(rows[0])
          }))),
      consume: ({ name, now, pauseId, rootExecutionId, tenantId, threadId, timeUp }) =>
        run(store, "consume", () =>
          transaction(sql, Effect.gen(function*() {
            yield* lockTree(tenantId, rootExecutionId)
            const taken = yield* sql`SELECT * FROM ${signals} WHERE tenant_id = ${tenantId} AND consumed_by = ${pauseId}`
            if (taken.length > 0) return takenOf(taken[0])
            const next = yield* sql`SELECT * FROM ${signals}
              WHERE tenant_id = ${tenantId} AND root_execution_id = ${rootExecutionId} AND name = ${name} AND consumed_by IS NULL
              ORDER BY seq LIMIT 1`
            if (next.length > 0) {
              const rows = yield* sql`UPDATE ${signals} SET consumed_by = ${pauseId} WHERE seq = ${num((next[0] as any).seq)} RETURNING *`
              return takenOf(rows[0])
            }
            if (!timeUp) return { _tag: "Waiting" } satisfies TimerStore.Taken as TimerStore.Taken
            yield* sql`INSERT INTO ${signals} (tenant_id, thread_id, root_execution_id, name, payload, sent_at, consumed_by, timed_out)
              VALUES (${tenantId}, ${threadId}, ${rootExecutionId}, ${name}, 'null', ${now}, ${pauseId}, 1)`
            return { _tag: "TimedOut" } satisfies TimerStore.Taken as TimerStore.Taken
          }))),
      discard: (tenantId, root, seq) =>
        run(store, "discard", () =>
          Effect.gen(function*() {
            yield* sql`DELETE FROM ${signals}
              WHERE seq = ${seq} AND tenant_id = ${tenantId} AND root_execution_id = ${root} AND consumed_by IS NULL`
            const left = yield* sql`SELECT seq FROM ${signals} WHERE seq = ${seq} AND tenant_id = ${tenantId} AND root_execution_id = ${root}`
            return left.length === 0
          })),
      listSignals: (tenantId, root) =>
        run(store, "listSignals", () => Effect.map(
          sql`SELECT * FROM ${signals} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} AND timed_out = 0 ORDER BY seq`,
          (rows) => rows.map(toSignal)
        )),
      deleteRoot: (tenantId, root) =>
        run(store, "deleteRoot", () =>
          transaction(sql, Effect.gen(function*() {
            const a = yield* sql`DELETE FROM ${timers} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} RETURNING pause_id`
            const b = yield* sql`DELETE FROM ${signals} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} RETURNING seq`
            return a.length + b.length
          }))),
      ping: Store.ping(store, sql)
    }
    return TimerStore.make(impl)
  })

/**
 * `TimerStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<TimerStore.TimerStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(TimerStore.TimerStore, make, options)
