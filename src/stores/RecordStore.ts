/**
 * Threads and execution records.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import {
  type ExecutionRecord,
  type ExecutionStatus,
  executionStatuses,
  type PauseAnswer,
  type RecordCursor,
  type ThreadRecord
} from "./ExecutionRecord.ts"
import { type ExecutionId, IdGenerator, type TenantId, type ThreadId } from "./Ids.ts"
import { storableError } from "./internal/storable.ts"
import * as V from "./internal/validate.ts"

export type Failure = StoreError | InvalidInputError

/**
 * Semantics every implementation keeps:
 * - everything is keyed by tenant: a read with another tenant finds nothing;
 * - `createThread` with a `threadId` that exists returns the existing thread
 *   unchanged (`created: false`); without one, the id comes from `IdGenerator`;
 * - `createRecord` writes a new record once (false if the id exists);
 * - `setStatus` is a compare-and-set: it changes the status only if it is
 *   still `from`, atomically across instances;
 * - an `error` text is written storable (`storableText`: NUL and lone
 *   surrogates escaped, at most 8192 characters), so no error a step throws
 *   can make a status write fail;
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
  readonly getRecord: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionRecord>, Failure>
  readonly setStatus: (input: {
    readonly tenantId: TenantId
    readonly executionId: ExecutionId
    readonly from: ExecutionStatus
    readonly to: ExecutionStatus
    readonly now: number
    readonly error?: string | null | undefined
  }) => Effect.Effect<boolean, Failure>
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
  /** Records who answered a pause (an answer per pause; a second one for the same pause is ignored). */
  readonly savePauseAnswer: (answer: PauseAnswer) => Effect.Effect<void, Failure>
  readonly listPauseAnswers: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<ReadonlyArray<PauseAnswer>, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/** What a backend implements: `createThread` receives the id already chosen. */
export interface RecordStoreBackend extends Omit<RecordStoreShape, "createThread"> {
  readonly createThread: (thread: ThreadRecord) => Effect.Effect<{ readonly thread: ThreadRecord; readonly created: boolean }, Failure>
}

export class RecordStore extends Context.Service<RecordStore, RecordStoreShape>()("baton/RecordStore") {
  /** Adds the contract's argument checks and id generation to a backend. */
  static make = Effect.fnUntraced(function*(impl: RecordStoreBackend) {
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
        V.checked([
          V.nonEmpty("RecordStore.getThread", "tenantId", tenantId),
          V.nonEmpty("RecordStore.getThread", "threadId", threadId)
        ], () => impl.getThread(tenantId, threadId)),
      createRecord: (r) =>
        V.checked([
          V.nonEmpty("RecordStore.createRecord", "tenantId", r.tenantId),
          V.nonEmpty("RecordStore.createRecord", "executionId", r.executionId),
          V.nonEmpty("RecordStore.createRecord", "threadId", r.threadId),
          V.nonEmpty("RecordStore.createRecord", "rootExecutionId", r.rootExecutionId),
          V.nonEmpty("RecordStore.createRecord", "workflowName", r.workflowName),
          V.wholeAtLeast("RecordStore.createRecord", "depth", r.depth, 1),
          V.oneOf("RecordStore.createRecord", "status", r.status, executionStatuses),
          V.time("RecordStore.createRecord", "createdAt", r.createdAt),
          V.time("RecordStore.createRecord", "updatedAt", r.updatedAt)
        ], () => impl.createRecord({ ...r, error: storableError(r.error) })),
      getRecord: (tenantId, executionId) =>
        V.checked([
          V.nonEmpty("RecordStore.getRecord", "tenantId", tenantId),
          V.nonEmpty("RecordStore.getRecord", "executionId", executionId)
        ], () => impl.getRecord(tenantId, executionId)),
      setStatus: (input) =>
        V.checked([
          V.nonEmpty("RecordStore.setStatus", "tenantId", input.tenantId),
          V.nonEmpty("RecordStore.setStatus", "executionId", input.executionId),
          V.oneOf("RecordStore.setStatus", "from", input.from, executionStatuses),
          V.oneOf("RecordStore.setStatus", "to", input.to, executionStatuses),
          V.time("RecordStore.setStatus", "now", input.now)
        ], () => impl.setStatus({ ...input, error: storableError(input.error) })),
      noteRecoveryFailure: (input) =>
        V.checked([
          V.nonEmpty("RecordStore.noteRecoveryFailure", "tenantId", input.tenantId),
          V.nonEmpty("RecordStore.noteRecoveryFailure", "executionId", input.executionId),
          V.wholeAtLeast("RecordStore.noteRecoveryFailure", "failures", input.failures, 0),
          V.time("RecordStore.noteRecoveryFailure", "retryAt", input.retryAt),
          V.time("RecordStore.noteRecoveryFailure", "now", input.now)
        ], () => impl.noteRecoveryFailure({ ...input, error: storableError(String(input.error)) })),
      findByStatus: (status, limit, after) =>
        V.checked([
          V.oneOf("RecordStore.findByStatus", "status", status, executionStatuses),
          V.wholeAtLeast("RecordStore.findByStatus", "limit", limit, 1)
        ], () => impl.findByStatus(status, limit, after)),
      listByThread: (tenantId, threadId) =>
        V.checked([
          V.nonEmpty("RecordStore.listByThread", "tenantId", tenantId),
          V.nonEmpty("RecordStore.listByThread", "threadId", threadId)
        ], () => impl.listByThread(tenantId, threadId)),
      savePauseAnswer: (a) =>
        V.checked([
          V.nonEmpty("RecordStore.savePauseAnswer", "tenantId", a.tenantId),
          V.nonEmpty("RecordStore.savePauseAnswer", "executionId", a.executionId),
          V.nonEmpty("RecordStore.savePauseAnswer", "pauseId", a.pauseId),
          V.nonEmpty("RecordStore.savePauseAnswer", "answeredBy", a.answeredBy),
          V.time("RecordStore.savePauseAnswer", "answeredAt", a.answeredAt)
        ], () => impl.savePauseAnswer(a)),
      listPauseAnswers: (tenantId, executionId) =>
        V.checked([
          V.nonEmpty("RecordStore.listPauseAnswers", "tenantId", tenantId),
          V.nonEmpty("RecordStore.listPauseAnswers", "executionId", executionId)
        ], () => impl.listPauseAnswers(tenantId, executionId)),
      ping: impl.ping
    }
    return shape
  })
}
