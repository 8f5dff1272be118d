/**
 * The recovery sweep: every instance, at start and then every
 * `sweepInterval`, looks for Running trees whose holder is gone and
 * continues them from their last checkpoint. A live holder renews its lease,
 * so only a dead or stopped holder's tree is free; of two sweepers the lease
 * store lets exactly one take it. It also wakes at the earliest lease expiry
 * it saw and at once when a lease is released in this process. A recovery
 * that fails while the tree stays Running is counted in its record and backs
 * off on the Clock; after `maxRecoveryAttempts` the tree is marked Failed
 * (see `RecoveryFailures`). One root whose visit fails is skipped for that
 * look; the others are still visited. At most `maxRecoveriesPerLook`
 * recoveries the sweep started run at once (fewer with step slots): a look
 * stops at the bound and the next one, woken when a recovery releases its
 * lease, picks up at the page where it stopped. Each instance visits a
 * page's roots in its own order (`VisitOrder`), so instances that look at
 * once start recoveries of different trees. Last, it ends the Paused trees
 * holding a cancel request whose lease is free: no holder reads the request
 * of a tree that rests, so a canceller that died right after writing it
 * leaves it to the sweep (`TreeStore.findRootsWith`: one query a page, only
 * trees with a request). (Settled pauses past the retention are deleted once
 * per fleet: see `Retention`.)
 *
 * @since 0.1.0
 */
import { Cause, Clock, Duration, Effect, Fiber, FiberSet, Option } from "effect"
import * as Cancel from "../undo/Cancel.ts"
import * as ChildOrphans from "../children/ChildOrphans.ts"
import type { ExecutionRecord, RecordCursor } from "../../../stores/ExecutionRecord.ts"
import { Instance, type InstanceShape } from "../Instance.ts"
import { getManyChunked, type Lease, LeaseStore } from "../../../stores/LeaseStore.ts"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import { PauseStore, type RootCursor } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"
import * as Metering from "../observe/Metering.ts"
import * as Metrics from "../../Metrics.ts"
import * as RecoveryFailures from "./RecoveryFailures.ts"
import * as StepSlots from "../limits/StepSlots.ts"
import * as Takeover from "../lease/Takeover.ts"
import * as ChildPauses from "../children/ChildPauses.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as VisitOrder from "./VisitOrder.ts"
import * as DeleteThread from "../checkpoints/DeleteThread.ts"
import type { AnyWorkflow } from "../../Workflow.ts"

const cursorOf = (record: ExecutionRecord): Option.Option<RecordCursor> =>
  Option.some({ tenantId: record.tenantId, executionId: record.executionId })

/** True while this instance moves (or waits to move) the tree. */
const movingHere = (instance: InstanceShape, root: RootCursor) =>
  instance.passes.onTree(root.tenantId, root.rootExecutionId) !== undefined

/** One root's visit; what fails in it (a store refusing this tree's rows, a defect) is logged and the look goes on to the next root. */
const visitAlone = <E, R>(record: ExecutionRecord, visit: (record: ExecutionRecord) => Effect.Effect<boolean, E, R>) =>
  visit(record).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.as(
        Effect.logWarning(`recovery sweep skipped execution ${record.rootExecutionId} this look`, Cause.pretty(cause)).pipe(
          Effect.annotateLogs({ executionId: record.rootExecutionId, tenantId: record.tenantId })
        ),
        true
      )
    )
  )

/** Where the next look starts (`from`), and whether the last one stopped on its budget before the end. */
interface Resume {
  from: Option.Option<RecordCursor>
  stopped: boolean
}

/**
 * The one paging loop of the sweep: every root in `status` from `from` on
 * that this instance is not moving goes to `visit`, page by page while
 * `more()` holds. A page's roots are visited in this instance's own order
 * (see `VisitOrder`: instances looking at once pick different trees of it).
 * `visit` answers false to stop; the loop then answers the cursor just before
 * that page, stopped (the next look reads it again, so a page is passed only
 * once every root in it was visited), and none once it went through every
 * page.
 */
