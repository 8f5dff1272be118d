/**
 * baton's versioned SQL schema, written once for SQLite and Postgres.
 *
 * Migrations run through effect's `Migrator` on first use of a database: the
 * applied ids are kept in `<prefix>migrations`, only the missing ones run, all
 * in one transaction. Two processes opening a new database at once are safe:
 * on SQLite the transaction is `BEGIN IMMEDIATE` (the second waits, then finds
 * nothing to do); on Postgres the Migrator locks its table. An older database
 * is upgraded in place by the migrations it lacks. Every tenant column
 * defaults to `"default"`, so a row written without a tenant lands there.
 *
 * The migration table's `created_at` bookkeeping comes from the database clock;
 * no store reads it.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { findableNames } from "../../src/stores/TreeStore.ts"
import { findableKeyCondition } from "./internal/findableKeys.ts"
import * as CheckpointPuts from "./internal/checkpointPuts.ts"
import { kindOf } from "./internal/classify.ts"
import { sqlErrorDetail } from "./internal/rows.ts"
import * as SqlTables from "./SqlTables.ts"

/** Column types per dialect. */
interface Types {
  /** Text that is part of a key or an ordering: byte order on both (Postgres `COLLATE "C"`). */
  readonly key: string
  readonly text: string
  /** Epoch milliseconds. */
  readonly time: string
  readonly int: string
  readonly real: string
  readonly blob: string
  /** The database is SQLite (else Postgres). */
  readonly sqlite: boolean
}

const typesOf = (sql: SqlClient.SqlClient): Types =>
  sql.onDialectOrElse({
    pg: (): Types => ({ key: `TEXT COLLATE "C"`, text: "TEXT", time: "BIGINT", int: "INTEGER", real: "DOUBLE PRECISION", blob: "BYTEA", sqlite: false }),
    orElse: (): Types => ({ key: "TEXT", text: "TEXT", time: "INTEGER", int: "INTEGER", real: "REAL", blob: "BLOB", sqlite: true })
  })

const statements = (build: (t: SqlTables.SqlTables, y: Types) => ReadonlyArray<string>, t: SqlTables.SqlTables) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of build(t, typesOf(sql))) {
      yield* sql.unsafe(statement).raw
    }
  })

const tenant = (y: Types) => `tenant_id ${y.key} NOT NULL DEFAULT 'default'`

