/**
 * Threads and execution records.
 *
 * @since 0.1.0
 */
import type { ExecutionId, InstanceId, PauseId, TenantId, ThreadId } from "./Ids.ts"

/**
 * Where an execution stands. `Running` is the only status the recovery sweep looks at.
 *
 * @category models
 * @since 0.1.0
 */
export type ExecutionStatus = "Running" | "Paused" | "Finished" | "Failed" | "Cancelled"

/**
 * Every `ExecutionStatus`, in order.
 *
 * @category utils
 * @since 0.1.0
 */
export const executionStatuses: ReadonlyArray<ExecutionStatus> = ["Running", "Paused", "Finished", "Failed", "Cancelled"]

/**
 * A conversation thread. `ownerId` null means anyone of the tenant may use it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ThreadRecord {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly ownerId: string | null
  readonly createdAt: number
}

/**
 * One execution: a root (its own `rootExecutionId`) or a child within a root's tree.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionRecord {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly threadId: ThreadId
  readonly rootExecutionId: ExecutionId
  readonly parentExecutionId: ExecutionId | null
  /** 1 for a root, parent's depth + 1 for a child. */
  readonly depth: number
  readonly workflowName: string
  readonly workflowVersion: string
  /** Hash of the workflow's configuration, children included. */
  readonly configHash: string
  readonly status: ExecutionStatus
  /** Why it failed or was cancelled, when it did. */
  readonly error: string | null
  readonly createdAt: number
  readonly updatedAt: number
  /**
   * Recoveries of this execution that failed while it stayed Running (absent:
   * none). The recovery sweep marks it Failed once this reaches
   * `maxRecoveryAttempts`.
   */
  readonly recoveryFailures?: number | undefined
  /** No sweep recovers it before this time (epoch ms): the backoff after its last failed recovery (absent: none). */
  readonly recoverAfter?: number | null | undefined
}

/**
 * Who answered a pause of an execution, and when.
 *
 * @category models
 * @since 0.1.0
 */
export interface PauseAnswer {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly pauseId: PauseId
  readonly answeredBy: InstanceId
  readonly answeredAt: number
}

/**
 * A new execution's record as it is first written: Running, a root of its
 * own tree (`rootExecutionId` is its own id), with no error. A root has no
 * parent and depth 1; a child names its parent and sits one deeper.
 *
 * @category constructors
 * @since 0.1.0
 */
export const newRunning = (input: {
  readonly tenantId: string
  readonly executionId: string
  readonly threadId: string
  readonly parentExecutionId?: string | null | undefined
  readonly depth?: number | undefined
  readonly workflow: { readonly name: string; readonly version: string; readonly configHash: string }
  readonly now: number
}): ExecutionRecord => ({
  tenantId: input.tenantId,
  executionId: input.executionId,
  threadId: input.threadId,
  rootExecutionId: input.executionId,
  parentExecutionId: input.parentExecutionId ?? null,
  depth: input.depth ?? 1,
  workflowName: input.workflow.name,
  workflowVersion: input.workflow.version,
  configHash: input.workflow.configHash,
  status: "Running",
  error: null,
  createdAt: input.now,
  updatedAt: input.now
})

/**
 * The statuses of an active execution: a thread has at most one active root.
 *
 * @category utils
 * @since 0.1.0
 */
export const activeStatuses: ReadonlyArray<ExecutionStatus> = ["Running", "Paused"]

/**
 * A root execution (its own tree's root), as opposed to a child within a tree.
 *
 * @category utils
 * @since 0.1.0
 */
export const isRoot = (record: Pick<ExecutionRecord, "executionId" | "rootExecutionId">): boolean =>
  record.executionId === record.rootExecutionId

/**
 * An active root: the one a thread may have at a time.
 *
 * @category utils
 * @since 0.1.0
 */
export const isActiveRoot = (record: ExecutionRecord): boolean => isRoot(record) && activeStatuses.includes(record.status)

/**
 * What `RecordStore.startRoot` answers: `Started` (the root is recorded),
 * `ThreadBusy` (the thread already has an active root: `active`, nothing was
 * written) or `IdTaken` (a record with this execution id exists).
 *
 * @category models
 * @since 0.1.0
 */
export type StartRootResult =
  | { readonly _tag: "Started" }
  | { readonly _tag: "ThreadBusy"; readonly active: ExecutionRecord }
  | { readonly _tag: "IdTaken" }

/**
 * Which records `RecordStore.list` answers: one tenant's, newest first, optionally narrowed.
 *
 * @category models
 * @since 0.1.0
 */
export interface RecordQuery {
  readonly tenantId: TenantId
  readonly status?: ExecutionStatus | undefined
  /** The workflow's name. */
  readonly workflow?: string | undefined
  readonly threadId?: ThreadId | undefined
  /** The `next` of the previous page; absent for the first page. */
  readonly cursor?: string | undefined
  /** At most this many records (1 to {@link maxListLimit}). */
  readonly limit: number
}

/**
 * The most records one `list` page holds.
 *
 * @category models
 * @since 0.1.0
 */
export const maxListLimit = 1000

/**
 * One page of `RecordStore.list`: records newest first (by `createdAt`, then
 * `executionId`), and the cursor of the next page — null on the last one.
 *
 * @category models
 * @since 0.1.0
 */
export interface RecordPage {
  readonly records: ReadonlyArray<ExecutionRecord>
  readonly next: string | null
}

/**
 * Where a `list` page continues: strictly after (older than) this record.
 *
 * @category models
 * @since 0.1.0
 */
export interface ListPosition {
  readonly createdAt: number
  readonly executionId: ExecutionId
}

/**
 * Position after which `findByStatus` continues: the last record of the previous page.
 *
 * @category models
 * @since 0.1.0
 */
export interface RecordCursor {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
}