const eachRoot = Effect.fnUntraced(function*<E, R, E2, R2>(
  status: "Running" | "Paused",
  from: Option.Option<RecordCursor>,
  more: () => boolean,
  visit: (record: ExecutionRecord) => Effect.Effect<boolean, E, R>,
  onPage: (roots: ReadonlyArray<ExecutionRecord>, page: ReadonlyArray<ExecutionRecord>) => Effect.Effect<void, E2, R2> = () => Effect.void
) {
  const instance = yield* Instance
  const records = yield* RecordStore
  const pageSize = instance.config.sweepPageSize
  let cursor = from
  while (more()) {
    const page = yield* records.findByStatus(status, pageSize, cursor)
    // A launched child is a root of its own tree, moved by whoever claimed it or by its parent's step (see ChildWorker).
    const roots = page.filter((record) =>
      record.executionId === record.rootExecutionId && record.parentExecutionId === null && !movingHere(instance, record)
    )
    yield* onPage(roots, page)
    yield* Metering.add(Metrics.sweepRows, instance.instanceId, undefined, page.length)
    // Seeded by the holder prefix, not the id alone: two processes given one instanceId visit in different orders too.
    for (const record of VisitOrder.ofInstance(`${instance.instanceId}#${instance.incarnation}`, roots)) {
      if (!(yield* visitAlone(record, visit))) return { from: cursor, stopped: true } satisfies Resume
    }
    if (page.length < pageSize) break
    cursor = cursorOf(page[page.length - 1]!)
  }
  return { from: Option.none<RecordCursor>(), stopped: false } satisfies Resume
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

/** What a recovery says when it ended: with an output, without one (another instance took the tree), or failing. */
interface Say {
  readonly done: (tag: string) => string | undefined
  readonly other: string | undefined
  readonly ended: string
}

/**
 * Continues a free tree in a recovery fiber of the instance, logging how it
 * ended. A failure that counts against the execution is noted in its record
 * (backoff, then Failed after `maxRecoveryAttempts`).
 */
const continueTree = (look: Look, workflow: AnyWorkflow, record: ExecutionRecord, reason: "Recovered" | "Answered", say: Say) =>
  Effect.andThen(
    Effect.flatMap(Effect.service(Instance), (instance) => Metering.add(Metrics.recoveriesStarted, instance.instanceId, { reason })),
    Effect.suspend(() => {
      look.running.count++
      return FiberSet.run(look.recoveries, recovery(look, workflow, record, reason, say).pipe(Effect.ensuring(Effect.sync(() => recoveryEnded(look.running)))))
    })
  )

/** The recovery fiber's program: drives the tree, notes a counted failure, logs how it ended. */
const recovery = (look: Look, workflow: AnyWorkflow, record: ExecutionRecord, reason: "Recovered" | "Answered", say: Say) =>
  TreeDriver.drive(workflow, record.tenantId, record.rootExecutionId, { _tag: "Continue", reason }, {
    wait: false,
    // Counted before the lease is released: a sweep woken by the release already sees the backoff.
    onFailure: (cause) => {
      const counted = RecoveryFailures.countedCause(cause)
      return counted === undefined ? Effect.void : RecoveryFailures.note(look.local, record, counted)
    }
  }).pipe(
    Effect.tap((out) => {
      const message = Option.isSome(out) ? say.done(out.value._tag) : say.other
      return message === undefined ? Effect.void : Option.isSome(out) ? Effect.logInfo(message) : Effect.logDebug(message)
    }),
    Effect.tap(() => Effect.sync(() => look.local.delete(`${record.tenantId}/${record.rootExecutionId}`))),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) || RecoveryFailures.countedCause(cause) !== undefined
        ? Effect.void
        : Effect.logWarning(`${say.ended}: ${Cause.squash(cause)}`)
    ),
    Effect.annotateLogs({ executionId: record.rootExecutionId, tenantId: record.tenantId })
  )

