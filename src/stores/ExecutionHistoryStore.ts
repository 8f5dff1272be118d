/**
 * Execution history: one snapshot per root execution that ended (Finished,
 * Failed, Cancelled) — what ran, where, and how it ended — kept for the
 * history retention and listed for audits and evaluation jobs.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import { InvalidInputError, type LeaseLostError, type StoreError } from "./Errors.ts"
import type { ExecutionId, InstanceId, TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"
import type { Lease } from "./Lease.ts"
import type { Pause } from "./Pause.ts"

/**
 * One visit of a step (a node run by one holder); a step run again after a
 * takeover has one visit per holder.
 *
 * @category models
 * @since 0.1.0
 */
export interface StepVisit {
  readonly node: string
  /** The same on every run of the step (see `StepContext.idempotencyKey`). */
  readonly idempotencyKey: string
  /** Which run of the step this was: 1 for the first, 2 after a takeover ran it again, … */
  readonly attempt: number
  readonly instanceId: InstanceId
  readonly startedAt: number
  /** null when the holder stopped (died, lost its lease) before the body returned. */
  readonly endedAt: number | null
  /** "Interrupted": the step paused (LangGraph `interrupt`) and ran again once answered; "Unfinished": cut short (its holder stopped). */
  readonly outcome: "Succeeded" | "Failed" | "Interrupted" | "Unfinished"
  /** true: one try of the step's undo (`idempotencyKey` is the undo's: the step's key + ":undo"; `attempt` counts its tries). */
  readonly undo?: boolean | undefined
}

/**
 * A pause of the execution and what was decided.
 *
 * @category models
 * @since 0.1.0
 */
export type PauseVisit = Pick<
  Pause,
  "pauseId" | "executionId" | "payload" | "status" | "decision" | "createdAt" | "resolvedAt" | "resolvedBy"
>

/**
 * One model answer of a recorded execution, as a replay answers it: the
 * answer of call `ordinal` (0 for the first) of visit `visit` (1 for the
 * first) of `node`, made through `Provider.guard` in an Effect step of the
 * root — of the visit's last try, the one its later steps saw.
 *
 * @category models
 * @since 0.1.0
 */
export interface ModelAnswer {
  readonly node: string
  readonly visit: number
  readonly ordinal: number
  /** The provider's key (with fallbacks: the key given to the guard that answered). */
  readonly provider: string
  /** The model the call named (`GuardOptions.model`), null when none. */
  readonly model: string | null
  /** The answer's JSON form; absent when it had none (see `unrecordable`). */
  readonly answer?: unknown
  /** Why the answer was not kept (JSON cannot write it: a BigInt, a cycle, `undefined`). */
  readonly unrecordable?: string | undefined
}

/**
 * How an execution ended.
 *
 * @category models
 * @since 0.1.0
 */
export type EndStatus = "Finished" | "Failed" | "Cancelled"

/**
 * What is kept of one ended root execution.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionSnapshot {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly threadId: ThreadId
  readonly workflowName: string
  readonly workflowVersion: string
  readonly configHash: string
  /** sha-256 of the root's input as JSON (hex); null when the input was not kept. */
  readonly inputHash: string | null
  readonly status: EndStatus
  readonly error: string | null
  readonly startedAt: number
  readonly endedAt: number
  readonly steps: ReadonlyArray<StepVisit>
  readonly pauses: ReadonlyArray<PauseVisit>
  /** Spend recorded for the execution (JSON), when any. */
  readonly spend: unknown
  /** The holder that ended it (the snapshot was written under its lease). */
  readonly endedBy: { readonly holder: string; readonly epoch: number }
  /**
   * The root's input as it was kept (JSON), when it was: what a replay runs
   * from. Absent when the input was not kept.
   *
   * @since 0.1.0
   */
  readonly input?: unknown
  /**
   * The graph's final state of a Finished execution (its JSON form, before
   * the workflow's output schema): what a replay's output is compared with.
   * Absent when it did not finish, or when JSON cannot write it.
   *
   * @since 0.1.0
   */
  readonly output?: unknown
  /**
   * The answers of the root's guarded model calls (`Provider.guard` in an
   * Effect step), by node, visit and ordinal: what a replay answers from.
   *
   * @since 0.1.0
   */
  readonly answers?: ReadonlyArray<ModelAnswer> | undefined
}

