/**
 * `RecordStore` over any `SqlClient`: threads, execution records and pause answers.
 *
 * One active root per thread is kept by the database itself: a partial
 * unique index over the roots that are Running or Paused (migration 3). So
 * `startRoot` and `createRecord` are one `INSERT … ON CONFLICT DO NOTHING`
 * (no conflict target: the primary key and that index are both arbiters) —
 * atomic on SQLite and Postgres alike; of two concurrent inserts on one
 * thread the second waits for the first's commit and inserts nothing. Only
 * when nothing was inserted does `startRoot` read why (the id taken, or the
 * thread's active root).
 *
 * `setStatusFenced` is first one statement: the compare-and-set `UPDATE …
 * WHERE EXISTS (the lease is this holder's, live at now)` — the lease row
 * read `FOR SHARE` on Postgres, so a takeover committing at the same time
 * waits for the move or makes it see the new holder; on SQLite under the
 * database write lock. Only when that moves nothing does a transaction tell
 * why: it reads the lease row (`FOR UPDATE` on Postgres; SQLite's `BEGIN
 * IMMEDIATE` holds the write lock from the start), refuses if it is not the
 * holder's (holder, epoch) live at `now`, and makes the compare-and-set.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { type BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import type { ExecutionRecord, ExecutionStatus, PauseAnswer, StartRootResult, ThreadRecord } from "../../src/stores/ExecutionRecord.ts"
import type { IdGenerator } from "../../src/stores/Ids.ts"
import { holds, refused } from "../../src/stores/internal/fence.ts"
import * as RecordStore from "../../src/stores/RecordStore.ts"
import { firstOf, num, run, textOrNull, transaction } from "./internal/rows.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "RecordStore"

const toThread = (row: any): ThreadRecord => ({
  tenantId: row.tenant_id,
  threadId: row.thread_id,
  ownerId: textOrNull(row.owner_id),
  createdAt: num(row.created_at)
})

/** The recovery columns, present on a record only once a recovery of it failed (a fresh record reads like the one written). */
const recoveryOf = (row: any): Partial<ExecutionRecord> => {
  const failures = row.recovery_failures == null ? 0 : num(row.recovery_failures)
  return failures === 0 && row.recover_after == null
    ? {}
    : { recoveryFailures: failures, recoverAfter: row.recover_after == null ? null : num(row.recover_after) }
}

const toRecord = (row: any): ExecutionRecord => ({
  tenantId: row.tenant_id,
  executionId: row.execution_id,
  threadId: row.thread_id,
  rootExecutionId: row.root_execution_id,
  parentExecutionId: textOrNull(row.parent_execution_id),
  depth: num(row.depth),
  workflowName: row.workflow_name,
  workflowVersion: row.workflow_version,
  configHash: row.config_hash,
  status: row.status as ExecutionStatus,
  error: textOrNull(row.error),
  createdAt: num(row.created_at),
  updatedAt: num(row.updated_at),
  ...recoveryOf(row)
})

const toAnswer = (row: any): PauseAnswer => ({
  tenantId: row.tenant_id,
  executionId: row.execution_id,
  pauseId: row.pause_id,
  answeredBy: row.answered_by,
  answeredAt: num(row.answered_at)
})

