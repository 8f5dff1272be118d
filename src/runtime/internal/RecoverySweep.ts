/**
 * The recovery sweep: every instance, at start and then every
 * `sweepInterval`, looks for Running trees whose holder is gone and
 * continues them from their last checkpoint. A live holder renews its lease,
 * so only a dead or stopped holder's tree is free; of two sweepers the lease
 * store lets exactly one take it. It also wakes at the earliest lease expiry
 * it saw and at once when a lease is released in this process, and deletes
 * settled pauses older than the retention.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Fiber, FiberSet, Option } from "effect"
import * as Cancel from "./Cancel.ts"
import type { ExecutionRecord, RecordCursor } from "../../stores/ExecutionRecord.ts"
import { Instance } from "./Instance.ts"
import { LeaseStore } from "../../stores/LeaseStore.ts"
import { LeaseWakeups } from "../../stores/LeaseWakeups.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import * as StepSlots from "./StepSlots.ts"
import * as TreeDriver from "./TreeDriver.ts"
import type { AnyWorkflow } from "../Workflow.ts"

const cursorOf = (record: ExecutionRecord): Option.Option<RecordCursor> =>
  Option.some({ tenantId: record.tenantId, executionId: record.executionId })

/**
 * The one paging loop of the sweep: every root in `status` from `from` on
 * that this instance is not moving goes to `visit`, page by page while
 * `more()` holds. `visit` answers false to stop; the loop then answers the
 * cursor just before that root (where the next look picks up), and none once
 * it went through every page.
 */
const eachRoot = Effect.fnUntraced(function*<E, R>(
  status: "Running" | "Paused",
  from: Option.Option<RecordCursor>,
  more: () => boolean,
  visit: (record: ExecutionRecord) => Effect.Effect<boolean, E, R>
) {
  const instance = yield* Instance
  const records = yield* RecordStore
  const pageSize = instance.config.sweepPageSize
  let cursor = from
  while (more()) {
    const page = yield* records.findByStatus(status, pageSize, cursor)
    for (const record of page) {
      const { rootExecutionId, tenantId } = record
      const root = record.executionId === rootExecutionId
      const movingHere = root && [...instance.passes].some((p) => p.tenantId === tenantId && p.rootExecutionId === rootExecutionId)
      if (root && !movingHere && !(yield* visit(record))) return cursor
      cursor = cursorOf(record)
    }
    if (page.length < pageSize) break
  }
  return Option.none<RecordCursor>()
})

/** Why this instance may not run a recorded tree's graph (its workflow unknown here, or started under another config). */
const mismatchOf = (workflow: AnyWorkflow | undefined, record: ExecutionRecord) =>
  workflow === undefined
    ? `its workflow "${record.workflowName}" is not registered here`
    : workflow.configHash !== record.configHash && !workflow.resumeAnyway
    ? `it was started under config ${record.configHash}, this instance runs ${workflow.configHash}`
    : undefined

/** A Running tree this instance may not run: ended when a cancel was asked for and its lease is free, else left alone (said once). */
const leaveAlone = Effect.fnUntraced(function*(look: Look, record: ExecutionRecord, mismatch: string) {
  const { rootExecutionId, tenantId } = record
  // Ending a cancelled tree runs no graph: any instance may do it, whatever its config.
  const lease = yield* (yield* LeaseStore).get(tenantId, rootExecutionId)
  const free = Option.isNone(lease) || lease.value.expiresAt <= (yield* Clock.currentTimeMillis)
  if (free && (yield* Cancel.isRequested(tenantId, rootExecutionId))) {
    yield* FiberSet.run(look.recoveries, TreeDriver.endIfFree(record).pipe(Effect.ignore))
    return
  }
  const key = `${tenantId}/${rootExecutionId}`
  if (look.leftAlone.has(key)) return
  look.leftAlone.add(key)
  yield* Effect.logWarning(`recovery sweep leaves execution ${rootExecutionId} alone: ${mismatch}`).pipe(
    Effect.annotateLogs({ executionId: rootExecutionId, tenantId })
  )
})

/** Continues a free tree in a recovery fiber of the instance, logging how it ended. */
const continueTree = (
  look: Look,
  workflow: AnyWorkflow,
  record: ExecutionRecord,
  reason: "Recovered" | "Answered",
  say: { readonly done: (tag: string) => string | undefined; readonly other: string | undefined; readonly ended: string }
) =>
  FiberSet.run(
    look.recoveries,
    TreeDriver.drive(workflow, record.tenantId, record.rootExecutionId, { _tag: "Continue", reason }, { wait: false }).pipe(
      Effect.tap((out) => {
        const message = Option.isSome(out) ? say.done(out.value._tag) : say.other
        return message === undefined ? Effect.void : Option.isSome(out) ? Effect.logInfo(message) : Effect.logDebug(message)
      }),
      Effect.catch((e) => Effect.logWarning(`${say.ended}: ${e.message}`)),
      Effect.annotateLogs({ executionId: record.rootExecutionId, tenantId: record.tenantId })
    )
  )

