/**
 * `Baton.deleteThread`: removes every row of a thread — its checkpoints,
 * pending writes and blobs, its records and pause answers, its pauses, the
 * history snapshots and request keys of its executions, the tree keys
 * (pseudonym key and cancel requests included) and queued children of its
 * trees — tenant- and owner-checked like every call.
 *
 * First its trees come to rest: a Paused tree is ended under its lease
 * (as `cancel` ends one, undos included); a tree a pass holds refuses the
 * delete with `ThreadHeldError` unless `cancelFirst` (then it is cancelled
 * and awaited). Then a marker goes in — a Running root of the reserved
 * workflow `@baton/deleteThread`, recorded by the store's own one-active-
 * root-per-thread rule, so a racing start or resume wins (the delete is
 * refused) or loses (it meets the marker or an ended tree) — and the rows
 * are deleted under the marker's lease, the records and the marker last.
 * A delete that dies halfway leaves the marker: nothing can start on the
 * thread; calling `deleteThread` again, or the recovery sweep of any
 * instance once the marker's lease expired, finishes it.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { ThreadHeldError } from "../../Errors.ts"
import { CheckpointStore } from "../../../stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../../stores/ChildQueueStore.ts"
import { ExecutionHistoryStore } from "../../../stores/ExecutionHistoryStore.ts"
import { type ExecutionRecord, newRunning } from "../../../stores/ExecutionRecord.ts"
import { defaultTenant, IdGenerator, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { RequestStore } from "../../../stores/RequestStore.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"
import { awaitExecution } from "../calls/Await.ts"
import { cancel } from "../calls/CancelThread.ts"
import { checkThread } from "../calls/Threads.ts"
import { Instance, notStopping } from "../Instance.ts"
import * as LeaseHolder from "../lease/LeaseHolder.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"

/**
 * The reserved workflow name of a deletion's marker root.
 *
 * @category constants
 * @since 0.1.0
 */
export const markerWorkflow = "@baton/deleteThread"

/**
 * Whose thread `Baton.deleteThread` deletes, and whether it cancels a held tree first.
 *
 * @category models
 * @since 0.1.0
 */
export interface DeleteThreadOptions {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
  /** Cancel the thread's running or paused execution first (and await its end) instead of failing with `ThreadHeldError`. */
  readonly cancelFirst?: boolean | undefined
}

const isRoot = (r: ExecutionRecord) => r.executionId === r.rootExecutionId
const isActive = (r: ExecutionRecord) => r.status === "Running" || r.status === "Paused"
const isMarker = (r: ExecutionRecord) => isRoot(r) && r.workflowName === markerWorkflow && r.status === "Running"

/** The marker's lease, held in the current scope (none when another holder has it). */
const holdMarker = (marker: { readonly tenantId: string; readonly rootExecutionId: string }) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    return yield* LeaseHolder.acquire({
      tenantId: marker.tenantId,
      rootExecutionId: marker.rootExecutionId,
      holder: instance.nextHolder(),
      leaseMillis: instance.config.leaseMillis,
      renewMillis: instance.config.renewMillis,
      instanceId: instance.instanceId
    })
  })

/** Deletes every row of the thread (idempotent), the records and the marker last. Run under the marker's lease. */
const deleteRows = (tenantId: TenantId, threadId: ThreadId) =>
  Effect.gen(function*() {
    const records = yield* RecordStore
    const all = yield* records.listByThread(tenantId, threadId)
    yield* (yield* PauseStore).deleteThread(tenantId, threadId)
    const requests = yield* Effect.serviceOption(RequestStore)
    if (Option.isSome(requests)) yield* requests.value.deleteThread(tenantId, threadId)
    const history = yield* Effect.serviceOption(ExecutionHistoryStore)
    if (Option.isSome(history)) yield* history.value.deleteExecutions(tenantId, all.map((r) => r.executionId))
    const tree = yield* TreeStore
    const queue = yield* Effect.serviceOption(ChildQueueStore)
    for (const root of all.filter(isRoot)) {
      yield* tree.deleteRoot(tenantId, root.rootExecutionId)
      if (Option.isSome(queue)) yield* queue.value.deleteRoot(tenantId, root.rootExecutionId)
    }
    yield* (yield* CheckpointStore).deleteThread(tenantId, threadId)
    yield* records.deleteThread(tenantId, threadId)
  })

