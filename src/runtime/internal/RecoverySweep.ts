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
import type { RecordCursor } from "../../stores/ExecutionRecord.ts"
import { Instance } from "./Instance.ts"
import { LeaseStore } from "../../stores/LeaseStore.ts"
import { LeaseWakeups } from "../../stores/LeaseWakeups.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import * as StepSlots from "./StepSlots.ts"
import * as TreeDriver from "./TreeDriver.ts"

/**
 * One look over every Running root; answers the earliest live lease expiry seen.
 * With step slots, it starts at most as many recoveries as slots are free and
 * stops before the next one: `resume` keeps where, for the next look.
 */
const look = Effect.fnUntraced(function*(
  recoveries: FiberSet.FiberSet<unknown, unknown>,
  leftAlone: Set<string>,
  resume: { from: Option.Option<RecordCursor> }
) {
  const instance = yield* Instance
  const records = yield* RecordStore
  const leases = yield* LeaseStore
  const pauses = yield* PauseStore
  const clock = yield* Clock.Clock
  const { config } = instance
  let earliest = Infinity
  let cursor = resume.from
  const slots = StepSlots.fromInstance(instance)
  let budget = slots === undefined ? Infinity : slots.free
  let at = cursor
  pages: while (true) {
    const page = yield* records.findByStatus("Running", config.sweepPageSize, cursor)
    for (const record of page) {
      const before = at
      at = Option.some({ tenantId: record.tenantId, executionId: record.executionId })
      if (record.executionId !== record.rootExecutionId) continue
      const { rootExecutionId, tenantId } = record
      if ([...instance.passes].some((p) => p.tenantId === tenantId && p.rootExecutionId === rootExecutionId)) continue
      const workflow = config.workflows.get(record.workflowName)
      const mismatch = workflow === undefined
        ? `its workflow "${record.workflowName}" is not registered here`
        : workflow.configHash !== record.configHash && !workflow.resumeAnyway
        ? `it was started under config ${record.configHash}, this instance runs ${workflow.configHash}`
        : undefined
      if (mismatch !== undefined) {
        // Ending a cancelled tree runs no graph: any instance may do it, whatever its config.
        const lease = yield* leases.get(tenantId, rootExecutionId)
        const free = Option.isNone(lease) || lease.value.expiresAt <= clock.currentTimeMillisUnsafe()
        if (free && (yield* Cancel.isRequested(tenantId, rootExecutionId))) {
          yield* FiberSet.run(recoveries, TreeDriver.endIfFree(record).pipe(Effect.ignore))
          continue
        }
        const key = `${tenantId}/${rootExecutionId}`
        if (!leftAlone.has(key)) {
          leftAlone.add(key)
          yield* Effect.logWarning(`recovery sweep leaves execution ${rootExecutionId} alone: ${mismatch}`).pipe(
            Effect.annotateLogs({ executionId: rootExecutionId, tenantId })
          )
        }
        continue
      }
      const lease = yield* leases.get(tenantId, rootExecutionId)
      const now = clock.currentTimeMillisUnsafe()
      if (Option.isSome(lease) && lease.value.expiresAt > now) {
        earliest = Math.min(earliest, lease.value.expiresAt)
        continue
      }
      if (budget <= 0) {
        resume.from = before
        break pages
      }
      budget--
      yield* FiberSet.run(
        recoveries,
        TreeDriver.drive(workflow!, tenantId, rootExecutionId, { _tag: "Continue", reason: "Recovered" }, { wait: false }).pipe(
          Effect.tap((out) =>
            Option.isSome(out)
              ? Effect.logInfo(`recovered execution ${rootExecutionId}: ${out.value._tag}`)
              : Effect.logDebug(`execution ${rootExecutionId} was taken by another instance first`)
          ),
          Effect.catch((e) => Effect.logWarning(`recovery of execution ${rootExecutionId} ended: ${e.message}`)),
          Effect.annotateLogs({ executionId: rootExecutionId, tenantId })
        )
      )
    }
    if (page.length < config.sweepPageSize) {
      resume.from = Option.none()
      break
    }
    const last = page[page.length - 1]!
    cursor = Option.some({ tenantId: last.tenantId, executionId: last.executionId })
  }
  // A decision recorded for a paused tree whose resume never took the lease (the caller went away, the
  // instance stopped or died between the two phases) is taken here, like a recovery.
  let pausedCursor = Option.none<RecordCursor>()
  paused: while (budget > 0) {
    const page = yield* records.findByStatus("Paused", config.sweepPageSize, pausedCursor)
    for (const record of page) {
      if (record.executionId !== record.rootExecutionId) continue
      const { rootExecutionId, tenantId } = record
      if ([...instance.passes].some((p) => p.tenantId === tenantId && p.rootExecutionId === rootExecutionId)) continue
      const workflow = config.workflows.get(record.workflowName)
      if (workflow === undefined || (workflow.configHash !== record.configHash && !workflow.resumeAnyway)) continue
      if ((yield* pauses.listByRoot(tenantId, rootExecutionId, ["Resolved"])).length === 0) continue
      const lease = yield* leases.get(tenantId, rootExecutionId)
      if (Option.isSome(lease) && lease.value.expiresAt > clock.currentTimeMillisUnsafe()) continue
      if (budget-- <= 0) break paused
      yield* FiberSet.run(
        recoveries,
        TreeDriver.drive(workflow, tenantId, rootExecutionId, { _tag: "Continue", reason: "Answered" }, { wait: false }).pipe(
          Effect.tap((out) => Option.isSome(out) ? Effect.logInfo(`took a stranded decision of execution ${rootExecutionId}`) : Effect.void),
          Effect.catch((e) => Effect.logWarning(`taking a stranded decision of execution ${rootExecutionId} ended: ${e.message}`)),
          Effect.annotateLogs({ executionId: rootExecutionId, tenantId })
        )
      )
    }
    if (page.length < config.sweepPageSize) break
    const last = page[page.length - 1]!
    pausedCursor = Option.some({ tenantId: last.tenantId, executionId: last.executionId })
  }
  const deleted = yield* pauses.deleteSettledBefore(clock.currentTimeMillisUnsafe() - config.pauseRetentionMillis)
  if (deleted > 0) yield* Effect.logDebug(`recovery sweep deleted ${deleted} settled pauses past retention`)
  return earliest
})

/**
 * The sweep loop; runs until interrupted. The recoveries it starts run in
 * `recoveries`, owned by the instance: stopping the loop leaves them to the
 * instance's close, like any other pass.
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