/** True when the tree's lease is held and live; `onLive` sees its expiry. */
const leaseLive = Effect.fnUntraced(function*(record: ExecutionRecord, onLive: (expiresAt: number) => void = () => {}) {
  const lease = yield* (yield* LeaseStore).get(record.tenantId, record.rootExecutionId)
  if (Option.isNone(lease) || lease.value.expiresAt <= (yield* Clock.currentTimeMillis)) return false
  onLive(lease.value.expiresAt)
  return true
})

/** What one look carries from root to root. */
interface Look {
  readonly recoveries: FiberSet.FiberSet<unknown, unknown>
  readonly leftAlone: Set<string>
  /** Recoveries this look may still start (step slots free); Infinity without a cap. */
  budget: number
  /** The earliest live lease expiry seen. */
  earliest: number
}

/** A Running root whose holder is gone is recovered; a live one's expiry is noted. False once the budget is spent. */
const visitRunning = (look: Look) =>
  Effect.fnUntraced(function*(record: ExecutionRecord) {
    const workflow = (yield* Instance).config.workflows.get(record.workflowName)
    const mismatch = mismatchOf(workflow, record)
    if (mismatch !== undefined) {
      yield* leaveAlone(look, record, mismatch)
      return true
    }
    if (yield* leaseLive(record, (at) => (look.earliest = Math.min(look.earliest, at)))) return true
    if (look.budget <= 0) return false
    look.budget--
    const id = record.rootExecutionId
    yield* continueTree(look, workflow!, record, "Recovered", {
      done: (tag) => `recovered execution ${id}: ${tag}`,
      other: `execution ${id} was taken by another instance first`,
      ended: `recovery of execution ${id} ended`
    })
    return true
  })

/**
 * A decision recorded for a paused tree whose resume never took the lease (the caller went away, the
 * instance stopped or died between the two phases) is taken here, like a recovery.
 */
const visitPaused = (look: Look) =>
  Effect.fnUntraced(function*(record: ExecutionRecord) {
    const workflow = (yield* Instance).config.workflows.get(record.workflowName)
    if (workflow === undefined || mismatchOf(workflow, record) !== undefined) return true
    if ((yield* (yield* PauseStore).listByRoot(record.tenantId, record.rootExecutionId, ["Resolved"])).length === 0) return true
    if (yield* leaseLive(record)) return true
    if (look.budget-- <= 0) return false
    const id = record.rootExecutionId
    yield* continueTree(look, workflow, record, "Answered", {
      done: () => `took a stranded decision of execution ${id}`,
      other: undefined,
      ended: `taking a stranded decision of execution ${id} ended`
    })
    return true
  })

/**
 * One look over every Running root, then the Paused ones with a stranded
 * decision; answers the earliest live lease expiry seen. With step slots, it
 * starts at most as many recoveries as slots are free and stops before the
 * next one: `resume` keeps where, for the next look.
 */
const look = Effect.fnUntraced(function*(
  recoveries: FiberSet.FiberSet<unknown, unknown>,
  leftAlone: Set<string>,
  resume: { from: Option.Option<RecordCursor> }
) {
  const instance = yield* Instance
  const pauses = yield* PauseStore
  const slots = StepSlots.fromInstance(instance)
  const state: Look = { recoveries, leftAlone, budget: slots === undefined ? Infinity : slots.free, earliest: Infinity }
  resume.from = yield* eachRoot("Running", resume.from, () => true, visitRunning(state))
  yield* eachRoot("Paused", Option.none(), () => state.budget > 0, visitPaused(state))
  const deleted = yield* pauses.deleteSettledBefore((yield* Clock.currentTimeMillis) - instance.config.pauseRetentionMillis)
  if (deleted > 0) yield* Effect.logDebug(`recovery sweep deleted ${deleted} settled pauses past retention`)
  return state.earliest
})

/**
 * The sweep loop; runs until interrupted. The recoveries it starts run in
 * `recoveries`, owned by the instance: stopping the loop leaves them to the
 * instance's close, like any other pass.
 *
 * @category internal
 * @since 0.1.0
 */
export const run = Effect.fnUntraced(function*(recoveries: FiberSet.FiberSet<unknown, unknown>) {
  const instance = yield* Instance
  const wakeups = yield* LeaseWakeups
  const clock = yield* Clock.Clock
  const leftAlone = new Set<string>()
  const resume = { from: Option.none<RecordCursor>() }
  while (true) {
    // Listen before looking: a release during the look wakes the next one at once.
    const released = yield* Effect.forkChild(wakeups.next(undefined, undefined), { startImmediately: true })
    const earliest = yield* look(recoveries, leftAlone, resume).pipe(
      Effect.catch((e) => Effect.as(Effect.logWarning(`recovery sweep look failed: ${e.message}`), Infinity))
    )
    const now = clock.currentTimeMillisUnsafe()
    instance.health.lastSweepEndedAt = now
    const wait = Math.max(1, Math.min(instance.config.sweepMillis, earliest - now))
    yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), Fiber.join(released)).pipe(
      Effect.ensuring(Fiber.interrupt(released))
    )
  }
})