/**
 * True when the tree's lease is held and live; `onLive` sees its expiry. Read
 * from `page` when the look read the page's leases at once (`readLeases`).
 */
const leaseLive = Effect.fnUntraced(function*(record: ExecutionRecord, onLive: (expiresAt: number) => void = () => {}, page?: PageLeases) {
  const key = keyOf(record)
  const lease = page?.read.has(key) === true
    ? Option.fromNullishOr(page.leases.get(key))
    : yield* (yield* LeaseStore).get(record.tenantId, record.rootExecutionId)
  if (Option.isNone(lease) || lease.value.expiresAt <= (yield* Clock.currentTimeMillis)) return false
  // Held by an instance known to be gone: free to take now (see Takeover).
  if (Takeover.heldByDead(yield* Instance, lease.value)) return false
  onLive(lease.value.expiresAt)
  return true
})

const keyOf = (r: { readonly tenantId: string; readonly rootExecutionId: string }) => `${r.tenantId}/${r.rootExecutionId}`

/** The leases of one page's roots, read in one store call: `read` holds every root asked for, `leases` the held ones. */
interface PageLeases {
  read: Set<string>
  leases: Map<string, Lease>
}

/**
 * Reads the leases of a page's roots with one `getMany` (instead of one `get`
 * per root). If it fails (or dies: a corrupt row), the page's visits read
 * them one by one, so one bad root is skipped alone.
 */
const readLeases = (page: PageLeases) => (roots: ReadonlyArray<ExecutionRecord>) =>
  Effect.gen(function*() {
    page.read = new Set()
    page.leases = new Map()
    // A page larger than one call takes (`sweepPageSize` above `maxGetMany`) is read in a few.
    const found = yield* getManyChunked(yield* LeaseStore, roots)
    page.read = new Set(roots.map(keyOf))
    for (const lease of found) page.leases.set(keyOf(lease), lease)
  }).pipe(Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.logWarning("recovery sweep: reading a page's leases failed; reading them one by one", Cause.pretty(cause))
  ))

/** The recoveries the sweep started that still run, and the sweep's wake-up when one ends (while it waits for one). */
interface Running {
  count: number
  readonly ended: Set<() => void>
}

const recoveryEnded = (running: Running) => {
  running.count--
  for (const wake of [...running.ended]) wake()
}

/** Waits until a recovery the sweep started ends. */
const aRecoveryEnds = (running: Running) =>
  Effect.callback<void>((resume) => {
    const wake = () => resume(Effect.void)
    running.ended.add(wake)
    return Effect.sync(() => running.ended.delete(wake))
  })

/** What one look carries from root to root. */
interface Look {
  readonly recoveries: FiberSet.FiberSet<unknown, unknown>
  readonly leftAlone: Set<string>
  /** Failed recoveries this instance saw (kept across looks). */
  readonly local: RecoveryFailures.Local
  readonly now: number
  /** Recoveries the sweep started that still run (kept across looks). */
  readonly running: Running
  /** Recoveries this look may still start: `maxRecoveriesPerLook` less those running, at most the free step slots. */
  budget: number
  /** The earliest live lease expiry seen. */
  earliest: number
  /** The leases of the page of Running roots being visited. */
  readonly page: PageLeases
}

