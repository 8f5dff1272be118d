/**
 * Threads and execution records.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import { InvalidInputError, type LeaseLostError, type StoreError } from "./Errors.ts"
import {
  type ExecutionRecord,
  type ExecutionStatus,
  executionStatuses,
  type ListPosition,
  maxListLimit,
  type PauseAnswer,
  type RecordCursor,
  type RecordPage,
  type RecordQuery,
  type StartRootResult,
  type ThreadRecord
} from "./ExecutionRecord.ts"
import { type ExecutionId, IdGenerator, type TenantId, type ThreadId } from "./Ids.ts"
import { storableError } from "./internal/storable.ts"
import * as V from "./internal/validate.ts"
import type { Lease } from "./Lease.ts"

export type Failure = StoreError | InvalidInputError

/**
 * What `setStatus` takes.
 *
 * @category models
 * @since 0.1.0
 */
export interface SetStatusInput {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly from: ExecutionStatus
  readonly to: ExecutionStatus
  readonly now: number
  readonly error?: string | null | undefined
}

/**
 * What `setStatusFenced` takes: a transition and the holder's lease of the record's tree.
 *
 * @category models
 * @since 0.1.0
 */
export interface FencedSetStatusInput extends SetStatusInput {
  readonly lease: Lease
}

/**
 * What a backend's `list` takes: the query with its cursor decoded.
 *
 * @category models
 * @since 0.1.0
 */
export interface ListInput {
  readonly tenantId: TenantId
  readonly status?: ExecutionStatus | undefined
  readonly workflow?: string | undefined
  readonly threadId?: ThreadId | undefined
  readonly after: Option.Option<ListPosition>
  readonly limit: number
}

/**
 * Semantics every implementation keeps:
 * - everything is keyed by tenant: a read with another tenant finds nothing;
 * - `createThread` with a `threadId` that exists returns the existing thread
 *   unchanged (`created: false`); without one, the id comes from `IdGenerator`;
 * - `createRecord` writes a new record once (false if the id exists);
 * - `createRecord` writes a new record once (false if the id exists, and
 *   false for an active root — Running or Paused, its own root — when its
 *   thread already has one: a thread has at most one active root);
 * - `startRoot` is the atomic start of a new root: in one statement or
 *   transaction it records the root (Running) only if its thread has no
 *   active root, else answers `ThreadBusy` with the active one; of N
 *   concurrent starts on one idle thread, across connections, exactly one
 *   answers `Started`;
 * - `findActiveRoot` answers the thread's active root, if any;
 * - `setStatus` is a compare-and-set: it changes the status only if it is
 *   still `from`, atomically across instances;
 * - an `error` text is written storable (`storableText`: NUL and lone
 *   surrogates escaped, at most 8192 characters), so no error a step throws
 *   can make a status write fail;
 * - a `setStatus`/`setStatusFenced` move to another status but Failed ends
 *   the record's stretch of failed recoveries: `recoveryFailures` and
 *   `recoverAfter` are cleared, and so is `error` when it held the last
 *   failed recovery's cause and the move gives none (`resetsRecoveryFailures`);
 *   a move to Failed keeps the count (it tells how the execution ended);
 * - `setStatusFenced` is the same compare-and-set made by a holder: in the
 *   same transaction the lease row must still be (`lease.holder`,
 *   `lease.epoch`) and live at `now`, else it fails with `LeaseLostError`
 *   and changes nothing (a stale holder's transition is refused, whatever
 *   the clocks say); a record outside `lease.rootExecutionId`'s tree is not
 *   moved (false);
 * - `list` pages over one tenant's records newest first (by `createdAt`,
 *   then `executionId`, both descending); a page's `next` cursor continues
 *   strictly after its last record, so a record present for the whole paging
 *   is seen exactly once and records created meanwhile are not (they are
 *   newer than the first page). The cursor is opaque text; a malformed one
 *   is `InvalidInputError`;
 * - `findByStatus` pages over every tenant in the stable order
 *   (tenantId, executionId): each page starts strictly after `after`, so a
 *   record present for the whole paging is seen exactly once, however many
 *   rows are added meanwhile.
 */
