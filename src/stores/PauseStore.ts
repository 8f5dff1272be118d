/**
 * Pauses, keyed by (tenantId, pauseId); each also names its thread and tree.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import { InvalidInputError, type LeaseLostError, type NotPausedError, type StoreError, type UnknownPauseError } from "./Errors.ts"
import type { ExecutionId, InstanceId, PauseId, TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"
import type { Lease } from "./Lease.ts"
import type { Pause, PauseStatus } from "./Pause.ts"

/**
 * What a `PauseStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * A tree, as `findResolvedRoots` answers it and continues after it.
 *
 * @category models
 * @since 0.1.0
 */
export interface RootCursor {
  readonly tenantId: TenantId
  readonly rootExecutionId: ExecutionId
}

const pauseStatuses: ReadonlyArray<PauseStatus> = ["Pending", "Resolved", "Taken", "Cancelled"]

/**
 * Semantics every implementation keeps:
 * - `save` writes a new Pending pause once (false when the id exists);
 * - `saveFenced` is `save` made only while `lease` (of the pause's tree) is
 *   still the tree's current lease — same holder and epoch, `expiresAt >
 *   now` — checked in the same atomic step as the write, like a fenced
 *   checkpoint write: a pause id that exists answers `false` (nothing
 *   written); otherwise a stale holder gets `LeaseLostError` and writes
 *   nothing. A backend may leave it out (see `PauseStoreBackend`): `fenced`
 *   is then false and `saveFenced` is `save`, today's unfenced save;
 * - `resolve` moves Pending → Resolved exactly once across instances, storing
 *   the decision; any later call fails with `NotPausedError`, an unknown id
 *   (or another tenant's) with `UnknownPauseError`;
 * - `take` moves Resolved → Taken once (true for exactly one caller);
 * - `withdraw` moves Pending or Resolved → Cancelled;
 * - `findResolvedRoots` pages over the distinct trees with a Resolved pause
 *   (a decision not yet taken), in the stable order (tenantId,
 *   rootExecutionId), each page strictly after `after`: one query a page;
 * - `deleteSettledBefore(cutoff)` deletes Taken and Cancelled pauses whose
 *   `resolvedAt` is before `cutoff`; a Pending pause, and a Resolved decision
 *   not yet taken, are never deleted.
 *
 * @category models
 * @since 0.1.0
 */