/** A Running root whose holder is gone is recovered; a live one's expiry is noted. False once the budget is spent. */
const visitRunning = (look: Look) =>
  Effect.fnUntraced(function*(record: ExecutionRecord) {
    // A thread's deletion that died halfway: finished here once its lease expired.
    if (record.workflowName === DeleteThread.markerWorkflow) return yield* Effect.as(DeleteThread.finishOrphan(record), true)
    const workflow = (yield* Instance).config.workflows.get(record.workflowName)
    const mismatch = mismatchOf(workflow, record)
    if (mismatch !== undefined) {
      yield* leaveAlone(look, record, mismatch)
      return true
    }
    if (RecoveryFailures.backingOff(look.local, record, look.now, (at) => (look.earliest = Math.min(look.earliest, at)))) return true
    if (yield* leaseLive(record, (at) => (look.earliest = Math.min(look.earliest, at)), look.page)) return true
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
  Effect.fnUntraced(function*(found: ExecutionRecord) {
    // A child's decision goes on the way the child runs: through the queue, or through its parent's step (the root above driven).
    const up = found.parentExecutionId === null ? Option.some(found) : yield* ChildPauses.continueUp(found)
    if (Option.isNone(up)) return true
    const record = up.value
    const workflow = (yield* Instance).config.workflows.get(record.workflowName)
    if (workflow === undefined || mismatchOf(workflow, record) !== undefined) return true
    if (RecoveryFailures.backingOff(look.local, record, look.now, (at) => (look.earliest = Math.min(look.earliest, at)))) return true
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
 * The Paused trees with a decision not yet taken, found one store query a
 * page (a paused tree without one costs the look nothing), each visited by
 * `visitPaused` while the budget lasts.
 */
const eachStranded = Effect.fnUntraced(function*(look: Look) {
  const instance = yield* Instance
  const pauses = yield* PauseStore
  const records = yield* RecordStore
  const pageSize = instance.config.sweepPageSize
  let after = Option.none<RootCursor>()
  while (look.budget > 0) {
    const page = yield* pauses.findResolvedRoots(pageSize, after)
    yield* Metering.add(Metrics.sweepRows, instance.instanceId, undefined, page.length)
    for (const root of page) {
      after = Option.some(root)
      if (movingHere(instance, root)) continue
      const record = yield* records.getRecord(root.tenantId, root.rootExecutionId)
      if (Option.isNone(record) || record.value.status !== "Paused") continue
      if (!(yield* visitAlone(record.value, visitPaused(look)))) return
    }
    if (page.length < pageSize) return
  }
})

/**
 * The trees holding a cancel request, one store query a page: a Paused one
 * (its canceller died before ending it, or its holder rested it as the request
 * landed) whose lease is free is ended cancelled in `recoveries`, within the
 * look's budget, like a cancel would (its undos run where its workflow is registered; see
 * `TreeDriver.endIfFree`); a held lease's expiry is noted. A Running tree's
 * request is read by its holder, or at its recovery or its child's claim; a
 * request left on an ended (or gone) tree goes with its keys.
 */
const eachCancelRequested = (look: Look) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const tree = yield* TreeStore
    const records = yield* RecordStore
    const pageSize = instance.config.sweepPageSize
    let after = Option.none<RootCursor>()
    while (true) {
      const page = yield* tree.findRootsWith(Cancel.requestName, pageSize, after)
      yield* Metering.add(Metrics.sweepRows, instance.instanceId, undefined, page.length)
      for (const root of page) {
        after = Option.some(root)
        if (movingHere(instance, root)) continue
        const record = yield* records.getRecord(root.tenantId, root.rootExecutionId)
        if (Option.isSome(record) && record.value.status === "Running") continue
        if (Option.isSome(record) && record.value.status === "Paused") {
          if (yield* leaseLive(record.value, (at) => (look.earliest = Math.min(look.earliest, at)))) continue
          // A store may name a tree whose request went (see `TreeStoreBackend`): only a request on record ends it.
          if (!(yield* Cancel.isRequested(root.tenantId, root.rootExecutionId))) continue
          yield* Effect.logInfo(`recovery sweep ends execution ${root.rootExecutionId}: it was asked to cancel and rests with no holder`).pipe(
            Effect.annotateLogs({ executionId: root.rootExecutionId, tenantId: root.tenantId })
          )
        }
        // Counted like a recovery: a look starts at most its budget of them; the next look goes on.
        if (look.budget <= 0) return
        look.budget--
        look.running.count++
        yield* FiberSet.run(look.recoveries, TreeDriver.endIfFree(root).pipe(Effect.ignore, Effect.ensuring(Effect.sync(() => recoveryEnded(look.running)))))
      }
      if (page.length < pageSize) return
    }
  }).pipe(Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.logWarning("recovery sweep: ending cancelled paused trees failed this look", Cause.pretty(cause))
  ))

/**
 * One look over every Running root, then the Paused ones with a stranded
 * decision, then the Paused ones asked to cancel; answers the earliest live lease expiry seen. It starts at most
 * `maxRecoveriesPerLook` less the recoveries still running (and no more than
 * the free step slots) and stops before the next one: `resume` keeps where,
 * for the next look.
 */
const look = Effect.fnUntraced(function*(
  recoveries: FiberSet.FiberSet<unknown, unknown>,
  leftAlone: Set<string>,
  local: RecoveryFailures.Local,
  resume: Resume,
  running: Running
) {
  const instance = yield* Instance
  const slots = StepSlots.fromInstance(instance)
  const now = yield* Clock.currentTimeMillis
  const state: Look = {
    recoveries,
    leftAlone,
    local,
    now,
    running,
    budget: Math.min(instance.config.maxRecoveriesPerLook - running.count, slots === undefined ? Infinity : slots.free),
    earliest: Infinity,
    page: { read: new Set(), leases: new Map() }
  }
  const next = yield* eachRoot("Running", resume.from, () => true, visitRunning(state), (roots, page) =>
    // Launched children nothing will continue (their parent ended) are ended here; see ChildOrphans.
    Effect.andThen(readLeases(state.page)(roots), ChildOrphans.endOrphans(page, recoveries)))
  resume.from = next.from
  resume.stopped = next.stopped
  yield* eachStranded(state)
  yield* eachCancelRequested(state)
  Metering.timeUnsafe(yield* Effect.context<never>(), Metrics.sweepDuration, instance.instanceId, (yield* Clock.currentTimeMillis) - now)
  return state.earliest
}, (effect) =>
  Effect.withSpan(
    Effect.flatMap(Effect.service(Instance), (instance) => Effect.andThen(Effect.annotateCurrentSpan("baton.instance", instance.instanceId), effect)),
    "baton.sweep"
  ))

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
  const local: RecoveryFailures.Local = new Map()
  const resume: Resume = { from: Option.none(), stopped: false }
  const running: Running = { count: 0, ended: new Set() }
  while (true) {
    // Listen before looking: a release during the look wakes the next one at once — a tree's that ended only
    // when the last look stopped on its budget (the step slot it freed may let the look go on).
    const released = yield* Effect.forkChild(wakeups.next(undefined, undefined, { skipEnded: () => !resume.stopped }), {
      startImmediately: true
    })
    const earliest = yield* look(recoveries, leftAlone, local, resume, running).pipe(
      Effect.catch((e) => Effect.as(Effect.logWarning(`recovery sweep look failed: ${e.message}`), Infinity))
    )
    const now = clock.currentTimeMillisUnsafe()
    instance.lifecycle.sweepEnded(now)
    const wait = Math.max(1, Math.min(instance.config.sweepMillis, earliest - now, RecoveryFailures.nextRetry(local, now) - now))
    // A look that stopped on its budget (`resume.stopped`) goes on as soon as a recovery ends: the
    // release that wakes it may come before that recovery stops counting as running.
    const wakes = [
      Effect.sleep(Duration.millis(wait)),
      Fiber.join(released),
      Takeover.deaths(instance),
      ...(resume.stopped ? [aRecoveryEnds(running)] : [])
    ]
    yield* Effect.raceAllFirst(wakes).pipe(Effect.ensuring(Fiber.interrupt(released)))
  }
})
