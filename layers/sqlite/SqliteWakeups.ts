/**
 * Lease-release wake-ups across processes over one SQLite file.
 *
 * SQLite has no NOTIFY, so a release is written down and watched for:
 * - `released(tenant, root)` wakes this process's waiters at once (the hub in
 *   context, as before) and appends a row `(origin, tenant, root)` to the
 *   `<prefix>wakeups` table — asynchronously, in batches, by one fiber: the
 *   caller never waits, and a failed write is only logged;
 * - a watcher reads the rows past the last one it saw every `pollInterval`
 *   (default 25 ms, on the Clock) — one indexed read of an append-only table,
 *   which WAL readers do without taking a lock — and calls the hub's
 *   `released(tenant, root)` for each row another process wrote; so a waiter
 *   in another process moves within a poll instead of at its next sweep.
 *
 * Nothing depends on a row being seen: the runtime's polling stays the
 * fallback. The table keeps the last `keep` rows (default 10,000): a watcher
 * further behind than that skips the rest. The table lives in the stores'
 * file, under their prefix, so two apps with different prefixes do not wake
 * each other. It uses a connection of its own (see `SqliteClient`).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { LeaseWakeups, type LeaseWakeupsShape } from "../../src/stores/LeaseWakeups.ts"
import * as SqlTables from "../sql/SqlTables.ts"
import * as SqliteClient from "./SqliteClient.ts"
import { transaction } from "../sql/internal/rows.ts"
import { clientOptions } from "./internal/clientOptions.ts"
import { checkOptions } from "./internal/wakeupsOptions.ts"

/**
 * Where the database is (the same file as the stores), the table prefix, and
 * how often to look for other processes' releases.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteWakeupsOptions extends SqliteClient.SqliteClientOptions, SqlTables.SqlStoreOptions {
  /** How often the watcher reads new releases: 5 ms to 1 minute. Default 25 milliseconds. */
  readonly pollInterval?: Duration.Input | undefined
  /** How many of the latest release rows the table keeps: 1 to 1,000,000. Default 10,000. */
  readonly keep?: number | undefined
}

/**
 * The name of the release table under a table prefix.
 *
 * @category constructors
 * @since 0.1.0
 */
export const tableName = (prefix: string): string => `${prefix}wakeups`

const origins = new WeakMap<LeaseWakeupsShape, string>()
/** One id per hub: every watcher of a process skips what any writer of the same hub wrote. */
const originOf = (hub: LeaseWakeupsShape): string => {
  let origin = origins.get(hub)
  if (origin === undefined) {
    origin = `${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 10)}`
    origins.set(hub, origin)
  }
  return origin
}

interface Settings {
  readonly pollInterval: Duration.Duration
  readonly keep: number
  readonly table: string
}

const settings = (options: SqliteWakeupsOptions) =>
  Effect.gen(function*() {
    const tables = yield* SqlTables.make(options)
    const { keep, pollInterval } = yield* checkOptions(options)
    return { pollInterval, keep, table: tableName(tables.prefix) } satisfies Settings
  })

const storeError = (operation: string) => (cause: unknown) =>
  new StoreError({
    store: "SqliteWakeups",
    operation,
    reason: `the release table could not be ${operation === "migrate" ? "created" : "read"}: check that the SQLite file is writable`,
    cause
  })

interface Release {
  readonly tenantId: string
  readonly rootExecutionId: string
}

/** Writes releases in one transaction, then trims the table to its last `keep` rows; a failure is logged. */
const write = (sql: SqlClient.SqlClient, s: Settings, origin: string, batch: ReadonlyArray<Release>) =>
  transaction(sql, Effect.gen(function*() {
    for (const r of batch) {
      yield* sql.unsafe(`INSERT INTO "${s.table}" (origin, tenant_id, root_execution_id) VALUES (?, ?, ?)`, [origin, r.tenantId, r.rootExecutionId])
    }
    yield* sql.unsafe(`DELETE FROM "${s.table}" WHERE seq <= (SELECT max(seq) FROM "${s.table}") - ?`, [s.keep])
  })).pipe(
    Effect.catch((e) => Effect.logWarning(`lease-release rows not written (other processes fall back to polling): ${e.message}`)),
    // A batch taken from the outbox is written whole, even when the Layer closes meanwhile.
    Effect.uninterruptible
  )