export interface PauseStoreShape {
  readonly save: (pause: Pause) => Effect.Effect<boolean, Failure>
  /**
   * `save` under the holder's `lease` of the pause's tree, fenced in the store
   * (a stale holder gets `LeaseLostError` and writes nothing) when `fenced`.
   */
  readonly saveFenced: (pause: Pause, lease: Lease, now: number) => Effect.Effect<boolean, Failure | LeaseLostError>
  /** Whether `saveFenced` checks the lease in the store (false: it is `save`, unfenced). */
  readonly fenced: boolean
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
  /** Trees with a Resolved pause, at most `limit`, after `after`, in (tenantId, rootExecutionId) order. */
  readonly findResolvedRoots: (limit: number, after: Option.Option<RootCursor>) => Effect.Effect<ReadonlyArray<RootCursor>, Failure>
  /** Returns how many pauses were deleted. */
  readonly deleteSettledBefore: (cutoff: number) => Effect.Effect<number, Failure>
  /**
   * Deletes every pause of the thread, whatever its status, answering how
   * many (`Baton.deleteThread`; idempotent).
   *
   * @since 0.1.0
   */
  readonly deleteThread: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<number, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * What a backend implements: the shape without `fenced`, `saveFenced`
 * optional. Without it, `make` answers `saveFenced` with `save` and `fenced:
 * false` — a stale holder's pause is then written, and the runtime's
 * twin check (a pass that saved a pause looks for another pass's pause of the
 * same interrupt) withdraws one of the two, as before fenced saves.
 *
 * @category models
 * @since 0.1.0
 */
export interface PauseStoreBackend extends Omit<PauseStoreShape, "saveFenced" | "fenced"> {
  readonly saveFenced?: PauseStoreShape["saveFenced"] | undefined
}

const pauseChecks = (op: string, p: Pause) => [
  V.nonEmpty(op, "tenantId", p?.tenantId),
  V.nonEmpty(op, "threadId", p?.threadId),
  V.nonEmpty(op, "pauseId", p?.pauseId),
  V.nonEmpty(op, "rootExecutionId", p?.rootExecutionId),
  V.nonEmpty(op, "executionId", p?.executionId),
  V.nonEmpty(op, "interruptId", p?.interruptId),
  V.oneOf(op, "status", p?.status, ["Pending"]),
  V.json(op, "payload", p?.payload),
  V.time(op, "createdAt", p?.createdAt)
]

const must = (op: string, field: string, ok: boolean, reason: string) =>
  ok ? Effect.void : Effect.fail(new InvalidInputError({ operation: op, field, reason }))

const fencedChecks = (op: string, p: Pause, lease: Lease, now: number) => [
  ...pauseChecks(op, p),
  ...V.lease(op, lease),
  must(op, "lease.tenantId", lease?.tenantId === p?.tenantId, "must be the pause's tenant"),
  must(op, "lease.rootExecutionId", lease?.rootExecutionId === p?.rootExecutionId, "must be the pause's tree (its rootExecutionId)"),
  V.time(op, "now", now)
]

/**
 * The service of pauses; see `PauseStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class PauseStore extends Context.Service<PauseStore, PauseStoreShape>()("baton/PauseStore") {}

/**
 * Wraps a backend with the contract's argument checks (and `saveFenced` as `save` when it has none).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: PauseStoreBackend): PauseStoreShape => {
  const saveFenced = impl.saveFenced
  return {
    save: (p) => V.checked(pauseChecks("PauseStore.save", p), () => impl.save(p)),
    saveFenced: (p, lease, now) =>
      V.checked(fencedChecks("PauseStore.saveFenced", p, lease, now), () => saveFenced === undefined ? impl.save(p) : saveFenced(p, lease, now)),
    fenced: saveFenced !== undefined,
    get: (tenantId, pauseId) =>
      V.checked(V.ids("PauseStore.get", { tenantId, pauseId }), () => impl.get(tenantId, pauseId)),
    resolve: (input) =>
      V.checked([
        ...V.ids("PauseStore.resolve", { tenantId: input.tenantId, pauseId: input.pauseId, resolvedBy: input.resolvedBy }),
        V.json("PauseStore.resolve", "decision", input.decision),
        V.time("PauseStore.resolve", "now", input.now)
      ], () => impl.resolve(input)),
    take: (tenantId, pauseId) =>
      V.checked(V.ids("PauseStore.take", { tenantId, pauseId }), () => impl.take(tenantId, pauseId)),
    withdraw: (tenantId, pauseId, now) =>
      V.checked([
        ...V.ids("PauseStore.withdraw", { tenantId, pauseId }),
        V.time("PauseStore.withdraw", "now", now)
      ], () => impl.withdraw(tenantId, pauseId, now)),
    listByRoot: (tenantId, root, statuses) =>
      V.checked([
        ...V.ids("PauseStore.listByRoot", { tenantId, rootExecutionId: root }),
        ...statuses.map((s) => V.oneOf("PauseStore.listByRoot", "statuses", s, pauseStatuses))
      ], () => impl.listByRoot(tenantId, root, statuses)),
    findResolvedRoots: (limit, after) =>
      V.checked([
        V.wholeAtLeast("PauseStore.findResolvedRoots", "limit", limit, 1),
        ...(Option.isSome(after)
          ? [
            V.nonEmpty("PauseStore.findResolvedRoots", "after.tenantId", after.value.tenantId),
            V.nonEmpty("PauseStore.findResolvedRoots", "after.rootExecutionId", after.value.rootExecutionId)
          ]
          : [])
      ], () => impl.findResolvedRoots(limit, after)),
    deleteSettledBefore: (cutoff) =>
      V.checked([V.time("PauseStore.deleteSettledBefore", "cutoff", cutoff)], () => impl.deleteSettledBefore(cutoff)),
    deleteThread: (tenantId, threadId) =>
      V.checked(V.ids("PauseStore.deleteThread", { tenantId, threadId }), () => impl.deleteThread(tenantId, threadId)),
    ping: impl.ping
  }
}