/** The backend over the client, without migration or argument checks. */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RecordStore.RecordStoreBackend, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // Sorted reads bind keys and write limits so that SQLite compiles them once (see internal/stablePlan.ts).
    const { limitOf, sortedKey, sql, tables: t } = yield* Store.open(options)
    const threads = sql(t.threads)
    const records = sql(t.records)
    const answers = sql(t.pauseAnswers)


    /** Inserts the record unless its id exists or (an active root) its thread has one; true when inserted. */
    const insert = (r: ExecutionRecord) =>
      Effect.map(
        sql`INSERT INTO ${records} (tenant_id, execution_id, thread_id, root_execution_id, parent_execution_id, depth,
              workflow_name, workflow_version, config_hash, status, error, created_at, updated_at)
            VALUES (${r.tenantId}, ${r.executionId}, ${r.threadId}, ${r.rootExecutionId}, ${r.parentExecutionId ?? null}, ${r.depth},
              ${r.workflowName}, ${r.workflowVersion}, ${r.configHash}, ${r.status}, ${r.error ?? null}, ${r.createdAt}, ${r.updatedAt})
            ON CONFLICT DO NOTHING
            RETURNING execution_id`,
        (rows) => rows.length > 0
      )

    const getRecord = (tenantId: string, executionId: string) => Effect.map(sql`SELECT * FROM ${records} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}`, firstOf(toRecord))

    // Written as the unique index's predicate, so the index answers it.
    const findActiveRoot = (tenantId: string, threadId: string) =>
      Effect.map(
        sql`SELECT * FROM ${records} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}
              AND execution_id = root_execution_id AND status IN ('Running', 'Paused')`,
        firstOf(toRecord)
      )

    /** The compare-and-set (of a record of the tree `root`, when given). */
    const compareAndSet = (input: RecordStore.SetStatusInput, root?: string, fence: Statement.Fragment = sql.literal("")) => {
      // A move on ends the stretch of failed recoveries (`resetsRecoveryFailures`): the count, the backoff and,
      // unless the move gives an error, the last failed recovery's cause (the right-hand side reads the old row).
      const reset = RecordStore.resetsRecoveryFailures(input.from, input.to)
      const error = input.error !== undefined
        ? sql`, error = ${input.error}`
        : sql.literal(reset ? ", error = CASE WHEN recovery_failures > 0 THEN NULL ELSE error END" : "")
      const recovery = sql.literal(reset ? ", recovery_failures = 0, recover_after = NULL" : "")
      const inTree = root === undefined ? sql.literal("") : sql` AND root_execution_id = ${root}`
      return Effect.map(
        sql`UPDATE ${records} SET status = ${input.to}, updated_at = ${input.now}${error}${recovery}
            WHERE tenant_id = ${input.tenantId} AND execution_id = ${input.executionId} AND status = ${input.from}${inTree}${fence}
            RETURNING execution_id`,
        (rows) => rows.length > 0
      )
    }

    /**
     * The lease condition of a fenced move: the tree's lease is this holder's (holder, epoch) and live at
     * `now` — read `FOR SHARE` on Postgres, so a takeover committing at the same time waits for the move or
     * makes it see the new holder (SQLite runs the statement under the database write lock).
     */
    const leaseHeld = ({ lease, now }: RecordStore.FencedSetStatusInput) => sql` AND EXISTS (${LeaseRows.live(sql, t.leases, lease, now)})`

    /**
     * The fenced move in a transaction: the lease row read (`FOR UPDATE` on Postgres; SQLite's `BEGIN
     * IMMEDIATE` holds the write lock), refused with `LeaseLostError` unless it is the holder's, live at `now`;
     * then the compare-and-set.
     */
    const fencedMove = (input: RecordStore.FencedSetStatusInput) =>
      transaction(sql, Effect.gen(function*() {
        const { lease, now } = input
        const row = yield* LeaseRows.readRow(sql, t.leases, lease, { forUpdate: true })
        if (!holds(row, lease, now)) return yield* Effect.fail(refused("status transition", row, lease, now))
        return yield* compareAndSet(input, lease.rootExecutionId)
      }))

    /** How many times `startRoot` inserts again when the thread's active root ended between its insert and its read. */
    const startAttempts = 5

    const getThread = (tenantId: string, threadId: string) => Effect.map(sql`SELECT * FROM ${threads} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`, firstOf(toThread))

    return {
      createThread: (thread) =>
        run(store, "createThread", () => Effect.gen(function*() {
          const inserted = yield* sql`INSERT INTO ${threads} (tenant_id, thread_id, owner_id, created_at)
            VALUES (${thread.tenantId}, ${thread.threadId}, ${thread.ownerId}, ${thread.createdAt})
            ON CONFLICT (tenant_id, thread_id) DO NOTHING
            RETURNING thread_id`
          if (inserted.length > 0) return { thread, created: true }
          const existing = yield* getThread(thread.tenantId, thread.threadId)
          // Present: someone created it first. Absent: it was deleted in between; report ours as not created.
          return { thread: Option.getOrElse(existing, () => thread), created: false }
        })),
      getThread: (tenantId, threadId) => run(store, "getThread", () => getThread(tenantId, threadId)),
      createRecord: (r) => run(store, "createRecord", () => insert(r)),
      startRoot: (r) =>
        run(store, "startRoot", () =>
          Effect.gen(function*() {
            for (let attempt = 0; attempt < startAttempts; attempt++) {
              if (yield* insert(r)) return { _tag: "Started" } as StartRootResult
              if (Option.isSome(yield* getRecord(r.tenantId, r.executionId))) return { _tag: "IdTaken" } as StartRootResult
              const active = yield* findActiveRoot(r.tenantId, r.threadId)
              if (Option.isSome(active)) return { _tag: "ThreadBusy", active: active.value } as StartRootResult
              // The active root that refused the insert ended before the read: insert again.
            }
            return yield* new StoreError({
              store,
              operation: "startRoot",
              reason: `thread ${r.threadId}'s active root kept changing over ${startAttempts} attempts; nothing was written`
            })
          })),
      findActiveRoot: (tenantId, threadId) => run(store, "findActiveRoot", () => findActiveRoot(tenantId, threadId)),
      getRecord: (tenantId, executionId) => run(store, "getRecord", () => getRecord(tenantId, executionId)),
      setStatus: (input) => run(store, "setStatus", () => compareAndSet(input)),
      setStatusFenced: (input) =>
        run(store, "setStatusFenced", () =>
          // The move under the live lease in one statement; only when it moves nothing, the transaction
          // below tells a refused lease from a compare-and-set that did not match (and moves if both hold now).
          Effect.flatMap(compareAndSet(input, input.lease.rootExecutionId, leaseHeld(input)), (moved) => moved ? Effect.succeed(true) : fencedMove(input))),
      list: ({ after, limit, status, tenantId, threadId, workflow }) =>
        run(store, "list", () => {
          const where = [sql`tenant_id = ${sortedKey(tenantId)}`]
          if (status !== undefined) where.push(sql`status = ${sortedKey(status)}`)
          if (workflow !== undefined) where.push(sql`workflow_name = ${sortedKey(workflow)}`)
          if (threadId !== undefined) where.push(sql`thread_id = ${sortedKey(threadId)}`)
          if (Option.isSome(after)) where.push(sql`(created_at, execution_id) < (${after.value.createdAt}, ${after.value.executionId})`)
          return Effect.map(
            sql`SELECT * FROM ${records} WHERE ${sql.and(where)}
                ORDER BY created_at DESC, execution_id DESC LIMIT ${limitOf(limit)}`,
            (rows) => rows.map(toRecord)
          )
        }),
      noteRecoveryFailure: (input) =>
        run(store, "noteRecoveryFailure", () => Effect.map(
          sql`UPDATE ${records} SET recovery_failures = ${input.failures + 1}, recover_after = ${input.retryAt},
                error = ${input.error}, updated_at = ${input.now}
              WHERE tenant_id = ${input.tenantId} AND execution_id = ${input.executionId} AND status = 'Running'
                AND recovery_failures = ${input.failures}
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      findByStatus: (status, limit, after) =>
        run(store, "findByStatus", () => Effect.map(
          Option.isNone(after)
            ? sql`SELECT * FROM ${records} WHERE status = ${sortedKey(status)}
                  ORDER BY tenant_id, execution_id LIMIT ${limitOf(limit)}`
            : sql`SELECT * FROM ${records} WHERE status = ${sortedKey(status)}
                    AND (tenant_id, execution_id) > (${after.value.tenantId}, ${after.value.executionId})
                  ORDER BY tenant_id, execution_id LIMIT ${limitOf(limit)}`,
          (rows) => rows.map(toRecord)
        )),
      listByThread: (tenantId, threadId) =>
        run(store, "listByThread", () => Effect.map(
          sql`SELECT * FROM ${records} WHERE tenant_id = ${sortedKey(tenantId)} AND thread_id = ${sortedKey(threadId)}
              ORDER BY created_at, execution_id`,
          (rows) => rows.map(toRecord)
        )),
      deleteThread: (tenantId, threadId) =>
        run(store, "deleteThread", () =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`DELETE FROM ${answers} WHERE tenant_id = ${tenantId} AND execution_id IN (
              SELECT execution_id FROM ${records} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId})`
            const gone = yield* sql`DELETE FROM ${records} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId} RETURNING execution_id`
            yield* sql`DELETE FROM ${threads} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`
            return gone.length
          }))),
      savePauseAnswer: (a) =>
        run(store, "savePauseAnswer", () => Effect.asVoid(
          sql`INSERT INTO ${answers} (tenant_id, pause_id, execution_id, answered_by, answered_at)
              VALUES (${a.tenantId}, ${a.pauseId}, ${a.executionId}, ${a.answeredBy}, ${a.answeredAt})
              ON CONFLICT (tenant_id, pause_id) DO NOTHING`
        )),
      listPauseAnswers: (tenantId, executionId) =>
        run(store, "listPauseAnswers", () => Effect.map(
          sql`SELECT * FROM ${answers} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}
              ORDER BY answered_at, pause_id`,
          (rows) => rows.map(toAnswer)
        )),
      ping: Store.ping(store, sql)
    } satisfies RecordStore.RecordStoreBackend
  })

/** The service over the client (argument checks and ids included; no migration). */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RecordStore.RecordStoreShape, BatonConfigError, SqlClient.SqlClient | IdGenerator> =>
  Effect.flatMap(makeBackend(options), RecordStore.make)

/** `RecordStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`). */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<RecordStore.RecordStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated | IdGenerator> =>
  Store.migratedLayer(RecordStore.RecordStore, make, options)
