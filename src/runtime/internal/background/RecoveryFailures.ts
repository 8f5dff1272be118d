/**
 * Poison handling for the recovery sweep: a recovery that fails while its
 * record stays Running (the graph throws and the Failed status cannot be
 * written, a store refuses the tree's rows, a defect) is counted in the
 * record, and the next recovery of that execution waits an exponential
 * backoff on the Clock (`recoveryBackoff`, doubled per failure, capped at
 * `recoveryBackoffMax`) — on every instance, since the wait is kept in the
 * record. Once `maxRecoveryAttempts` recoveries failed, the execution is
 * marked Failed with the last cause, said once in the log and to the
 * observer's `onError`.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"
import { Observer } from "../../Observer.ts"
import { Instance } from "../Instance.ts"
import * as Undo from "../undo/Undo.ts"

/** Failures that say nothing about the execution: it went on elsewhere, was cancelled, or this instance is stopping (a transient store failure neither). */
const notTheExecutions = new Set(["LeaseLostError", "InstanceStoppingError", "ExecutionCancelledError"])

/**
 * The failure of a recovery that counts against the execution, as text; `undefined` when the cause does not count.
 *
 * @category internal
 * @since 0.1.0
 */
export const countedCause = (cause: Cause.Cause<unknown>): string | undefined => {
  if (Cause.hasInterruptsOnly(cause)) return undefined
  const error = Cause.squash(cause)
  const tag = (error as { _tag?: unknown } | null)?._tag
  if (typeof tag === "string" && notTheExecutions.has(tag)) return undefined
  // A store failure marked transient (connection, busy) says nothing about the execution either.
  if ((error as { transient?: unknown } | null)?.transient === true) return undefined
  return error instanceof Error ? error.message : String(error)
}

/**
 * The wait after the `failures`-th failed recovery: `recoveryBackoff` doubled per earlier failure, at most `recoveryBackoffMax`.
 *
 * @category internal
 * @since 0.1.0
 */
export const backoffMillis = (config: { readonly recoveryBackoffMillis: number; readonly recoveryBackoffMaxMillis: number }, failures: number) =>
  Math.min(config.recoveryBackoffMaxMillis, config.recoveryBackoffMillis * 2 ** Math.max(0, failures - 1))

/** Marks the Running execution Failed with the last cause (the failed try still holds its lease), said once. */
const giveUp = (record: ExecutionRecord, failures: number, cause: string) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const { rootExecutionId, tenantId } = record
    // Undos on record that never ran are named, never dropped in silence (see Undo).
    const notUndone = yield* Undo.openSummary(tenantId, rootExecutionId).pipe(Effect.orElseSucceed(() => "its undos on record could not be read"))
    const error = `recovery failed ${failures} times (maxRecoveryAttempts ${instance.config.maxRecoveryAttempts}); last cause: ${cause}${
      notUndone === undefined ? "" : `; ${notUndone}`
    }`
    const now = yield* Clock.currentTimeMillis
    const failed = yield* (yield* RecordStore).setStatus({ tenantId, executionId: rootExecutionId, from: "Running", to: "Failed", now, error })
    if (!failed) return false
    yield* (yield* TreeStore).deleteRoot(tenantId, rootExecutionId)
    yield* Effect.logError(`execution ${rootExecutionId} marked Failed: ${error}`)
    yield* (yield* Observer).onError({
      tenantId,
      executionId: rootExecutionId,
      rootExecutionId,
      instanceId: instance.instanceId,
      workflowName: record.workflowName,
      error
    })
    return true
  })

/**
 * What one instance remembers of the failed recoveries it saw, by tree: the
 * backoff holds even when the store refuses to keep the count.
 *
 * @category internal
 * @since 0.1.0
 */
export type Local = Map<string, { readonly failures: number; readonly retryAt: number }>

const keyOf = (record: ExecutionRecord) => `${record.tenantId}/${record.rootExecutionId}`

/**
 * Counts a failed recovery of `record`'s tree (if it is still Running), called
 * before the failed try releases the tree's lease so no sweep retries it
 * before the count and the backoff are kept: the
 * record keeps the count, the cause and when it may be tried again; at
 * `maxRecoveryAttempts` failures it is marked Failed instead. Never fails:
 * what it cannot write is logged.
 *
 * @category internal
 * @since 0.1.0
 */
export const note = (local: Local, record: ExecutionRecord, cause: string) =>
  Effect.gen(function*() {
    const { config } = yield* Instance
    const records = yield* RecordStore
    const key = keyOf(record)
    const now = yield* Clock.currentTimeMillis
    // Remembered here first: if the store keeps nothing below, this instance still backs off.
    const seen = (local.get(key)?.failures ?? 0) + 1
    local.set(key, { failures: seen, retryAt: now + backoffMillis(config, seen) })
    const current = yield* records.getRecord(record.tenantId, record.rootExecutionId)
    if (Option.isNone(current) || current.value.status !== "Running") return local.delete(key)
    const stored = current.value.recoveryFailures ?? 0
    const failures = Math.max(stored + 1, seen)
    const given = failures >= config.maxRecoveryAttempts &&
      (yield* giveUp(current.value, failures, cause).pipe(
        Effect.catchCause((c) => Effect.as(Effect.logWarning(`could not mark execution ${record.rootExecutionId} Failed`, Cause.pretty(c)), false))
      ))
    if (given) return local.delete(key)
    const retryAt = now + backoffMillis(config, failures)
    local.set(key, { failures, retryAt })
    yield* records.noteRecoveryFailure({ tenantId: record.tenantId, executionId: record.rootExecutionId, failures: stored, retryAt, error: cause, now })
    yield* Effect.logDebug(`recovery ${failures} of execution ${record.rootExecutionId} failed; next try at ${retryAt}: ${cause}`)
  }).pipe(
    Effect.catchCause((c) => Effect.logWarning(`could not count a failed recovery of execution ${record.rootExecutionId}`, Cause.pretty(c))),
    Effect.annotateLogs({ executionId: record.rootExecutionId, tenantId: record.tenantId })
  )

/**
 * The earliest end of a backoff this instance noted that is still ahead of `now` (Infinity: none).
 *
 * @category internal
 * @since 0.1.0
 */
export const nextRetry = (local: Local, now: number) => {
  let next = Infinity
  for (const { retryAt } of local.values()) if (retryAt > now && retryAt < next) next = retryAt
  return next
}

/**
 * True while the record's backoff keeps sweeps off it; `onWait` sees when it ends.
 *
 * @category internal
 * @since 0.1.0
 */
export const backingOff = (local: Local, record: ExecutionRecord, now: number, onWait: (until: number) => void) => {
  const until = Math.max(record.recoverAfter ?? 0, local.get(keyOf(record))?.retryAt ?? 0)
  if (until <= now) return false
  onWait(until)
  return true
}