/** 1: every table. */
const initial = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.threads}" (
    ${tenant(y)},
    thread_id ${y.key} NOT NULL,
    owner_id ${y.text},
    created_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
  )`,
  `CREATE TABLE "${t.records}" (
    ${tenant(y)},
    execution_id ${y.key} NOT NULL,
    thread_id ${y.key} NOT NULL,
    root_execution_id ${y.key} NOT NULL,
    parent_execution_id ${y.key},
    depth ${y.int} NOT NULL,
    workflow_name ${y.text} NOT NULL,
    workflow_version ${y.text} NOT NULL,
    config_hash ${y.text} NOT NULL,
    status ${y.key} NOT NULL,
    error ${y.text},
    created_at ${y.time} NOT NULL,
    updated_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, execution_id)
  )`,
  `CREATE TABLE "${t.pauseAnswers}" (
    ${tenant(y)},
    pause_id ${y.key} NOT NULL,
    execution_id ${y.key} NOT NULL,
    answered_by ${y.text} NOT NULL,
    answered_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, pause_id)
  )`,
  `CREATE TABLE "${t.leases}" (
    ${tenant(y)},
    root_execution_id ${y.key} NOT NULL,
    holder ${y.key},
    epoch ${y.int} NOT NULL,
    expires_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, root_execution_id)
  )`,
  `CREATE TABLE "${t.pauses}" (
    ${tenant(y)},
    pause_id ${y.key} NOT NULL,
    thread_id ${y.key} NOT NULL,
    root_execution_id ${y.key} NOT NULL,
    execution_id ${y.key} NOT NULL,
    interrupt_id ${y.text} NOT NULL,
    payload ${y.text} NOT NULL,
    status ${y.key} NOT NULL,
    decision ${y.text},
    created_at ${y.time} NOT NULL,
    resolved_at ${y.time},
    resolved_by ${y.text},
    PRIMARY KEY (tenant_id, pause_id)
  )`,
  `CREATE TABLE "${t.tree}" (
    ${tenant(y)},
    root_execution_id ${y.key} NOT NULL,
    tree_key ${y.key} NOT NULL,
    value ${y.text} NOT NULL,
    PRIMARY KEY (tenant_id, root_execution_id, tree_key)
  )`,
  `CREATE TABLE "${t.ledger}" (
    ${tenant(y)},
    scope ${y.key} NOT NULL,
    scope_id ${y.key} NOT NULL,
    day ${y.key} NOT NULL,
    total ${y.real} NOT NULL,
    PRIMARY KEY (tenant_id, scope, scope_id, day)
  )`,
  `CREATE TABLE "${t.rateSlots}" (
    slot_key ${y.key} NOT NULL,
    slot ${y.int} NOT NULL,
    holder ${y.key},
    epoch ${y.int} NOT NULL,
    expires_at ${y.time} NOT NULL,
    PRIMARY KEY (slot_key, slot)
  )`,
  `CREATE TABLE "${t.rateWindows}" (
    window_key ${y.key} NOT NULL PRIMARY KEY,
    window_start ${y.time} NOT NULL,
    total ${y.real} NOT NULL
  )`,
  `CREATE TABLE "${t.ratePauses}" (
    pause_key ${y.key} NOT NULL PRIMARY KEY,
    paused_until ${y.time} NOT NULL
  )`,
  `CREATE TABLE "${t.childQueue}" (
    ${tenant(y)},
    execution_id ${y.key} NOT NULL,
    root_execution_id ${y.key} NOT NULL,
    parent_execution_id ${y.key} NOT NULL,
    thread_id ${y.key} NOT NULL,
    depth ${y.int} NOT NULL,
    workflow_name ${y.text} NOT NULL,
    input ${y.text} NOT NULL,
    status ${y.key} NOT NULL,
    claimed_by ${y.key},
    queued_at ${y.time} NOT NULL,
    claim_expires_at ${y.time},
    result ${y.text},
    PRIMARY KEY (tenant_id, execution_id)
  )`,
  `CREATE TABLE "${t.checkpoints}" (
    ${tenant(y)},
    thread_id ${y.key} NOT NULL,
    checkpoint_ns ${y.key} NOT NULL,
    checkpoint_id ${y.key} NOT NULL,
    parent_checkpoint_id ${y.key},
    type ${y.text} NOT NULL,
    checkpoint ${y.blob} NOT NULL,
    metadata_type ${y.text} NOT NULL,
    metadata ${y.blob} NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id)
  )`,
  `CREATE TABLE "${t.checkpointWrites}" (
    ${tenant(y)},
    thread_id ${y.key} NOT NULL,
    checkpoint_ns ${y.key} NOT NULL,
    checkpoint_id ${y.key} NOT NULL,
    task_id ${y.key} NOT NULL,
    idx ${y.int} NOT NULL,
    channel ${y.text} NOT NULL,
    type ${y.text} NOT NULL,
    value ${y.blob} NOT NULL,
    task_path ${y.text} NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
  )`,
  `CREATE TABLE "${t.checkpointBlobs}" (
    ${tenant(y)},
    thread_id ${y.key} NOT NULL,
    checkpoint_ns ${y.key} NOT NULL,
    channel ${y.key} NOT NULL,
    version ${y.key} NOT NULL,
    type ${y.text} NOT NULL,
    value ${y.blob} NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version)
  )`
]

/** 2: the indexes the recovery sweep, the retention delete, the queue claim and the per-tree reads use. */
const indexes = (t: SqlTables.SqlTables): ReadonlyArray<string> => [
  `CREATE INDEX "${t.records}_status_idx" ON "${t.records}" (status, tenant_id, execution_id)`,
  `CREATE INDEX "${t.records}_thread_idx" ON "${t.records}" (tenant_id, thread_id, created_at)`,
  `CREATE INDEX "${t.pauses}_settled_idx" ON "${t.pauses}" (status, resolved_at)`,
  `CREATE INDEX "${t.pauses}_root_idx" ON "${t.pauses}" (tenant_id, root_execution_id, created_at)`,
  `CREATE INDEX "${t.pauseAnswers}_execution_idx" ON "${t.pauseAnswers}" (tenant_id, execution_id)`,
  `CREATE INDEX "${t.childQueue}_claim_idx" ON "${t.childQueue}" (status, depth DESC, queued_at, execution_id)`,
  `CREATE INDEX "${t.childQueue}_root_idx" ON "${t.childQueue}" (tenant_id, root_execution_id)`
]

/** 7: execution history snapshots and inbound request keys. */
const historyAndRequests = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.history}" (
    ${tenant(y)},
    execution_id ${y.key} NOT NULL,
    workflow_name ${y.key} NOT NULL,
    ended_at ${y.time} NOT NULL,
    snapshot ${y.text} NOT NULL,
    PRIMARY KEY (tenant_id, execution_id)
  )`,
  `CREATE INDEX "${t.history}_list_idx" ON "${t.history}" (tenant_id, ended_at, execution_id)`,
  `CREATE INDEX "${t.history}_ended_idx" ON "${t.history}" (ended_at)`,
  `CREATE TABLE "${t.requests}" (
    ${tenant(y)},
    request_key ${y.key} NOT NULL,
    fingerprint ${y.text} NOT NULL,
    handle ${y.text} NOT NULL,
    answer ${y.text},
    created_at ${y.time} NOT NULL,
    expires_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, request_key)
  )`,
  `CREATE INDEX "${t.requests}_expires_idx" ON "${t.requests}" (expires_at)`
]