/**
 * Writes queued releases as they come, one transaction per batch; when the
 * Layer closes, what is still queued is written first (a graceful close's
 * releases are the ones other processes wait for).
 */
const writer = (sql: SqlClient.SqlClient, s: Settings, origin: string, outbox: Queue.Queue<Release>) =>
  Effect.gen(function*() {
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeAll(outbox), (batch) => write(sql, s, origin, batch))))
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.clear(outbox), (rest) => rest.length === 0 ? Effect.void : write(sql, s, origin, rest))
    )
  })

/** Reads the rows past `after` every poll and wakes this process's waiters for other processes' releases. */
const watcher = (sql: SqlClient.SqlClient, s: Settings, origin: string, hub: LeaseWakeupsShape, start: number) =>
  Effect.gen(function*() {
    let after = start
    let failing = false
    while (true) {
      yield* Effect.sleep(s.pollInterval)
      const rows = yield* sql.unsafe<{ seq: number; origin: string; tenant_id: string; root_execution_id: string }>(
        `SELECT seq, origin, tenant_id, root_execution_id FROM "${s.table}" WHERE seq > ? ORDER BY seq LIMIT 1000`,
        [after]
      ).pipe(
        Effect.matchEffect({
          onSuccess: (rows) => Effect.sync(() => ((failing = false), rows)),
          onFailure: (e) =>
            failing ? Effect.succeed([]) : Effect.sync(() => (failing = true)).pipe(
              Effect.andThen(Effect.logWarning(`reading lease releases failed (polling stays the fallback): ${e.message}`)),
              Effect.as([])
            )
        })
      )
      for (const row of rows) {
        after = Number(row.seq)
        if (row.origin !== origin) hub.released(row.tenant_id, row.root_execution_id)
      }
    }
  })

/**
 * Provides `LeaseWakeups` (the hub in context, wrapped): releases are written
 * for other processes, and their releases wake this process's waiters. The
 * table is created at build if missing.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqliteWakeupsOptions = {}): Layer.Layer<never, StoreError | BatonConfigError> =>
  Layer.effect(
    LeaseWakeups,
    Effect.gen(function*() {
      const s = yield* settings(options)
      const sql = yield* SqlClient.SqlClient
      const hub = yield* LeaseWakeups
      const origin = originOf(hub)
      yield* sql.unsafe(
        `CREATE TABLE IF NOT EXISTS "${s.table}" (seq INTEGER PRIMARY KEY AUTOINCREMENT, origin TEXT NOT NULL, tenant_id TEXT NOT NULL, root_execution_id TEXT NOT NULL)`
      ).pipe(Effect.mapError(storeError("migrate")))
      const last = yield* sql.unsafe<{ seq: number | null }>(`SELECT max(seq) AS seq FROM "${s.table}"`).pipe(Effect.mapError(storeError("read")))
      const outbox = yield* Queue.unbounded<Release>()
      yield* writer(sql, s, origin, outbox)
      yield* Effect.forkScoped(watcher(sql, s, origin, hub, Number(last[0]?.seq ?? 0)))
      const wrapped: LeaseWakeupsShape = {
        released: (tenantId, rootExecutionId, options) => {
          hub.released(tenantId, rootExecutionId, options)
          // The table has no column for `ended`: other processes hear every release as a plain one.
          Queue.offerUnsafe(outbox, { tenantId, rootExecutionId })
        },
        next: hub.next
      }
      return wrapped
    })
  ).pipe(Layer.provide(SqliteClient.layer(clientOptions(options))))