export interface RecordStoreShape {
  readonly createThread: (input: {
    readonly tenantId: TenantId
    readonly threadId?: ThreadId | undefined
    readonly ownerId?: string | null | undefined
    readonly now: number
  }) => Effect.Effect<{ readonly thread: ThreadRecord; readonly created: boolean }, Failure>
  readonly getThread: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<Option.Option<ThreadRecord>, Failure>
  readonly createRecord: (record: ExecutionRecord) => Effect.Effect<boolean, Failure>
  /** Records a new root, Running, if its thread has no active root — atomically. */
  readonly startRoot: (record: ExecutionRecord) => Effect.Effect<StartRootResult, Failure>
  /** The thread's active root (Running or Paused), if any. */
  readonly findActiveRoot: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<Option.Option<ExecutionRecord>, Failure>
  readonly getRecord: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionRecord>, Failure>
  readonly setStatus: (input: SetStatusInput) => Effect.Effect<boolean, Failure>
  /** `setStatus` fenced by the holder's lease, checked in the same transaction. */
  readonly setStatusFenced: (input: FencedSetStatusInput) => Effect.Effect<boolean, Failure | LeaseLostError>
  /** One page of a tenant's records, newest first. */
  readonly list: (query: RecordQuery) => Effect.Effect<RecordPage, Failure>
  /**
   * Counts a failed recovery of a Running record: a compare-and-set from
   * `failures` (the count the caller read) to `failures + 1`, keeping the
   * cause in `error` and `retryAt` as the earliest next recovery. False when
   * the record is not Running or another instance counted first.
   */
  readonly noteRecoveryFailure: (input: {
    readonly tenantId: TenantId
    readonly executionId: ExecutionId
    readonly failures: number
    readonly retryAt: number
    readonly error: string
    readonly now: number
  }) => Effect.Effect<boolean, Failure>
  readonly findByStatus: (
    status: ExecutionStatus,
    limit: number,
    after: Option.Option<RecordCursor>
  ) => Effect.Effect<ReadonlyArray<ExecutionRecord>, Failure>
  /** Every record of a thread, oldest first. */
  readonly listByThread: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<ReadonlyArray<ExecutionRecord>, Failure>
  /**
   * Records who answered a pause (an answer per pause; a second one for the
   * same pause is ignored, whoever writes it). The runtime writes it twice
   * for one answer: the resumer after resolving the pause, and the pass that
   * feeds the decision, from the pause — so it is kept when the resumer dies
   * between its writes. Implement it as an insert-if-absent.
   */
  readonly savePauseAnswer: (answer: PauseAnswer) => Effect.Effect<void, Failure>
  readonly listPauseAnswers: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<ReadonlyArray<PauseAnswer>, Failure>
  /**
   * Deletes the thread: its records, their pause answers and the thread
   * itself, in one atomic step, answering how many records went
   * (`Baton.deleteThread`; idempotent).
   *
   * @since 0.1.0
   */
  readonly deleteThread: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<number, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * Whether a move from `from` to `to` clears the record's count of failed
 * recoveries: a pass that moved the execution on — to a pause, an end, or
 * from a pause back to Running — was a recovery that worked. A move to
 * Failed keeps the count (it tells how the execution ended); Running to
 * Running (a pass taking the tree up again) is no move.
 *
 * @category utils
 * @since 0.1.0
 */
export const resetsRecoveryFailures = (from: ExecutionStatus, to: ExecutionStatus): boolean => from !== to && to !== "Failed"

/**
 * What a backend implements: `createThread` receives the id already chosen;
 * `list` receives the cursor decoded and answers at most `limit` records
 * (the contract asks for one more than the caller's limit to know whether a
 * next page exists).
 */
export interface RecordStoreBackend extends Omit<RecordStoreShape, "createThread" | "list"> {
  readonly createThread: (thread: ThreadRecord) => Effect.Effect<{ readonly thread: ThreadRecord; readonly created: boolean }, Failure>
  readonly list: (input: ListInput) => Effect.Effect<ReadonlyArray<ExecutionRecord>, Failure>
}

/** A list cursor: the position of a page's last record, as opaque text. */
const encodeCursor = (p: ListPosition): string => Buffer.from(JSON.stringify([p.createdAt, p.executionId])).toString("base64url")

const decodeCursor = (cursor: string | undefined): Effect.Effect<Option.Option<ListPosition>, InvalidInputError> => {
  if (cursor === undefined) return Effect.succeed(Option.none())
  const bad = new InvalidInputError({
    operation: "RecordStore.list",
    field: "cursor",
    reason: "is not a cursor this store returned (pass a page's `next` as it came, or none for the first page)"
  })
  if (typeof cursor !== "string" || cursor.length > 1000) return Effect.fail(bad)
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    if (
      Array.isArray(value) && value.length === 2 && typeof value[0] === "number" && Number.isFinite(value[0]) &&
      typeof value[1] === "string" && value[1].length > 0 && V.isWellFormed(value[1])
    ) return Effect.succeed(Option.some({ createdAt: value[0], executionId: value[1] }))
  } catch {
    // falls through to the failure
  }
  return Effect.fail(bad)
}

