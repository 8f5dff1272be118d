/**
 * Pauses: a LangGraph interrupt waiting for a decision.
 *
 * @since 0.1.0
 */
import type { ExecutionId, InstanceId, PauseId, TenantId, ThreadId } from "./Ids.ts"

/**
 * `Pending` → `Resolved` (a decision was recorded, exactly once) → `Taken`
 * (the holder fed it to the graph). `Cancelled` when withdrawn.
 *
 * @category models
 * @since 0.1.0
 */
export type PauseStatus = "Pending" | "Resolved" | "Taken" | "Cancelled"

/**
 * A pause of an execution, waiting for (or holding) a decision.
 *
 * @category models
 * @since 0.1.0
 */
export interface Pause {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly pauseId: PauseId
  readonly rootExecutionId: ExecutionId
  readonly executionId: ExecutionId
  /** LangGraph's interrupt id: the key of this pause's answer in `Command({ resume })`. */
  readonly interruptId: string
  /** The value the node passed to `interrupt()`, JSON. */
  readonly payload: unknown
  readonly status: PauseStatus
  /** The decision, JSON; null until resolved. */
  readonly decision: unknown
  readonly createdAt: number
  /** When it was resolved (or withdrawn); null while pending. */
  readonly resolvedAt: number | null
  readonly resolvedBy: InstanceId | null
}