/**
 * Where a listing page ended: pass it back as `after` for the next page.
 *
 * @category models
 * @since 0.1.0
 */
export interface HistoryCursor {
  readonly endedAt: number
  readonly executionId: ExecutionId
}

/**
 * A listing of one tenant's snapshots, in (endedAt, executionId) order.
 *
 * @category models
 * @since 0.1.0
 */
export interface HistoryQuery {
  readonly tenantId: TenantId
  /** Only this workflow's. */
  readonly workflowName?: string | undefined
  /** Ended at or after (epoch ms). */
  readonly from?: number | undefined
  /** Ended before (epoch ms). */
  readonly to?: number | undefined
  readonly limit: number
  readonly after?: HistoryCursor | undefined
}

/**
 * The errors of a history store operation.
 *
 * @category models
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a backend implements. Semantics (the conformance suite checks them):
 * - one snapshot per (tenantId, executionId): `saveIfAbsent` writes only
 *   when none is kept, and only while `lease` is the tree's current lease
 *   (same holder and epoch, `expiresAt > now`) — checked in the same atomic
 *   step as the write; a stale holder gets `LeaseLostError` and writes
 *   nothing. Of N concurrent savers exactly one gets `true`;
 * - `list` answers the tenant's snapshots (optionally of one workflow,
 *   ended in [from, to)) in (endedAt, executionId) order, after `after`, at
 *   most `limit`;
 * - `deleteEndedBefore(cutoff, limit)` deletes at most `limit` snapshots
 *   (any tenant) that ended before `cutoff`, answering how many: call it
 *   again until it answers less than `limit`;
 * - values are JSON; times are epoch milliseconds from the caller's Clock.
 */
