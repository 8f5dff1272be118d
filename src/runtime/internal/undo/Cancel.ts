/**
 * Cancel from any instance. A tree running here is aborted at once; a paused
 * one is ended under its lease; one running elsewhere gets a durable cancel
 * request (the reserved tree key `@baton/cancel-request`) that its holder
 * reads after every renewal the store confirms, before resting paused and
 * before finishing (a tree answered `cancelled: true` never ends Finished) —
 * and that whoever takes the tree's lease next reads first.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { type LeaseLostError } from "../../../stores/Errors.ts"
import { ExecutionCancelledError } from "../../Errors.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as Timers from "../timers/Deliver.ts"
import * as Gate from "../keyed/Gate.ts"
import * as Debounce from "../keyed/Debounce.ts"
import * as History from "../observe/History.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { Lease } from "../../../stores/Lease.ts"
import { Instance } from "../Instance.ts"
import * as Metering from "../observe/Metering.ts"
import * as Metrics from "../../Metrics.ts"
import { Observer } from "../../Observer.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"
import * as Undo from "./Undo.ts"

/**
 * The reserved tree key (under `@baton/`) of a cancel request.
 *
 * @category internal
 * @since 0.1.0
 */
export const requestName = "cancel-request"
/**
 * The reserved tree key under which a cancel request is kept.
 *
 * @category internal
 * @since 0.1.0
 */
export const requestKey = `@baton/${requestName}`

/**
 * Whether the tree has a cancel request.
 *
 * @category internal
 * @since 0.1.0
 */
export const isRequested = (tenantId: string, rootExecutionId: string) =>
  TreeStore.use((tree) => tree.get(tenantId, rootExecutionId, requestKey)).pipe(Effect.map(Option.isSome))

/**
 * Writes the request (once: a second cancel keeps the first).
 *
 * @category internal
 * @since 0.1.0
 */
export const request = (tenantId: string, rootExecutionId: string, by: { readonly ownerId: string | undefined; readonly instanceId: string }) =>
  Effect.gen(function*() {
    const tree = yield* TreeStore
    const now = yield* Clock.currentTimeMillis
    return yield* tree.saveReservedIfAbsent(tenantId, rootExecutionId, requestName, {
      requestedAt: now,
      ownerId: by.ownerId ?? null,
      instanceId: by.instanceId
    })
  })

/**
 * Ends a tree as cancelled, without a pass: its record Cancelled (only from
 * Running or Paused, so the error hook fires once across instances), its
 * pauses withdrawn, its tree keys removed. Call it holding the tree's lease:
 * the record's transition is fenced by it (a stale holder's is refused with
 * `LeaseLostError`, as is one whose `guard` fails), and the execution
 * history snapshot is written under it. With an `unwinder` (the holder's
 * pass), the tree's open undos run first (see `Undo.unwind`); a tree that
 * was already unwinding for a failure, or whose undo failed, ends Failed
 * instead (answering that `ExecutionFailedError`).
 *
 * @category internal
 * @since 0.1.0
 */
export const endTree = Effect.fnUntraced(function*(
  record: ExecutionRecord,
  lease: Lease,
  guard: Effect.Effect<void, LeaseLostError> = Effect.void,
  unwinder?: Undo.Unwinder
) {
  const records = yield* RecordStore
  const pauses = yield* PauseStore
  const tree = yield* TreeStore
  const instance = yield* Instance
  const observer = yield* Observer
  const { rootExecutionId, tenantId } = record
  yield* guard
  // Its children (launched anywhere) are cancelled too: the queued never start, the running are asked to stop.
  yield* ChildLaunch.cancelChildren(instance, pauses, record, (child) =>
    Effect.provideService(request(tenantId, child, { ownerId: undefined, instanceId: instance.instanceId }), TreeStore, tree))
  if (unwinder !== undefined) {
    const outcome = yield* Undo.unwind(unwinder, Undo.cancelledWhy(yield* Clock.currentTimeMillis))
    if (outcome.unwinding.reason === "Failed" || outcome.failed.length > 0) {
      const error = Undo.failedError(record, outcome)
      yield* Undo.endFailed(unwinder, error)
      return error
    }
    yield* guard
  }
  // Read after the undos: the fenced writes below are checked at this time.
  const now = yield* Clock.currentTimeMillis
  for (const p of yield* pauses.listByRoot(tenantId, rootExecutionId, ["Pending", "Resolved"])) {
    yield* pauses.withdraw(tenantId, p.pauseId, now)
    yield* Metering.add(Metrics.pausesPending, instance.instanceId, undefined, -1)
  }
  // The snapshot (with the pauses withdrawn) before the record ends: a holder stopped in between leaves it to the next one.
  if (record.status === "Running" || record.status === "Paused") {
    yield* History.save(record, "Cancelled", "cancelled", lease, unwinder?.recorder)
  }
  let ended = false
  for (const from of ["Running", "Paused"] as const) {
    if (ended) break
    ended = yield* records.setStatusFenced({ tenantId, executionId: record.executionId, from, to: "Cancelled", now, error: "cancelled", lease })
  }
  yield* tree.deleteRoot(tenantId, rootExecutionId)
  // Its timers and its signals no wait took go with it.
  yield* Timers.dropRows(instance, record)
  // A root of a concurrency key frees its slot (or leaves its key's line): the next one is admitted.
  if (ended) yield* Gate.ended(instance, record)
  // A debounced root cancelled before its window fired: the window goes, the next start of its key opens another.
  if (ended) yield* Debounce.ended(instance, record)
  // Its children's rows stay: a running child asked to stop is still ended (cancelled) by whoever claims it.
  if (ended) {
    yield* Metering.add(Metrics.executionsEnded, instance.instanceId, { workflow: record.workflowName, status: "Cancelled" })
    yield* observer.onError({
      tenantId,
      executionId: record.executionId,
      rootExecutionId,
      instanceId: instance.instanceId,
      workflowName: record.workflowName,
      error: "cancelled"
    })
  }
  return new ExecutionCancelledError({ tenantId, executionId: record.executionId })
})
