/**
 * Hooks told of what executions do. Optional: the default observes nothing.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
import type { ExecutionId, InstanceId, TenantId } from "../stores/Ids.ts"

/**
 * What every observer hook is told about the execution it reports on.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionEvent {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  readonly instanceId: InstanceId
  readonly workflowName: string
}

/**
 * Why a pass continued an existing execution.
 *
 * @category models
 * @since 0.1.0
 */
export type ResumeReason = "Answered" | "Recovered"

/**
 * What `onResume` is told: why the pass continued, and the decisions it took
 * (each answered pause's id and decision; empty when it continued without
 * one, as a recovery of a running tree does).
 *
 * @category models
 * @since 0.1.0
 */
export interface ResumeEvent extends ExecutionEvent {
  readonly reason: ResumeReason
  readonly decisions?: ReadonlyArray<{ readonly pauseId: string; readonly decision: unknown }> | undefined
}

/**
 * Why a call was refused access: `OtherOwner` — the thread belongs to another
 * owner (`ThreadOwnerError`); `NotInTenant` — the caller's tenant has no such
 * thread, execution or pause (another tenant's id answers as unknown).
 *
 * @category models
 * @since 0.1.0
 */
export type RejectedReason = "OtherOwner" | "NotInTenant"

/**
 * What `onRejected` is told of a refused call: the tenant and owner it came
 * with, and the id it asked for.
 *
 * @category models
 * @since 0.1.0
 */
export interface RejectedEvent {
  readonly reason: RejectedReason
  readonly tenantId: TenantId
  /** The caller's owner id (null when it gave none). */
  readonly ownerId: string | null
  readonly instanceId: InstanceId
  readonly threadId?: string | undefined
  readonly executionId?: ExecutionId | undefined
  readonly pauseId?: string | undefined
}

/**
 * Every hook runs on the instance that saw the event; a failing or slow hook
 * never affects the execution (hooks are run and their failures logged).
 *
 * @category models
 * @since 0.1.0
 */
export interface ObserverShape {
  readonly onStart: (event: ExecutionEvent) => Effect.Effect<void>
  readonly onPause: (event: ExecutionEvent & { readonly pauseIds: ReadonlyArray<string> }) => Effect.Effect<void>
  readonly onResume: (event: ResumeEvent) => Effect.Effect<void>
  readonly onEnd: (event: ExecutionEvent & { readonly output: unknown }) => Effect.Effect<void>
  /** The execution failed (a step threw, or it was cancelled). Told once per execution. */
  readonly onError: (event: ExecutionEvent & { readonly error: string }) => Effect.Effect<void>
  /** This instance lost the tree's lease mid-pass; the execution goes on elsewhere. */
  readonly onLeaseLost: (event: ExecutionEvent & { readonly reason: string }) => Effect.Effect<void>
  /**
   * A call was refused access: another owner's thread, or an id its tenant
   * does not have. Told on the instance that refused it, before the call fails.
   *
   * @since 0.1.0
   */
  readonly onRejected: (event: RejectedEvent) => Effect.Effect<void>
}

const none: ObserverShape = {
  onStart: () => Effect.void,
  onPause: () => Effect.void,
  onResume: () => Effect.void,
  onEnd: () => Effect.void,
  onError: () => Effect.void,
  onLeaseLost: () => Effect.void,
  onRejected: () => Effect.void
}

/**
 * The observer hooks the runtime calls; none by default (provide one made with `make`).
 *
 * @category services
 * @since 0.1.0
 */
export const Observer = Context.Reference<ObserverShape>("baton/Observer", { defaultValue: () => none })

/**
 * An observer with only the hooks given; the others do nothing.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (hooks: Partial<ObserverShape>): ObserverShape => ({ ...none, ...hooks })