/**
 * 3: one active root per thread, decided by the database — a partial unique
 * index over the roots (`execution_id = root_execution_id`) that are Running
 * or Paused, which `RecordStore.startRoot`'s conditional insert relies on —
 * and the index `RecordStore.list` pages by (a tenant's records, newest first).
 *
 * A database written before it may hold two active roots on one thread (the
 * race this closes); this migration then fails naming the index, and
 * nothing is changed: settle (cancel) one of the two roots and start again.
 * (Ids 4 and 5 are taken by other changes; ids need not be consecutive.)
 */
const handles = (t: SqlTables.SqlTables): ReadonlyArray<string> => [
  `CREATE UNIQUE INDEX "${t.records}_active_root_idx" ON "${t.records}" (tenant_id, thread_id)
    WHERE execution_id = root_execution_id AND status IN ('Running', 'Paused')`,
  `CREATE INDEX "${t.records}_created_idx" ON "${t.records}" (tenant_id, created_at, execution_id)`
]

/**
 * 5: a record counts its failed recoveries and keeps the time before
 * which no sweep may try it again (the backoff), so a poison execution backs
 * off and is marked Failed after `maxRecoveryAttempts`, on every instance;
 * and the sweep finds the trees with a decision not yet taken by one index
 * range a page (not one query per paused tree).
 */
const recoveryBackoff = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `ALTER TABLE "${t.records}" ADD COLUMN recovery_failures ${y.int} NOT NULL DEFAULT 0`,
  `ALTER TABLE "${t.records}" ADD COLUMN recover_after ${y.time}`,
  `CREATE INDEX "${t.pauses}_resolved_idx" ON "${t.pauses}" (status, tenant_id, root_execution_id)`
]

/**
 * 4: checkpoints keep their channel versions (JSON `[[channel, version], …]`)
 * so the saver reads a checkpoint, its writes and its blobs in one call.
 * Rows stored before keep NULL and are read as before (blobs by the versions
 * in the checkpoint): nothing to rewrite.
 */
const checkpointChannelVersions = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `ALTER TABLE "${t.checkpoints}" ADD COLUMN channel_versions ${y.text}`
]

