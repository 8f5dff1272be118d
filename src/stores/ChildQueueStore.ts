/**
 * Child executions that any instance may run.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { ExecutionId, InstanceId, TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * What a `ChildQueueStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * Where a queued child execution stands.
 *
 * @category models
 * @since 0.1.0
 */
export type ChildStatus = "Queued" | "Running" | "Answered" | "Paused" | "Failed"
/**
 * How a child execution ended (as its parent reads it).
 *
 * @category models
 * @since 0.1.0
 */
export type ChildOutcome = "Answered" | "Paused" | "Failed"
const outcomes: ReadonlyArray<ChildOutcome> = ["Answered", "Paused", "Failed"]

/**
 * A child execution in the queue: its ids, place in the tree, input, status and claim.
 *
 * @category models
 * @since 0.1.0
 */
export interface QueuedChild {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  readonly parentExecutionId: ExecutionId
  /** The thread the child runs on (its own). */
  readonly threadId: ThreadId
  /** Depth in its tree (root = 1): deeper children are claimed first. */
  readonly depth: number
  readonly workflowName: string
  /** The child's input, JSON. */
  readonly input: unknown
  readonly status: ChildStatus
  readonly claimedBy: InstanceId | null
  readonly queuedAt: number
  /** Until when the claimer's hold is good; another instance may claim the row after it. */
  readonly claimExpiresAt: number | null
  /** The outcome's value, JSON; null until completed. */
  readonly result: unknown
  /**
   * The launch the child belongs to (one step's batch): its siblings share
   * it. Absent or null for a child queued alone.
   */
  readonly launchId?: string | null | undefined
  /** Its place in its launch (0-based): outputs come back in this order. Absent: 0. */
  readonly position?: number | undefined
  /**
   * The config hash of the child workflow its parent declared: only an
   * instance registering that workflow with that hash claims it. Absent or
   * null (rows queued before hashes were kept): matched by name alone.
   */
  readonly configHash?: string | null | undefined
}