const recordChecks = (operation: string, r: ExecutionRecord) => [
  V.nonEmpty(operation, "tenantId", r.tenantId),
  V.nonEmpty(operation, "executionId", r.executionId),
  V.nonEmpty(operation, "threadId", r.threadId),
  V.nonEmpty(operation, "rootExecutionId", r.rootExecutionId),
  r.parentExecutionId == null ? Effect.void : V.nonEmpty(operation, "parentExecutionId", r.parentExecutionId),
  V.nonEmpty(operation, "workflowName", r.workflowName),
  V.wholeAtLeast(operation, "depth", r.depth, 1),
  V.oneOf(operation, "status", r.status, executionStatuses),
  V.time(operation, "createdAt", r.createdAt),
  V.time(operation, "updatedAt", r.updatedAt)
]

const statusChecks = (operation: string, input: SetStatusInput) => [
  V.nonEmpty(operation, "tenantId", input.tenantId),
  V.nonEmpty(operation, "executionId", input.executionId),
  V.oneOf(operation, "from", input.from, executionStatuses),
  V.oneOf(operation, "to", input.to, executionStatuses),
  V.time(operation, "now", input.now)
]

const must = (operation: string, field: string, ok: boolean, reason: string) =>
  ok ? Effect.void : Effect.fail(new InvalidInputError({ operation, field, reason }))

