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
 * Position after which `findByStatus` continues: the last record of the previous page.
 *
 * @category models
 * @since 0.1.0
 */
export interface RecordCursor {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
}
