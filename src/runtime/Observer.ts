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
 * Every hook runs on the instance that saw the event; a failing or slow hook
 * never affects the execution (hooks are run and their failures logged).
 *
 * @category models
 * @since 0.1.0
 */
export interface ObserverShape {
  readonly onStart: (event: ExecutionEvent) => Effect.Effect<void>
  readonly onPause: (event: ExecutionEvent & { readonly pauseIds: ReadonlyArray<string> }) => Effect.Effect<void>
  readonly onResume: (event: ExecutionEvent & { readonly reason: ResumeReason }) => Effect.Effect<void>
  readonly onEnd: (event: ExecutionEvent & { readonly output: unknown }) => Effect.Effect<void>
  /** The execution failed (a step threw, or it was cancelled). Told once per execution. */
  readonly onError: (event: ExecutionEvent & { readonly error: string }) => Effect.Effect<void>
  /** This instance lost the tree's lease mid-pass; the execution goes on elsewhere. */
  readonly onLeaseLost: (event: ExecutionEvent & { readonly reason: string }) => Effect.Effect<void>
}

const none: ObserverShape = {
  onStart: () => Effect.void,
  onPause: () => Effect.void,
  onResume: () => Effect.void,
  onEnd: () => Effect.void,
  onError: () => Effect.void,
  onLeaseLost: () => Effect.void
}

/**
 * The observer hooks the runtime calls; none by default (provide one made with `makeObserver`).
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
export const makeObserver = (hooks: Partial<ObserverShape>): ObserverShape => ({ ...none, ...hooks })
