/**
 * Carrying an answer from a resting child up to what moves it again.
 *
 * A child rests Paused at its own pause or on its own children, and its
 * parent waits (see `ChildWaits`). Once the child may go on — a decision for
 * it was recorded, or its own children ended — whoever learnt it continues
 * it the way it runs:
 *
 * - a queued child (placement `"any"`) goes back to the queue
 *   (`ChildQueueStore.requeuePaused`): any instance with the child's
 *   workflow and a free slot claims it and continues it under its own
 *   lease, completes its row, and the last child of the launch wakes the
 *   parent as usual;
 * - an inline child (placement `"parent"`) is continued by its parent's
 *   step: the parent's paused-children wait is answered, and so on up to the
 *   first ancestor that is a root or a queued child — a root is driven, a
 *   queued child handed back to the queue.
 *
 * Every step is idempotent (a second answer is a no-op, a row requeued once),
 * so a caller that dies partway leaves the rest to the recovery sweep, which
 * carries on from a child holding a decision it has not taken.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Option } from "effect"
import { ChildQueueStore } from "../../../stores/ChildQueueStore.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { Instance } from "../Instance.ts"
import * as ChildLaunch from "./ChildLaunch.ts"
import * as ChildWaits from "./ChildWaits.ts"

/** How far up a carry climbs at most (a bound against a malformed tree). */
const maxClimb = 64

/**
 * A queued child's row back to the queue when it rests Paused, the claim
 * loops told: true when it was handed back here. `None` when the record is
 * not a queued child.
 *
 * @category internal
 * @since 0.1.0
 */
export const requeue = (record: ExecutionRecord) =>
  Effect.gen(function*() {
    const queue = yield* Effect.serviceOption(ChildQueueStore)
    if (Option.isNone(queue)) return Option.none<boolean>()
    const row = yield* queue.value.get(record.tenantId, record.executionId)
    if (Option.isNone(row)) return Option.none<boolean>()
    const handed = yield* queue.value.requeuePaused(record.tenantId, record.executionId)
    if (handed) {
      const instance = yield* Instance
      Context.get(instance.services, ChildLaunch.ChildRunner).queued(record.tenantId, row.value.launchId ?? record.executionId)
    }
    return Option.some(handed)
  })

/**
 * Continues a child that may go on, the way it runs (see the module's
 * doc): answers the paused-children waits above an inline child and hands a
 * queued child back to the queue. `Some(root)` when the climb reached a
 * root whose wait it answered (or `record` is a root): the caller drives
 * that root. `None` when a claimer continues it, or nothing waits for it
 * (a parent still running reads it before it rests).
 *
 * @category internal
 * @since 0.1.0
 */
export const continueUp = (record: ExecutionRecord) =>
  Effect.gen(function*() {
    const records = yield* RecordStore
    const pauses = yield* PauseStore
    const instance = yield* Instance
    let at = record
    for (let i = 0; i < maxClimb; i++) {
      if (at.parentExecutionId === null) return Option.some(at)
      if (Option.isSome(yield* requeue(at))) return Option.none<ExecutionRecord>()
      const parent = yield* records.getRecord(at.tenantId, at.parentExecutionId)
      if (Option.isNone(parent) || parent.value.status !== "Paused") return Option.none<ExecutionRecord>()
      const pending = yield* pauses.listByRoot(at.tenantId, parent.value.rootExecutionId, ["Pending"])
      const childId = at.executionId
      const wait = pending.find((p) => ChildWaits.pausedWaitOf(p.payload)?.children.includes(childId) === true)
      if (wait === undefined) return Option.none<ExecutionRecord>()
      yield* ChildLaunch.answerWait(pauses, wait, instance.instanceId, yield* Clock.currentTimeMillis)
      at = parent.value
    }
    return Option.none<ExecutionRecord>()
  })

/**
 * A queued child's claimer found it resting Paused and completed its row so:
 * one whose decision landed meanwhile goes back to the queue at once (the
 * resume found it still Running and left it to this claimer); otherwise the
 * callers awaiting the root above it are woken (their tree now shows the
 * child's pause).
 *
 * @category internal
 * @since 0.1.0
 */
export const rested = (tenantId: string, executionId: string) =>
  Effect.gen(function*() {
    const record = yield* (yield* RecordStore).getRecord(tenantId, executionId)
    if (Option.isNone(record)) return
    if (yield* ChildWaits.mayGoOn(tenantId, executionId)) {
      yield* requeue(record.value)
      return
    }
    const top = yield* ChildWaits.topOf(record.value)
    ;(yield* LeaseWakeups).released(tenantId, top.rootExecutionId)
  })
