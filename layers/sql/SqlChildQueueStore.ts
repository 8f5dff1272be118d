/**
 * `ChildQueueStore` over any `SqlClient`. Inputs and results are JSON text.
 *
 * `claim` is one `UPDATE … WHERE (tenant, id) = (SELECT … ORDER BY depth DESC,
 * queued_at, execution_id LIMIT 1) RETURNING *`: on SQLite the statement holds
 * the write lock, so two claimers never get the same row; on Postgres the
 * inner select takes the row `FOR UPDATE SKIP LOCKED`, so concurrent claimers
 * pass over each other's rows instead of waiting.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as ChildQueueStore from "../../src/stores/ChildQueueStore.ts"
import { firstOf, fromJson, num, numOrNull, run, textOrNull, toJson } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "ChildQueueStore"

const toChild = (row: any): ChildQueueStore.QueuedChild => ({
  tenantId: row.tenant_id,
  executionId: row.execution_id,
  rootExecutionId: row.root_execution_id,
  parentExecutionId: row.parent_execution_id,
  threadId: row.thread_id,
  depth: num(row.depth),
  workflowName: row.workflow_name,
  input: fromJson(row.input),
  status: row.status as ChildQueueStore.ChildStatus,
  claimedBy: textOrNull(row.claimed_by),
  queuedAt: num(row.queued_at),
  claimExpiresAt: numOrNull(row.claim_expires_at),
  result: fromJson(row.result),
  launchId: textOrNull(row.launch_id),
  position: row.position === null || row.position === undefined ? 0 : num(row.position),
  configHash: textOrNull(row.config_hash)
})

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<ChildQueueStore.ChildQueueStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { sql, tables: t } = yield* Store.open(options)
    const queue = sql(t.childQueue)

    const impl: ChildQueueStore.ChildQueueStoreShape = {
      saveIfAbsent: (c) =>
        run(store, "saveIfAbsent", () => Effect.map(
          sql`INSERT INTO ${queue} (tenant_id, execution_id, root_execution_id, parent_execution_id, thread_id, depth,
                workflow_name, input, status, claimed_by, queued_at, claim_expires_at, result, launch_id, position, config_hash)
              VALUES (${c.tenantId}, ${c.executionId}, ${c.rootExecutionId}, ${c.parentExecutionId}, ${c.threadId}, ${c.depth},
                ${c.workflowName}, ${toJson(c.input)}, 'Queued', NULL, ${c.queuedAt}, NULL, NULL, ${c.launchId ?? null}, ${c.position ?? 0},
                ${c.configHash ?? null})
              ON CONFLICT (tenant_id, execution_id) DO NOTHING
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      claim: (instanceId, ttl, now, workflows) => {
        const open = sql`(status = 'Queued' OR (status = 'Running' AND claim_expires_at <= ${now}))`
        // Only the workflows the claimer can run (a worker registering some of them leaves the rest to others);
        // of a name, only its config hash (a row without one: by name).
        const runnable = (w: ChildQueueStore.RunnableWorkflow) =>
          sql`(workflow_name = ${w.name} AND (config_hash IS NULL OR config_hash = ${w.configHash}))`
        const claimable = workflows === undefined ? open : sql`${open} AND (${sql.or(workflows.map(runnable))})`
        const lock = sql.onDialectOrElse({
          pg: () => sql.literal(" FOR UPDATE SKIP LOCKED"),
          orElse: () => sql.literal("")
        })
        return run(store, "claim", () => Effect.map(
          sql`UPDATE ${queue} SET status = 'Running', claimed_by = ${instanceId}, claim_expires_at = ${now + ttl}
              WHERE (tenant_id, execution_id) = (
                SELECT tenant_id, execution_id FROM ${queue}
                WHERE ${claimable}
                ORDER BY depth DESC, queued_at, execution_id, tenant_id
                LIMIT 1${lock}
              ) AND ${claimable}
              RETURNING *`,
          firstOf(toChild)
        ))
      },
      renewClaim: (tenantId, executionId, instanceId, ttl, now) =>
        run(store, "renewClaim", () => Effect.map(
          sql`UPDATE ${queue} SET claim_expires_at = ${now + ttl}
              WHERE tenant_id = ${tenantId} AND execution_id = ${executionId} AND status = 'Running'
                AND claimed_by = ${instanceId} AND claim_expires_at > ${now}
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      complete: (input) =>
        run(store, "complete", () => Effect.map(
          sql`UPDATE ${queue} SET status = ${input.outcome}, result = ${toJson(input.result)}
              WHERE tenant_id = ${input.tenantId} AND execution_id = ${input.executionId}
                AND status = 'Running' AND claimed_by = ${input.instanceId}
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      get: (tenantId, executionId) =>
        run(store, "get", () => Effect.map(
          sql`SELECT * FROM ${queue} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}`,
          firstOf(toChild)
        )),
      releaseClaim: (tenantId, executionId, instanceId) =>
        run(store, "releaseClaim", () => Effect.map(
          sql`UPDATE ${queue} SET status = 'Queued', claimed_by = NULL, claim_expires_at = NULL
              WHERE tenant_id = ${tenantId} AND execution_id = ${executionId} AND status = 'Running' AND claimed_by = ${instanceId}
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      requeuePaused: (tenantId, executionId) =>
        run(store, "requeuePaused", () => Effect.map(
          sql`UPDATE ${queue} SET status = 'Queued', claimed_by = NULL, claim_expires_at = NULL, result = NULL
              WHERE tenant_id = ${tenantId} AND execution_id = ${executionId} AND status = 'Paused'
              RETURNING execution_id`,
          (rows) => rows.length > 0
        )),
      listLaunch: (tenantId, launchId) =>
        run(store, "listLaunch", () => Effect.map(
          sql`SELECT * FROM ${queue} WHERE tenant_id = ${tenantId} AND launch_id = ${launchId} ORDER BY position, execution_id`,
          (rows) => rows.map(toChild)
        )),
      countOpen: (tenantId, launchId) =>
        run(store, "countOpen", () => Effect.map(
          sql`SELECT COUNT(*) AS n FROM ${queue}
              WHERE tenant_id = ${tenantId} AND launch_id = ${launchId} AND status IN ('Queued', 'Running')`,
          (rows) => num(rows[0]?.n ?? 0)
        )),
      failQueued: (tenantId, root, result) =>
        run(store, "failQueued", () => Effect.map(
          sql`UPDATE ${queue} SET status = 'Failed', result = ${toJson(result)}
              WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} AND status = 'Queued'
              RETURNING execution_id`,
          (rows) => rows.length
        )),
      deleteRoot: (tenantId, root) =>
        run(store, "deleteRoot", () => Effect.map(
          sql`DELETE FROM ${queue} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} RETURNING execution_id`,
          (rows) => rows.length
        )),
      ping: Store.ping(store, sql)
    }
    return ChildQueueStore.make(impl)
  })

/**
 * `ChildQueueStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<ChildQueueStore.ChildQueueStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(ChildQueueStore.ChildQueueStore, make, options)