/**
 * The service of threads and execution records; see `RecordStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class RecordStore extends Context.Service<RecordStore, RecordStoreShape>()("baton/RecordStore") {}

/**
 * Adds the contract's argument checks and id generation to a backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(impl: RecordStoreBackend) {
  const ids = yield* IdGenerator
  const shape: RecordStoreShape = {
    createThread: (input) =>
      V.checked([
        V.nonEmpty("RecordStore.createThread", "tenantId", input.tenantId),
        input.threadId === undefined ? Effect.void : V.nonEmpty("RecordStore.createThread", "threadId", input.threadId),
        input.ownerId == null ? Effect.void : V.nonEmpty("RecordStore.createThread", "ownerId", input.ownerId),
        V.time("RecordStore.createThread", "now", input.now)
      ], () => Effect.flatMap(
        input.threadId === undefined ? ids.make("thread") : Effect.succeed(input.threadId),
        (threadId) => impl.createThread({ tenantId: input.tenantId, threadId, ownerId: input.ownerId ?? null, createdAt: input.now })
      )),
    getThread: (tenantId, threadId) =>
      V.checked(V.ids("RecordStore.getThread", { tenantId, threadId }), () => impl.getThread(tenantId, threadId)),
    createRecord: (r) => V.checked(recordChecks("RecordStore.createRecord", r), () => impl.createRecord({ ...r, error: storableError(r.error) })),
    startRoot: (r) =>
      V.checked([
        ...recordChecks("RecordStore.startRoot", r),
        must("RecordStore.startRoot", "rootExecutionId", r?.rootExecutionId === r?.executionId, "must be the record's own executionId (a root)"),
        // A launched child runs as the root of its own tree: it names its parent and sits deeper than 1.
        must("RecordStore.startRoot", "depth", r?.depth === 1 || (r?.parentExecutionId != null && r?.depth >= 2), "must be 1 for a root, ≥ 2 only for a launched child (one naming its parent)"),
        must("RecordStore.startRoot", "parentExecutionId", r?.parentExecutionId == null || r?.depth >= 2, "must be null for a root (depth 1); only a launched child (depth ≥ 2) names its parent"),
        V.oneOf("RecordStore.startRoot", "status", r?.status, ["Running"])
      ], () => impl.startRoot({ ...r, parentExecutionId: r.parentExecutionId ?? null, error: storableError(r.error) })),
    findActiveRoot: (tenantId, threadId) =>
      V.checked(V.ids("RecordStore.findActiveRoot", { tenantId, threadId }), () => impl.findActiveRoot(tenantId, threadId)),
    getRecord: (tenantId, executionId) =>
      V.checked(V.ids("RecordStore.getRecord", { tenantId, executionId }), () => impl.getRecord(tenantId, executionId)),
    setStatus: (input) => V.checked(statusChecks("RecordStore.setStatus", input), () => impl.setStatus({ ...input, error: storableError(input.error) })),
    setStatusFenced: (input) =>
      V.checked([
        ...statusChecks("RecordStore.setStatusFenced", input),
        ...V.lease("RecordStore.setStatusFenced", input.lease),
        must("RecordStore.setStatusFenced", "lease.tenantId", input.lease?.tenantId === input.tenantId, "must be the record's tenant")
      ], () => impl.setStatusFenced({ ...input, error: storableError(input.error) })),
    list: (query) =>
      V.checked([
        V.nonEmpty("RecordStore.list", "tenantId", query.tenantId),
        query.status === undefined ? Effect.void : V.oneOf("RecordStore.list", "status", query.status, executionStatuses),
        query.workflow === undefined ? Effect.void : V.nonEmpty("RecordStore.list", "workflow", query.workflow),
        query.threadId === undefined ? Effect.void : V.nonEmpty("RecordStore.list", "threadId", query.threadId),
        V.wholeAtLeast("RecordStore.list", "limit", query.limit, 1),
        must("RecordStore.list", "limit", !(query.limit > maxListLimit), `must be at most ${maxListLimit}`)
      ], () =>
        Effect.gen(function*() {
          const after = yield* decodeCursor(query.cursor)
          const rows = yield* impl.list({
            tenantId: query.tenantId,
            status: query.status,
            workflow: query.workflow,
            threadId: query.threadId,
            after,
            limit: query.limit + 1
          })
          const records = rows.slice(0, query.limit)
          const last = records[records.length - 1]
          return { records, next: rows.length > query.limit && last !== undefined ? encodeCursor(last) : null }
        })),
    noteRecoveryFailure: (input) =>
      V.checked([
        ...V.ids("RecordStore.noteRecoveryFailure", { tenantId: input.tenantId, executionId: input.executionId }),
        V.wholeAtLeast("RecordStore.noteRecoveryFailure", "failures", input.failures, 0),
        V.time("RecordStore.noteRecoveryFailure", "retryAt", input.retryAt),
        V.time("RecordStore.noteRecoveryFailure", "now", input.now)
      ], () => impl.noteRecoveryFailure({ ...input, error: storableError(String(input.error)) })),
    findByStatus: (status, limit, after) =>
      V.checked([
        V.oneOf("RecordStore.findByStatus", "status", status, executionStatuses),
        V.wholeAtLeast("RecordStore.findByStatus", "limit", limit, 1),
        ...(Option.isOption(after) && Option.isSome(after)
          ? [
            V.text("RecordStore.findByStatus", "after.tenantId", after.value.tenantId),
            V.text("RecordStore.findByStatus", "after.executionId", after.value.executionId)
          ]
          : [])
      ], () => impl.findByStatus(status, limit, after)),
    listByThread: (tenantId, threadId) =>
      V.checked(V.ids("RecordStore.listByThread", { tenantId, threadId }), () => impl.listByThread(tenantId, threadId)),
    deleteThread: (tenantId, threadId) =>
      V.checked(V.ids("RecordStore.deleteThread", { tenantId, threadId }), () => impl.deleteThread(tenantId, threadId)),
    savePauseAnswer: (a) =>
      V.checked([
        ...V.ids("RecordStore.savePauseAnswer", { tenantId: a.tenantId, executionId: a.executionId, pauseId: a.pauseId, answeredBy: a.answeredBy }),
        V.time("RecordStore.savePauseAnswer", "answeredAt", a.answeredAt)
      ], () => impl.savePauseAnswer(a)),
    listPauseAnswers: (tenantId, executionId) =>
      V.checked(V.ids("RecordStore.listPauseAnswers", { tenantId, executionId }), () => impl.listPauseAnswers(tenantId, executionId)),
    ping: impl.ping
  }
  return shape
})