/**
 * 6: the state of effect's `RateLimiter` and `CircuitBreaker` stores
 * (`SqlRateLimiterStore`, `SqlCircuitBreakerStore`): fixed-window counters as
 * columns (one upsert per consume), every other state as a JSON document per
 * (kind, key), changed under a row lock. Times are Clock milliseconds, kept
 * fractional as effect's memory stores keep them.
 */
const limiters = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.limiterWindows}" (
    limiter_key ${y.key} NOT NULL PRIMARY KEY,
    count ${y.real} NOT NULL,
    attempted ${y.real} NOT NULL,
    expires_at ${y.real} NOT NULL
  )`,
  `CREATE TABLE "${t.limiterStates}" (
    kind ${y.key} NOT NULL,
    limiter_key ${y.key} NOT NULL,
    state ${y.text},
    PRIMARY KEY (kind, limiter_key)
  )`
]

/**
 * 9: a queued child knows its launch (one step's batch of children) and its
 * place in it, so the parent reads its children's outcomes in launch order
 * and the finisher of the last one counts what is still open in one query.
 * Rows queued before belong to no launch (NULL, position 0).
 */
const childLaunches = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `ALTER TABLE "${t.childQueue}" ADD COLUMN launch_id ${y.text}`,
  `ALTER TABLE "${t.childQueue}" ADD COLUMN position ${y.int} NOT NULL DEFAULT 0`,
  `CREATE INDEX "${t.childQueue}_launch_idx" ON "${t.childQueue}" (tenant_id, launch_id, status)`
]

/**
 * 11: a queued child keeps the config hash of the child workflow its parent
 * declared, so only an instance with that graph claims it. Rows queued
 * before have none (NULL) and are claimed by name, as they were.
 */
const childConfigHash = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `ALTER TABLE "${t.childQueue}" ADD COLUMN config_hash ${y.text}`
]

/**
 * 12: the trees holding a cancel request, found across every tree by one
 * index range a page (`TreeStore.findRootsWith`): a partial index over the
 * findable reserved keys only, so a step's other tree writes maintain no
 * index for it. The query names the key as the same literal (a partial index
 * serves only a query whose WHERE repeats its condition).
 */
const findableTreeKeys = (t: SqlTables.SqlTables): ReadonlyArray<string> => [
  `CREATE INDEX "${t.tree}_findable_idx" ON "${t.tree}" (tenant_id, root_execution_id)
    WHERE ${findableNames.map(findableKeyCondition).join(" OR ")}`
]

/**
 * 14: schedules — one row per (tenant, schedule id), the definition and the
 * state of its ticks as JSON, and the index the firing leader reads the due
 * rows by (not paused, earliest `next_fire_at` first).
 */
const schedules = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.schedules}" (
    ${tenant(y)},
    schedule_id ${y.key} NOT NULL,
    definition ${y.text} NOT NULL,
    paused ${y.int} NOT NULL DEFAULT 0,
    next_fire_at ${y.time} NOT NULL,
    state ${y.text},
    version ${y.int} NOT NULL,
    created_at ${y.time} NOT NULL,
    updated_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, schedule_id)
  )`,
  `CREATE INDEX "${t.schedules}_due_idx" ON "${t.schedules}" (paused, next_fire_at, tenant_id, schedule_id)`
]

/**
 * 13: durable timers and signals (`TimerStore`). One timer row per resting
 * sleep or signal wait, found by the due-time index alone (`wakes_at`, NULL
 * for a wait only a signal wakes); signals numbered in send order by an
 * identity column (SQLite: an AUTOINCREMENT rowid, never given twice), each
 * taken by at most one pause; a
 * wait that timed out keeps a sealing row (`timed_out`) instead.
 */
