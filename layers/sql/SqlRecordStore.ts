/**
 * `RecordStore` over any `SqlClient`: threads, execution records and pause answers.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import type { ExecutionRecord, ExecutionStatus, PauseAnswer, ThreadRecord } from "../../src/stores/ExecutionRecord.ts"
import type { IdGenerator } from "../../src/stores/Ids.ts"
import { RecordStore, type RecordStoreBackend, type RecordStoreShape } from "../../src/stores/RecordStore.ts"
import { num, run, textOrNull } from "./internal/rows.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "RecordStore"

const toThread = (row: any): ThreadRecord => ({
  tenantId: row.tenant_id,
  threadId: row.thread_id,
  ownerId: textOrNull(row.owner_id),
  createdAt: num(row.created_at)
})

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
  updatedAt: num(row.updated_at)
})

const toAnswer = (row: any): PauseAnswer => ({
  tenantId: row.tenant_id,
  executionId: row.execution_id,
  pauseId: row.pause_id,
  answeredBy: row.answered_by,
  answeredAt: num(row.answered_at)
})

/** The backend over the client, without migration or argument checks. */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RecordStoreBackend, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* SqlTables.make(options)
    const threads = sql(t.threads)
    const records = sql(t.records)
    const answers = sql(t.pauseAnswers)

    const getThread = (tenantId: string, threadId: string) =>
      Effect.map(
        sql`SELECT * FROM ${threads} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`,
        (rows) => rows.length === 0 ? Option.none<ThreadRecord>() : Option.some(toThread(rows[0]))
      )

    const backend: RecordStoreBackend = {
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
      createRecord: (r) =>
        run(store, "createRecord", () => Effect.map(
          sql`INSERT INTO ${records} (tenant_id, execution_id, thread_id, root_execution_id, parent_execution_id, depth,
                workflow_name, workflow_version, config_hash, status, error, created_at, updated_at)
              VALUES (${r.tenantId}, ${r.executionId}, ${r.threadId}, ${r.rootExecutionId}, ${r.parentExecutionId ?? null}, ${r.depth},
                ${r.workflowName}, ${r.workflowVersion}, ${r.configHash}, ${r.status}, ${r.error ?? null}, ${r.createdAt}, ${r.updatedAt})
              ON CONFLICT (tenant_id, execution_id) DO NOTHING
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      getRecord: (tenantId, executionId) =>
        run(store, "getRecord", () => Effect.map(
          sql`SELECT * FROM ${records} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}`,
          (rows) => rows.length === 0 ? Option.none() : Option.some(toRecord(rows[0]))
        )),
      setStatus: (input) =>
        run(store, "setStatus", () => Effect.map(
          input.error === undefined
            ? sql`UPDATE ${records} SET status = ${input.to}, updated_at = ${input.now}
                  WHERE tenant_id = ${input.tenantId} AND execution_id = ${input.executionId} AND status = ${input.from}
                  RETURNING execution_id`
            : sql`UPDATE ${records} SET status = ${input.to}, updated_at = ${input.now}, error = ${input.error}
                  WHERE tenant_id = ${input.tenantId} AND execution_id = ${input.executionId} AND status = ${input.from}
                  RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      findByStatus: (status, limit, after) =>
        run(store, "findByStatus", () => Effect.map(
          Option.isNone(after)
            ? sql`SELECT * FROM ${records} WHERE status = ${status}
                  ORDER BY tenant_id, execution_id LIMIT ${limit}`
            : sql`SELECT * FROM ${records} WHERE status = ${status}
                    AND (tenant_id, execution_id) > (${after.value.tenantId}, ${after.value.executionId})
                  ORDER BY tenant_id, execution_id LIMIT ${limit}`,
          (rows) => rows.map(toRecord)
        )),
      listByThread: (tenantId, threadId) =>
        run(store, "listByThread", () => Effect.map(
          sql`SELECT * FROM ${records} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}
              ORDER BY created_at, execution_id`,
          (rows) => rows.map(toRecord)
        )),
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
      ping: run(store, "ping", () => Effect.asVoid(sql`SELECT 1`))
    }
    return backend
  })

/** The service over the client (argument checks and ids included; no migration). */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RecordStoreShape, BatonConfigError, SqlClient.SqlClient | IdGenerator> =>
  Effect.flatMap(makeBackend(options), RecordStore.make)

/** `RecordStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`). */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<RecordStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated | IdGenerator> =>
  Layer.effect(RecordStore, Effect.andThen(SqlMigrations.requireMigrated(options), make(options)))