/** Finishes a deletion whose marker is on record: under its lease, or refused while another deleter holds it. */
const finish = (marker: ExecutionRecord) =>
  Effect.scoped(Effect.gen(function*() {
    const held = yield* holdMarker(marker)
    if (Option.isNone(held)) return yield* new ThreadHeldError({ tenantId: marker.tenantId, threadId: marker.threadId, executionId: marker.executionId })
    yield* deleteRows(marker.tenantId, marker.threadId)
  }))

/** Brings one active root to rest: a Paused one is ended here; a held one refuses, unless `cancelFirst`. */
const settleRoot = Effect.fnUntraced(function*(root: ExecutionRecord, options: DeleteThreadOptions | undefined) {
  const held = () => new ThreadHeldError({ tenantId: root.tenantId, threadId: root.threadId, executionId: root.executionId })
  if (root.status === "Paused" && (yield* TreeDriver.endIfFree(root))) return
  const now = yield* (yield* RecordStore).getRecord(root.tenantId, root.executionId)
  if (Option.isNone(now) || !isActive(now.value)) return
  if (options?.cancelFirst !== true) return yield* held()
  yield* cancel(root.threadId, { tenantId: root.tenantId, ownerId: options.ownerId })
  yield* awaitExecution(root.executionId, { tenantId: root.tenantId, ownerId: options.ownerId }).pipe(
    Effect.catchTag(["ExecutionCancelledError", "ExecutionFailedError", "UnknownExecutionError"], () => Effect.void),
    Effect.catchTag(["AwaitTimeoutError", "UnknownWorkflowError"], () => Effect.fail(held()))
  )
})

/** A new marker root of the thread, recorded Running under its lease: the thread's one active root from now on. */
const markThread = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId) {
  const executionId = yield* (yield* IdGenerator).make("execution")
  const now = yield* Clock.currentTimeMillis
  const marker = newRunning({ tenantId, executionId, threadId, workflow: { name: markerWorkflow, version: "1", configHash: markerWorkflow }, now })
  const held = yield* holdMarker(marker)
  // Taken just now on a fresh id: only a store fault leaves it to another holder.
  if (Option.isNone(held)) return yield* new ThreadHeldError({ tenantId, threadId, executionId })
  const started = yield* (yield* RecordStore).startRoot(marker)
  if (started._tag === "ThreadBusy") {
    return yield* new ThreadHeldError({ tenantId, threadId, executionId: started.active.executionId })
  }
  yield* deleteRows(tenantId, threadId)
})

/**
 * Deletes the thread (see the module).
 *
 * @category internal
 * @since 0.1.0
 */
export const deleteThread = (threadId: ThreadId, options?: DeleteThreadOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const tenantId = options?.tenantId ?? defaultTenant
    yield* checkThread(tenantId, threadId, options?.ownerId)
    const roots = (yield* (yield* RecordStore).listByThread(tenantId, threadId)).filter(isRoot)
    const marker = roots.find(isMarker)
    if (marker !== undefined) return yield* finish(marker)
    for (const root of roots.filter(isActive)) yield* settleRoot(root, options)
    yield* Effect.scoped(markThread(tenantId, threadId))
  }).pipe(Effect.asVoid).pipe(Effect.withSpan("Baton.deleteThread"))

/**
 * The recovery sweep's part: a marker left by a deletion that died is
 * finished by whoever takes its lease once it expired (a live deleter keeps
 * it). Failures are logged; the next look tries again.
 *
 * @category internal
 * @since 0.1.0
 */
export const finishOrphan = (marker: ExecutionRecord) =>
  Effect.scoped(Effect.gen(function*() {
    const held = yield* holdMarker(marker)
    if (Option.isNone(held)) return
    yield* deleteRows(marker.tenantId, marker.threadId)
    yield* Effect.logInfo(`finished the deletion of thread ${marker.threadId} (tenant ${marker.tenantId}) that another deleter left`)
  })).pipe(Effect.catch((e) => Effect.logWarning(`finishing the deletion of thread ${marker.threadId} failed; the next look tries again: ${e.message}`)))