const timersAndSignals = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.timers}" (
    ${tenant(y)},
    pause_id ${y.key} NOT NULL,
    root_execution_id ${y.key} NOT NULL,
    thread_id ${y.key} NOT NULL,
    kind ${y.key} NOT NULL,
    name ${y.key},
    due_at ${y.time},
    wakes_at ${y.time},
    claimed_by ${y.text},
    created_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, pause_id)
  )`,
  `CREATE INDEX "${t.timers}_wake_idx" ON "${t.timers}" (wakes_at) WHERE wakes_at IS NOT NULL`,
  `CREATE INDEX "${t.timers}_root_idx" ON "${t.timers}" (tenant_id, root_execution_id, kind, name)`,
  `CREATE TABLE "${t.signals}" (
    seq ${y.blob === "BYTEA" ? "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"},
    ${tenant(y)},
    thread_id ${y.key} NOT NULL,
    root_execution_id ${y.key} NOT NULL,
    name ${y.key} NOT NULL,
    payload ${y.text} NOT NULL,
    sent_at ${y.time} NOT NULL,
    consumed_by ${y.key},
    timed_out ${y.int} NOT NULL DEFAULT 0
  )`,
  `CREATE INDEX "${t.signals}_root_idx" ON "${t.signals}" (tenant_id, root_execution_id, name, seq)`,
  `CREATE UNIQUE INDEX "${t.signals}_taken_idx" ON "${t.signals}" (tenant_id, consumed_by) WHERE consumed_by IS NOT NULL`
]

/**
 * 15: checkpoints keep when they were written (the writer's Clock
 * milliseconds, for retention by age) and the execution that wrote them
 * (for a thread's state history). Rows stored before keep NULL: retention
 * by age never deletes them, and their history shows no execution.
 */
const checkpointLifecycle = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `ALTER TABLE "${t.checkpoints}" ADD COLUMN created_at ${y.time}`,
  `ALTER TABLE "${t.checkpoints}" ADD COLUMN execution_id ${y.key}`
]

/**
 * 16: streamed events, per thread by id (the primary key: a reader's range
 * and the top id an append reads), unique by the holder's event key (a step
 * run again streams the same keys), and by time for retention.
 */
const streamEvents = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.events}" (
    ${tenant(y)},
    thread_id ${y.key} NOT NULL,
    event_id ${y.time} NOT NULL,
    event_key ${y.key} NOT NULL,
    execution_id ${y.key} NOT NULL,
    mode ${y.key} NOT NULL,
    data ${y.text} NOT NULL,
    at ${y.time} NOT NULL,
    instance_id ${y.text} NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, event_id)
  )`,
  `CREATE UNIQUE INDEX "${t.events}_key_idx" ON "${t.events}" (tenant_id, thread_id, event_key)`,
  `CREATE INDEX "${t.events}_at_idx" ON "${t.events}" (at)`
]

/**
 * 17: concurrency keys (`ConcurrencyKeyStore`) — one row per (tenant, key)
 * with its limit and next arrival number (the row an admission locks), one
 * entry per execution placed under a key, and the indexes the admissions
 * read: a key's entries by state and arrival, and the admitted entries of
 * every tenant.
 */
