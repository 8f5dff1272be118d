/**
 * The pass handle: what a running pass puts in LangGraph's
 * `config.configurable` so that its nodes can reach it.
 */
import type { ReusedKeys } from "./ReusedKeys.ts"
import type { LangGraphRunnableConfig } from "@langchain/langgraph"
import type { Effect } from "effect"
import type { LaunchOptions } from "../../Children.ts"
import type { Budget } from "../../limits/Budget.ts"

/**
 * The key of the pass handle in LangGraph's `config.configurable`.
 *
 * @category internal
 * @since 0.1.0
 */
export const passKey = "__baton_pass"

/**
 * What a node reaches of the pass that runs it.
 *
 * @category models
 * @since 0.1.0
 */
export interface PassHandle {
  readonly tenantId: string
  readonly threadId: string
  readonly executionId: string
  readonly rootExecutionId: string
  /** The depth of the execution record (a root is 1): how urgent its steps are for a step slot. */
  readonly depth: number
  readonly instanceId: string
  readonly signal: AbortSignal
  /** True while the pass may still act: not aborted, and its lease confirmed up to now by the local fence. */
  readonly leaseHeld: () => boolean
  /** Runs a step body, tracked until it settles (even after the pass was aborted); `key` (the step's idempotency key) names its visit in the history. */
  readonly runBody: <A>(node: string, body: () => Promise<A>, key?: string, step?: number) => Promise<A>
  /** The execution tree's pseudonym key, made on first use (see `Pseudonyms`). */
  readonly pseudonymKey: () => Promise<Uint8Array>
  /** Launches children from the step keyed `stepKey` (its `n`th launch): their outputs in launch order (see `ChildLaunch`). */
  readonly launch: (
    stepKey: string,
    n: number,
    /** A workflow made with `Workflow.make` (typed there: this module may not import it). */
    workflow: { readonly name: string; readonly configHash: string },
    inputs: ReadonlyArray<unknown>,
    options?: LaunchOptions
  ) => Promise<ReadonlyArray<unknown>>
  /**
   * Runs an Effect step body with the instance's services; interrupted when
   * the pass's signal aborts. `step` (LangGraph's step of the visit) keys its
   * guarded model calls' answers (see `ModelCalls`).
   */
  readonly runEffect: <A, E>(node: string, body: Effect.Effect<A, E>, key?: string, step?: number) => Promise<A>
  /**
   * Records durably that the step `key` of `node` finished with `result` and
   * has an undo (see `Undo.register`); rejects when the pass may not write
   * any more (its lease lost) or the result is not JSON.
   */
  readonly registerUndo: (node: string, key: string, result: unknown) => Promise<void>
  /** The budgets declared for this execution, made concrete (see `DeclaredBudgets`). */
  readonly budgets: ReadonlyArray<Budget>
  /** The Clock's time now (epoch milliseconds). */
  readonly now: () => number
  /** Whether the instance has a `TimerStore` (sleeps and signal waits need one). */
  readonly timers: boolean
  /** A fork's first-run keys its steps reuse (see `ReusedKeys`); undefined for any other tree. */
  readonly reusedKeys: ReusedKeys | undefined
}

/**
 * The pass handle in a node's config; throws when the node does not run under baton.
 *
 * @category internal
 * @since 0.1.0
 */
export const passOf = (config: LangGraphRunnableConfig): PassHandle => {
  const pass = config?.configurable?.[passKey] as PassHandle | undefined
  if (pass === undefined) {
    throw new Error("This node is not running under baton: run its workflow with Baton.execute / resume.")
  }
  return pass
}
