/**
 * Pauses, keyed by (tenantId, pauseId); each also names its thread and tree.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, NotPausedError, StoreError, UnknownPauseError } from "./Errors.ts"
import type { ExecutionId, InstanceId, PauseId, TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"
import type { Pause, PauseStatus } from "./Pause.ts"

/**
 * What a `PauseStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

const pauseStatuses: ReadonlyArray<PauseStatus> = ["Pending", "Resolved", "Taken", "Cancelled"]

/**
 * Semantics every implementation keeps:
 * - `save` writes a new Pending pause once (false when the id exists);
 * - `resolve` moves Pending → Resolved exactly once across instances, storing
 *   the decision; any later call fails with `NotPausedError`, an unknown id
 *   (or another tenant's) with `UnknownPauseError`;
 * - `take` moves Resolved → Taken once (true for exactly one caller);
 * - `withdraw` moves Pending or Resolved → Cancelled;
 * - `deleteSettledBefore(cutoff)` deletes Taken and Cancelled pauses whose
 *   `resolvedAt` is before `cutoff`; a Pending pause, and a Resolved decision
 *   not yet taken, are never deleted.
 *
 * @category models
 * @since 0.1.0
 */
export interface PauseStoreShape {
  readonly save: (pause: Pause) => Effect.Effect<boolean, Failure>
  readonly get: (tenantId: TenantId, pauseId: PauseId) => Effect.Effect<Option.Option<Pause>, Failure>
  readonly resolve: (input: {
    readonly tenantId: TenantId
    readonly pauseId: PauseId
    readonly decision: unknown
    readonly resolvedBy: InstanceId
    readonly now: number
  }) => Effect.Effect<Pause, Failure | NotPausedError | UnknownPauseError>
  readonly take: (tenantId: TenantId, pauseId: PauseId) => Effect.Effect<boolean, Failure>
  readonly withdraw: (tenantId: TenantId, pauseId: PauseId, now: number) => Effect.Effect<boolean, Failure>
  /** The tree's pauses in the given statuses, oldest first. */
  readonly listByRoot: (
    tenantId: TenantId,
    rootExecutionId: ExecutionId,
    statuses: ReadonlyArray<PauseStatus>
  ) => Effect.Effect<ReadonlyArray<Pause>, Failure>
  /** Returns how many pauses were deleted. */
  readonly deleteSettledBefore: (cutoff: number) => Effect.Effect<number, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The service of pauses; see `PauseStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class PauseStore extends Context.Service<PauseStore, PauseStoreShape>()("baton/PauseStore") {
  /** Wraps a backend with the contract's argument checks. */
  static make(impl: PauseStoreShape): PauseStoreShape {
    return {
      save: (p) =>
        V.checked([
          V.nonEmpty("PauseStore.save", "tenantId", p.tenantId),
          V.nonEmpty("PauseStore.save", "threadId", p.threadId),
          V.nonEmpty("PauseStore.save", "pauseId", p.pauseId),
          V.nonEmpty("PauseStore.save", "rootExecutionId", p.rootExecutionId),
          V.nonEmpty("PauseStore.save", "executionId", p.executionId),
          V.nonEmpty("PauseStore.save", "interruptId", p.interruptId),
          V.oneOf("PauseStore.save", "status", p.status, ["Pending"]),
          V.json("PauseStore.save", "payload", p.payload),
          V.time("PauseStore.save", "createdAt", p.createdAt)
        ], () => impl.save(p)),
      get: (tenantId, pauseId) =>
        V.checked([
          V.nonEmpty("PauseStore.get", "tenantId", tenantId),
          V.nonEmpty("PauseStore.get", "pauseId", pauseId)
        ], () => impl.get(tenantId, pauseId)),
      resolve: (input) =>
        V.checked([
          V.nonEmpty("PauseStore.resolve", "tenantId", input.tenantId),
          V.nonEmpty("PauseStore.resolve", "pauseId", input.pauseId),
          V.nonEmpty("PauseStore.resolve", "resolvedBy", input.resolvedBy),
          V.json("PauseStore.resolve", "decision", input.decision),
          V.time("PauseStore.resolve", "now", input.now)
        ], () => impl.resolve(input)),
      take: (tenantId, pauseId) =>
        V.checked([
          V.nonEmpty("PauseStore.take", "tenantId", tenantId),
          V.nonEmpty("PauseStore.take", "pauseId", pauseId)
        ], () => impl.take(tenantId, pauseId)),
      withdraw: (tenantId, pauseId, now) =>
        V.checked([
          V.nonEmpty("PauseStore.withdraw", "tenantId", tenantId),
          V.nonEmpty("PauseStore.withdraw", "pauseId", pauseId),
          V.time("PauseStore.withdraw", "now", now)
        ], () => impl.withdraw(tenantId, pauseId, now)),
      listByRoot: (tenantId, root, statuses) =>
        V.checked([
          V.nonEmpty("PauseStore.listByRoot", "tenantId", tenantId),
          V.nonEmpty("PauseStore.listByRoot", "rootExecutionId", root),
          ...statuses.map((s) => V.oneOf("PauseStore.listByRoot", "statuses", s, pauseStatuses))
        ], () => impl.listByRoot(tenantId, root, statuses)),
      deleteSettledBefore: (cutoff) =>
        V.checked([V.time("PauseStore.deleteSettledBefore", "cutoff", cutoff)], () => impl.deleteSettledBefore(cutoff)),
      ping: impl.ping
    }
  }
}