const concurrencyKeys = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.concurrencyKeys}" (
    ${tenant(y)},
    concurrency_key ${y.key} NOT NULL,
    key_limit ${y.int} NOT NULL,
    next_seq ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, concurrency_key)
  )`,
  `CREATE TABLE "${t.concurrencyEntries}" (
    ${tenant(y)},
    execution_id ${y.key} NOT NULL,
    concurrency_key ${y.key} NOT NULL,
    seq ${y.time} NOT NULL,
    admitted ${y.int} NOT NULL DEFAULT 0,
    enqueued_at ${y.time} NOT NULL,
    admitted_at ${y.time},
    PRIMARY KEY (tenant_id, execution_id)
  )`,
  `CREATE INDEX "${t.concurrencyEntries}_key_idx" ON "${t.concurrencyEntries}" (tenant_id, concurrency_key, admitted, seq)`,
  `CREATE INDEX "${t.concurrencyEntries}_admitted_idx" ON "${t.concurrencyEntries}" (admitted, tenant_id, execution_id)`
]

/**
 * 18: debounce windows (`DebounceStore`) — one row per execution a burst
 * becomes, at most one open per (tenant, key) (a partial unique index: of
 * concurrent first starts one opens), and the index the debouncer reads the
 * due windows by.
 */
const debounces = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => [
  `CREATE TABLE "${t.debounces}" (
    ${tenant(y)},
    execution_id ${y.key} NOT NULL,
    debounce_key ${y.key} NOT NULL,
    thread_id ${y.key} NOT NULL,
    definition ${y.text} NOT NULL,
    input ${y.text} NOT NULL,
    fire_at ${y.time} NOT NULL,
    open ${y.int} NOT NULL DEFAULT 1,
    version ${y.int} NOT NULL,
    created_at ${y.time} NOT NULL,
    updated_at ${y.time} NOT NULL,
    PRIMARY KEY (tenant_id, execution_id)
  )`,
  `CREATE UNIQUE INDEX "${t.debounces}_open_idx" ON "${t.debounces}" (tenant_id, debounce_key) WHERE open = 1`,
  `CREATE INDEX "${t.debounces}_due_idx" ON "${t.debounces}" (open, fire_at, tenant_id, execution_id)`
]

/**
 * 19: SQLite only — the view a checkpoint put is written through, so that
 * the fence check, the changed channels' blobs and the checkpoint row are
 * one statement instead of a four-statement transaction (see
 * `internal/checkpointPuts.ts`). Postgres writes a put in one statement
 * without it; there this migration creates nothing.
 */
const checkpointPutView = (t: SqlTables.SqlTables, y: Types): ReadonlyArray<string> => y.sqlite ? CheckpointPuts.ddl(t) : []

/**
 * Every migration, in order: `[id, name, build]`. The newest id is the schema version.
 *
 * @category utils
 * @since 0.1.0
 */
export const migrations: ReadonlyArray<readonly [id: number, name: string, build: (t: SqlTables.SqlTables, y: Types) => ReadonlyArray<string>]> = [
  [1, "initial", initial],
  [2, "indexes", indexes],
  [3, "handles", handles],
  [4, "checkpoint_channel_versions", checkpointChannelVersions],
  [5, "recovery_backoff", recoveryBackoff],
  [6, "limiters", limiters],
  [7, "history_and_requests", historyAndRequests],
  [9, "child_launches", childLaunches],
  [11, "child_config_hash", childConfigHash],
  [12, "findable_tree_keys", findableTreeKeys],
  [13, "timers_and_signals", timersAndSignals],
  [14, "schedules", schedules],
  [15, "checkpoint_lifecycle", checkpointLifecycle],
  [16, "stream_events", streamEvents],
  [17, "concurrency_keys", concurrencyKeys],
  [18, "debounces", debounces],
  [19, "checkpoint_put_view", checkpointPutView]
]

/**
 * The schema version this code writes.
 *
 * @category utils
 * @since 0.1.0
 */
export const latestVersion = migrations[migrations.length - 1][0]

/**
 * effect's Migrator loader for the tables (only ids ≤ `upTo`, when given).
 *
 * @category utils
 * @since 0.1.0
 */
export const loader = (tables: SqlTables.SqlTables, upTo?: number): Migrator.Loader =>
  Effect.succeed(
    migrations
      .filter(([id]) => upTo === undefined || id <= upTo)
      .map(([id, name, build]): Migrator.ResolvedMigration => [id, name, Effect.succeed(statements(build, tables))])
  )

const run = Migrator.make({})

/**
 * The options of a migration: the table prefix, and `upTo` to stop at a schema version.
 *
 * @category models
 * @since 0.1.0
 */
export interface MigrateOptions extends SqlTables.SqlStoreOptions {
  /** Stop at this schema version (for tests of upgrades and for tools); default: the latest. */
  readonly upTo?: number | undefined
}

/**
 * Brings the database to the latest schema (or `upTo`); answers the migrations
 * it applied (none when already current). Safe to call on every start.
 *
 * @category utils
 * @since 0.1.0
 */
export const migrate = (options: MigrateOptions = {}): Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  StoreError | BatonConfigError,
  SqlClient.SqlClient
> =>
  Effect.flatMap(SqlTables.make(options), (tables) =>
    run({ loader: loader(tables, options.upTo), table: tables.migrations }).pipe(
      Effect.mapError((e: Migrator.MigrationError | SqlError) =>
        new StoreError({
          store: "SqlMigrations",
          operation: "migrate",
          reason: e._tag === "MigrationError"
            ? `${e.kind}: ${e.message}${isSqlError(e.cause) ? ` (${sqlErrorDetail(e.cause)})` : ""}`
            : `${e.reason._tag}: ${e.message}`,
          kind: e._tag === "MigrationError" ? (e.kind === "Locked" ? "Busy" : "Config") : kindOf(e),
          cause: e
        })
      )
    ))

/**
 * The schema version of the database: the newest applied migration id, 0 when none.
 *
 * @category utils
 * @since 0.1.0
 */
export const currentVersion = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<number, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const tables = yield* SqlTables.make(options)
    const sql = yield* SqlClient.SqlClient
    const exists = yield* sql.onDialectOrElse({
      pg: () => sql`SELECT 1 AS found WHERE to_regclass(${`"${tables.migrations}"`}) IS NOT NULL`,
      orElse: () => sql`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ${tables.migrations}`
    })
    if (exists.length === 0) return 0
    const rows = yield* sql<{ v: unknown }>`SELECT MAX(migration_id) AS v FROM ${sql(tables.migrations)}`
    return rows[0]?.v == null ? 0 : Number(rows[0].v)
  }).pipe(Effect.mapError((e) => e._tag === "SqlError" ? new StoreError({ store: "SqlMigrations", operation: "currentVersion", reason: e.message, kind: kindOf(e), cause: e }) : e))

/**
 * What a migrations Layer provides: proof that the schema of `tablePrefix`
 * is migrated on the client in context. Every SQL store Layer requires it, so
 * the migrations run once per bundle (by `SqliteMigrations.layer` or
 * `PgMigrations.layer`), not once per store.
 *
 * @category models
 * @since 0.1.0
 */
export interface MigratedShape {
  /** The table prefix the migrations ran for. */
  readonly tablePrefix: string
  /** The schema version the database is at. */
  readonly version: number
  /** The migrations this build applied (none when another instance or an earlier start did). */
  readonly applied: ReadonlyArray<readonly [id: number, name: string]>
}

/**
 * The service of a migrated schema; see `MigratedShape`.
 *
 * @category services
 * @since 0.1.0
 */
export class Migrated extends Context.Service<Migrated, MigratedShape>()("baton/sql/SqlMigrations/Migrated") {}

/**
 * A migrations Layer over a `migrate` program (the plain one, or Postgres's
 * under an advisory lock): runs it once when built and provides `Migrated`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = <O extends MigrateOptions>(
  program: (options: O) => Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, StoreError | BatonConfigError, SqlClient.SqlClient>
) =>
(options: O): Layer.Layer<Migrated, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  Layer.effect(
    Migrated,
    Effect.gen(function*() {
      const tables = yield* SqlTables.make(options)
      const applied = yield* program(options)
      return { tablePrefix: tables.prefix, version: options.upTo ?? latestVersion, applied }
    })
  )

/**
 * Migrates the schema on the `SqlClient` in context, once, at build (SQLite's
 * `BEGIN IMMEDIATE` keeps two processes from migrating at once; Postgres uses
 * `PgMigrations.layer`, under an advisory lock).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: (options?: MigrateOptions) => Layer.Layer<Migrated, StoreError | BatonConfigError, SqlClient.SqlClient> = (
  options = {}
) => layerWith(migrate)(options)

/**
 * Checks, in a store Layer, that the `Migrated` in context is for this
 * store's table prefix (a store on another prefix would find no tables).
 *
 * @category layers
 * @since 0.1.0
 */
export const requireMigrated = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<void, BatonConfigError, Migrated> =>
  Effect.gen(function*() {
    const migrated = yield* Migrated
    const tables = yield* SqlTables.make(options)
    if (migrated.tablePrefix !== tables.prefix) {
      return yield* new BatonConfigError({
        field: "tablePrefix",
        reason: `is ${JSON.stringify(tables.prefix)} but the migrations Layer provided migrated ${JSON.stringify(migrated.tablePrefix)}: give the store and the migrations Layer the same options`
      })
    }
  })
