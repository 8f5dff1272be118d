/**
 * Child executions: what a step that launches children chooses (placement),
 * the typed failure it gets when children do not finish, and a read of the
 * children a step launched (for undo, dashboards and tests).
 *
 * A step launches children with `ctx.launch(ChildWorkflow, inputs, { placement })`
 * (a `Workflow.step`) or `Workflow.launchChildren(ctx, …)` (an Effect step):
 * see `Workflow.StepContext.launch`.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Effect, Schema } from "effect"
import { ChildQueueStore, type ChildStatus } from "../stores/ChildQueueStore.ts"
import type { Failure } from "../stores/ChildQueueStore.ts"

/**
 * Where launched children run: `"parent"` — on the launching step's instance,
 * inside the step; `"any"` — on any instance with free step slots, the parent
 * resting (its lease and slot released) until the last child ends.
 *
 * @category models
 * @since 0.1.0
 */
export type Placement = "parent" | "any"

/**
 * How a step launches children.
 *
 * @category models
 * @since 0.1.0
 */
export interface LaunchOptions {
  /** Default `"parent"`. */
  readonly placement?: Placement | undefined
}

/**
 * How one launched child ended, as its parent's step sees it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildFailure {
  readonly executionId: string
  /** Its place in the launch (0-based). */
  readonly position: number
  /** The error's tag (`ExecutionFailedError`, `ExecutionCancelledError`, …). */
  readonly tag: string
  readonly message: string
}

/**
 * Children launched by a step did not all finish: each failed child's cause,
 * in launch order. The launching step fails with it (a `step` rejects with
 * it; an Effect step gets it typed from `Workflow.launchChildren`).
 *
 * @category errors
 * @since 0.1.0
 */
export class ChildExecutionsFailedError extends Schema.TaggedError<ChildExecutionsFailedError>()("ChildExecutionsFailedError", {
  launchId: Schema.String,
  workflowName: Schema.String,
  failures: Schema.Array(Schema.Struct({
    executionId: Schema.String,
    position: Schema.Number,
    tag: Schema.String,
    message: Schema.String
  }))
}) {
  override get message() {
    const first = this.failures[0]
    return `${this.failures.length} child execution(s) of workflow "${this.workflowName}" (launch ${this.launchId}) did not finish` +
      (first === undefined ? "" : `; the first, #${first.position} (${first.executionId}): ${first.tag}: ${first.message}`) +
      ". Handle the failure in the step, or let the parent fail."
  }
}

/**
 * A child deeper than `maxChildDepth` of the instance that was to run it:
 * refused there before it was recorded. Its launching step fails with
 * `ChildExecutionsFailedError` carrying this tag and message.
 *
 * @category errors
 * @since 0.1.0
 */
export class ChildDepthExceededError extends Schema.TaggedError<ChildDepthExceededError>()("ChildDepthExceededError", {
  executionId: Schema.String,
  depth: Schema.Number,
  maxChildDepth: Schema.Number,
  instanceId: Schema.String
}) {
  override get message() {
    return `child ${this.executionId} would run at depth ${this.depth}, deeper than maxChildDepth ${this.maxChildDepth} of instance ${this.instanceId}: ` +
      "launch fewer levels of children, or raise maxChildDepth on the instances that run them."
  }
}

/**
 * One child a launch queued, as {@link launched} reads it.
 *
 * @category models
 * @since 0.1.0
 */
export interface LaunchedChild {
  readonly executionId: string
  readonly position: number
  readonly workflowName: string
  /** Queued, Running, Answered (finished), Paused (resting at a pause; its parent waits) or Failed. */
  readonly status: ChildStatus
  /** The instance that claimed it last (null while queued). */
  readonly claimedBy: string | null
  /** Its output once Answered; `{ tag, message }` once Failed; null before. */
  readonly result: unknown
}

/**
 * The children one launch queued (placement `"any"`), in launch order, with
 * their status and result. A step's `n`th launch has the id
 * `ctx.launchId(n)` (the same on every run of the step), so an undo of the
 * step can find the children it launched and what each did.
 *
 * @category reads
 * @since 0.1.0
 */
export const launched = (tenantId: string, launchId: string): Effect.Effect<ReadonlyArray<LaunchedChild>, Failure, ChildQueueStore> =>
  ChildQueueStore.use((queue) =>
    Effect.map(queue.listLaunch(tenantId, launchId), (rows) =>
      rows.map((r) => ({
        executionId: r.executionId,
        position: r.position ?? 0,
        workflowName: r.workflowName,
        status: r.status,
        claimedBy: r.claimedBy,
        result: r.result
      })))
  )

/**
 * The id of the `n`th launch (0-based) of the step whose idempotency key is
 * `stepKey`, in execution `executionId`: the same on every run of the step,
 * on any instance.
 *
 * @category utils
 * @since 0.1.0
 */
export const launchIdOf = (tenantId: string, executionId: string, stepKey: string, n: number): string =>
  "launch-" + createHash("sha256").update(`${tenantId}\u0000${executionId}\u0000${stepKey}\u0000${n}`).digest("hex").slice(0, 24)

/**
 * What a parent resting on its children waits for: one launch (in `Baton.status`'s `waitingOnChildren`).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildrenWait {
  readonly launchId: string
  readonly workflowName: string
  readonly children: number
}


/**
 * The child a forwarded pause belongs to. A child that rests at a pause
 * (`interrupt()`) makes its parent wait; the pause is listed among the
 * parent's (in `execute`/`await`/`resume` output, `status` and
 * `pendingPauses`) with this field, and at any depth among the root's.
 * Answer it with `resume({ pauseId, decision })` like one of the parent's
 * own: the decision is decoded by the child's workflow, carried on to the
 * child (through the queue when it runs on another instance), and the tree
 * goes on.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildPauseOrigin {
  readonly executionId: string
  /** The child's own thread. */
  readonly threadId: string
  /** The child's pause (the same as the forwarded pause's `pauseId`). */
  readonly pauseId: string
  readonly workflowName: string
  /** Its depth in the tree (the root is 1). */
  readonly depth: number
}