/**
 * A workflow a claimer can run: its name and config hash.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunnableWorkflow {
  readonly name: string
  readonly configHash: string
}

/**
 * Semantics every implementation keeps:
 * - `saveIfAbsent` queues a child once per (tenantId, executionId);
 * - `claim` atomically takes one row — Queued, or Running with its claim
 *   expired at `now` (a crashed worker's) — the deepest first, then the
 *   longest waiting (queuedAt, then executionId), marks it Running for
 *   `instanceId` until `now + ttl` and returns it: of N racing claimers each
 *   row goes to exactly one; given `workflows`, only a row whose
 *   `workflowName` and `configHash` are one of them (the workflows the
 *   claimer can run; a row without a hash matches by name) — the others
 *   stay where they are for instances that can (a rolling deploy's old
 *   and new graphs of one name never run each other's children);
 * - `renewClaim` extends a live claim of the same instance;
 * - `complete` records the outcome only for the instance holding the claim;
 * - `releaseClaim` hands a Running row of the instance back to the queue
 *   (Queued, unclaimed): a closing instance's child is claimable at once;
 * - `listLaunch` answers the children of one launch by position, and
 *   `countOpen` how many of them are still Queued or Running;
 * - `failQueued` ends a root's Queued children as Failed with `result`
 *   (a cancelled tree's children never start);
 * - `requeuePaused` hands a Paused row (a child resting at a pause) back to
 *   the queue — Queued, unclaimed, its result cleared — once its pause was
 *   answered, and answers whether it did (of racing callers, one does).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildQueueStoreShape {
  readonly saveIfAbsent: (child: QueuedChild) => Effect.Effect<boolean, Failure>
  readonly claim: (
    instanceId: InstanceId,
    ttlMillis: number,
    now: number,
    workflows?: ReadonlyArray<RunnableWorkflow>
  ) => Effect.Effect<Option.Option<QueuedChild>, Failure>
  readonly renewClaim: (
    tenantId: TenantId,
    executionId: ExecutionId,
    instanceId: InstanceId,
    ttlMillis: number,
    now: number
  ) => Effect.Effect<boolean, Failure>
  readonly complete: (input: {
    readonly tenantId: TenantId
    readonly executionId: ExecutionId
    readonly instanceId: InstanceId
    readonly outcome: ChildOutcome
    readonly result: unknown
  }) => Effect.Effect<boolean, Failure>
  readonly releaseClaim: (tenantId: TenantId, executionId: ExecutionId, instanceId: InstanceId) => Effect.Effect<boolean, Failure>
  readonly get: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<Option.Option<QueuedChild>, Failure>
  readonly listLaunch: (tenantId: TenantId, launchId: string) => Effect.Effect<ReadonlyArray<QueuedChild>, Failure>
  readonly countOpen: (tenantId: TenantId, launchId: string) => Effect.Effect<number, Failure>
  readonly failQueued: (tenantId: TenantId, rootExecutionId: ExecutionId, result: unknown) => Effect.Effect<number, Failure>
  readonly deleteRoot: (tenantId: TenantId, rootExecutionId: ExecutionId) => Effect.Effect<number, Failure>
  /**
   * A Paused row back to Queued (unclaimed, result cleared): its child
   * rests no more, any claimer continues it. False when the row is not Paused.
   *
   * @since 0.1.0
   */
  readonly requeuePaused: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<boolean, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The service of the child-execution queue; see `ChildQueueStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class ChildQueueStore extends Context.Service<ChildQueueStore, ChildQueueStoreShape>()("baton/ChildQueueStore") {}

/**
 * Wraps a backend with the contract's argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: ChildQueueStoreShape): ChildQueueStoreShape => ({
  saveIfAbsent: (c) =>
    V.checked([
      ...V.ids("ChildQueueStore.saveIfAbsent", { tenantId: c.tenantId, executionId: c.executionId, rootExecutionId: c.rootExecutionId, parentExecutionId: c.parentExecutionId, threadId: c.threadId, workflowName: c.workflowName }),
      V.wholeAtLeast("ChildQueueStore.saveIfAbsent", "depth", c.depth, 2),
      V.oneOf("ChildQueueStore.saveIfAbsent", "status", c.status, ["Queued"]),
      V.json("ChildQueueStore.saveIfAbsent", "input", c.input),
      ...(c.launchId === undefined || c.launchId === null ? [] : [V.nonEmpty("ChildQueueStore.saveIfAbsent", "launchId", c.launchId)]),
      ...(c.position === undefined ? [] : [V.wholeAtLeast("ChildQueueStore.saveIfAbsent", "position", c.position, 0)]),
      ...(c.configHash === undefined || c.configHash === null ? [] : [V.nonEmpty("ChildQueueStore.saveIfAbsent", "configHash", c.configHash)]),
      V.time("ChildQueueStore.saveIfAbsent", "queuedAt", c.queuedAt)
    ], () => impl.saveIfAbsent(c)),
  claim: (instanceId, ttl, now, workflows) =>
    V.checked([
      V.nonEmpty("ChildQueueStore.claim", "instanceId", instanceId),
      V.positiveMillis("ChildQueueStore.claim", "ttlMillis", ttl),
      V.time("ChildQueueStore.claim", "now", now),
      ...(workflows ?? []).flatMap((w, i) => [
        V.nonEmpty("ChildQueueStore.claim", `workflows[${i}].name`, w.name),
        V.nonEmpty("ChildQueueStore.claim", `workflows[${i}].configHash`, w.configHash)
      ])
    ], () =>
      // Nothing this claimer can run: no row to take.
      workflows !== undefined && workflows.length === 0 ? Effect.succeedNone : impl.claim(instanceId, ttl, now, workflows)),
  renewClaim: (tenantId, executionId, instanceId, ttl, now) =>
    V.checked([
      ...V.ids("ChildQueueStore.renewClaim", { tenantId, executionId, instanceId }),
      V.positiveMillis("ChildQueueStore.renewClaim", "ttlMillis", ttl),
      V.time("ChildQueueStore.renewClaim", "now", now)
    ], () => impl.renewClaim(tenantId, executionId, instanceId, ttl, now)),
  complete: (input) =>
    V.checked([
      ...V.ids("ChildQueueStore.complete", { tenantId: input.tenantId, executionId: input.executionId, instanceId: input.instanceId }),
      V.oneOf("ChildQueueStore.complete", "outcome", input.outcome, outcomes),
      V.json("ChildQueueStore.complete", "result", input.result)
    ], () => impl.complete(input)),
  get: (tenantId, executionId) =>
    V.checked(V.ids("ChildQueueStore.get", { tenantId, executionId }), () => impl.get(tenantId, executionId)),
  releaseClaim: (tenantId, executionId, instanceId) =>
    V.checked(V.ids("ChildQueueStore.releaseClaim", { tenantId, executionId, instanceId }), () => impl.releaseClaim(tenantId, executionId, instanceId)),
  listLaunch: (tenantId, launchId) =>
    V.checked(V.ids("ChildQueueStore.listLaunch", { tenantId, launchId }), () => impl.listLaunch(tenantId, launchId)),
  countOpen: (tenantId, launchId) =>
    V.checked(V.ids("ChildQueueStore.countOpen", { tenantId, launchId }), () => impl.countOpen(tenantId, launchId)),
  failQueued: (tenantId, root, result) =>
    V.checked([
      ...V.ids("ChildQueueStore.failQueued", { tenantId, rootExecutionId: root }),
      V.json("ChildQueueStore.failQueued", "result", result)
    ], () => impl.failQueued(tenantId, root, result)),
  deleteRoot: (tenantId, root) =>
    V.checked(V.ids("ChildQueueStore.deleteRoot", { tenantId, rootExecutionId: root }), () => impl.deleteRoot(tenantId, root)),
  requeuePaused: (tenantId, executionId) =>
    V.checked(V.ids("ChildQueueStore.requeuePaused", { tenantId, executionId }), () => impl.requeuePaused(tenantId, executionId)),
  ping: impl.ping
})