export interface ExecutionHistoryStoreShape {
  readonly saveIfAbsent: (snapshot: ExecutionSnapshot, lease: Lease, now: number) => Effect.Effect<boolean, Failure | LeaseLostError>
  readonly get: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionSnapshot>, Failure>
  readonly list: (query: HistoryQuery) => Effect.Effect<ReadonlyArray<ExecutionSnapshot>, Failure>
  readonly deleteEndedBefore: (cutoff: number, limit: number) => Effect.Effect<number, Failure>
  /**
   * Deletes the snapshots of the executions named (of one tenant), answering
   * how many (`Baton.deleteThread`; idempotent).
   *
   * @since 0.1.0
   */
  readonly deleteExecutions: (tenantId: TenantId, executionIds: ReadonlyArray<ExecutionId>) => Effect.Effect<number, Failure>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

const endStatuses: ReadonlyArray<EndStatus> = ["Finished", "Failed", "Cancelled"]

/**
 * The store of execution snapshots.
 *
 * @category services
 * @since 0.1.0
 */
export class ExecutionHistoryStore extends Context.Service<ExecutionHistoryStore, ExecutionHistoryStoreShape>()("baton/ExecutionHistoryStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: ExecutionHistoryStoreShape): ExecutionHistoryStoreShape => ({
  saveIfAbsent: (snapshot, lease, now) => {
    const op = "ExecutionHistoryStore.saveIfAbsent"
    return V.checked([
      V.nonEmpty(op, "snapshot.tenantId", snapshot?.tenantId),
      V.nonEmpty(op, "snapshot.executionId", snapshot?.executionId),
      V.nonEmpty(op, "snapshot.workflowName", snapshot?.workflowName),
      V.oneOf(op, "snapshot.status", snapshot?.status, endStatuses),
      V.time(op, "snapshot.endedAt", snapshot?.endedAt),
      V.json(op, "snapshot", snapshot),
      ...V.lease(op, lease),
      lease?.tenantId === snapshot?.tenantId && lease?.rootExecutionId === snapshot?.executionId
        ? Effect.void
        : Effect.fail(new InvalidInputError({ operation: op, field: "lease", reason: "must be the lease of the snapshot's execution tree" })),
      V.time(op, "now", now)
    ], () => impl.saveIfAbsent(snapshot, lease, now))
  },
  get: (tenantId, executionId) =>
    V.checked(V.ids("ExecutionHistoryStore.get", { tenantId, executionId }), () => impl.get(tenantId, executionId)),
  list: (query) => {
    const op = "ExecutionHistoryStore.list"
    return V.checked([
      V.nonEmpty(op, "tenantId", query?.tenantId),
      query?.workflowName === undefined ? Effect.void : V.nonEmpty(op, "workflowName", query.workflowName),
      query?.from === undefined ? Effect.void : V.time(op, "from", query.from),
      query?.to === undefined ? Effect.void : V.time(op, "to", query.to),
      V.wholeAtLeast(op, "limit", query?.limit, 1),
      query?.after === undefined ? Effect.void : V.time(op, "after.endedAt", query.after.endedAt),
      query?.after === undefined ? Effect.void : V.nonEmpty(op, "after.executionId", query.after.executionId)
    ], () => impl.list(query))
  },
  deleteEndedBefore: (cutoff, limit) =>
    V.checked([
      V.time("ExecutionHistoryStore.deleteEndedBefore", "cutoff", cutoff),
      V.wholeAtLeast("ExecutionHistoryStore.deleteEndedBefore", "limit", limit, 1)
    ], () => impl.deleteEndedBefore(cutoff, limit)),
  deleteExecutions: (tenantId, executionIds) =>
    V.checked([
      V.nonEmpty("ExecutionHistoryStore.deleteExecutions", "tenantId", tenantId),
      ...(Array.isArray(executionIds) ? executionIds : [undefined]).map((id) => V.nonEmpty("ExecutionHistoryStore.deleteExecutions", "executionIds", id))
    ], () => executionIds.length === 0 ? Effect.succeed(0) : impl.deleteExecutions(tenantId, executionIds)),
  ping: impl.ping
})

/**
 * The cursor just after a snapshot.
 *
 * @category constructors
 * @since 0.1.0
 */
export const cursorOf = (s: ExecutionSnapshot): HistoryCursor => ({ endedAt: s.endedAt, executionId: s.executionId })

/**
 * Snapshots as JSON Lines (one JSON object a line, each line ending with a
 * newline): what an evaluation job reads.
 *
 * @category constructors
 * @since 0.1.0
 */
export const toJsonLines = (snapshots: ReadonlyArray<ExecutionSnapshot>): string =>
  snapshots.map((s) => JSON.stringify(s) + "\n").join("")

/**
 * Every snapshot of a query, page by page (`pageSize` each), as JSON Lines
 * chunks handed to `write` — an export that never holds the whole history.
 * Answers how many snapshots were written.
 *
 * @category constructors
 * @since 0.1.0
 */
export const exportJsonLines = <E, R>(
  query: Omit<HistoryQuery, "limit" | "after"> & { readonly pageSize?: number | undefined },
  write: (chunk: string) => Effect.Effect<void, E, R>
): Effect.Effect<number, Failure | E, ExecutionHistoryStore | R> =>
  Effect.gen(function*() {
    const store = yield* ExecutionHistoryStore
    const { pageSize = 100, ...rest } = query
    let after: HistoryCursor | undefined
    let total = 0
    while (true) {
      const page = yield* store.list({ ...rest, limit: pageSize, after })
      if (page.length > 0) yield* write(toJsonLines(page))
      total += page.length
      if (page.length < pageSize) return total
      after = cursorOf(page[page.length - 1]!)
    }
  })
