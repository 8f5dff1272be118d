/**
 * Running child executions, the instance's side: the claim loop that takes
 * queued children (placement `"any"`), running one child to its end under
 * its own lease, completing its row and waking its parent.
 *
 * The claim loop takes exactly as many children as the instance has free
 * step slots (within `maxClaimedChildren`; 16 without a step cap) — a
 * claimed child whose steps took no slot yet counts as holding one — and only
 * children of the workflows it registers, deepest first,
 * then oldest (the store's order; atomic: `FOR UPDATE SKIP LOCKED` on
 * Postgres, the write lock on SQLite). It claims at once when children are
 * queued in this process or one of its children ends, at every release of a
 * lease the wake-up hub reports (Postgres NOTIFY across processes: a parent
 * that queued children releases its lease as it rests), and every `waitPoll`
 * on the Clock otherwise.
 *
 * A claimed row is held for a lease length and renewed with the child's
 * own lease; a worker that dies stops renewing, so once the claim (and the
 * child's lease) expired another instance claims the row again and continues
 * the child alone from its last checkpoint — its siblings are untouched.
 * Whoever ends the last child of a launch answers the parent's
 * children-wait pause and continues the parent (any instance may: the
 * recovery sweep takes an answered pause of a resting tree too).
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Fiber, FiberSet, Option, Schedule } from "effect"
import { ChildQueueStore, type ChildQueueStoreShape, type QueuedChild } from "../../../stores/ChildQueueStore.ts"
import { type ExecutionRecord, newRunning } from "../../../stores/ExecutionRecord.ts"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RateLimitStore, tenantKey } from "../../../stores/RateLimitStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as Cancel from "../undo/Cancel.ts"
import * as ChildConfig from "./ChildConfig.ts"
import * as ChildLaunch from "./ChildLaunch.ts"
import * as ChildPauses from "./ChildPauses.ts"
import { ChildDepthExceededError } from "../../Children.ts"
import { Instance, type InstanceShape, workflowForRecord } from "../Instance.ts"
import * as StepSlots from "../limits/StepSlots.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import type { ExecutionOutput } from "../pass/Executor.ts"
import * as ChildClaim from "../lease/ChildClaim.ts"
import * as Signal from "../../../stores/internal/signal.ts"
import * as LeasedSlots from "../lease/leasedSlots.ts"

/**
 * The instance's child state: the claim loop's wake-up, and how many claimed children run here.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildState {
  readonly wake: Signal.Signal
  running: number
  /** Claimed children here whose steps took no slot yet: each is about to take one (see `StepSlots.FirstSlot`). */
  starting: number
  /** Bound once the runtime is built: runs a child with the instance's services. */
  run: (spec: ChildLaunch.ChildSpec) => Effect.Effect<ChildLaunch.ChildEnd | undefined>
  /** Bound by the claim loop: tells the other instances that children were queued (through the lease wake-up hub). */
  announce: (tenantId: string, launchId: string) => void
}

/**
 * A fresh child state and the `ChildRunner` service over it (added to the instance's services).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeState = (): { readonly state: ChildState; readonly runner: Context.Service.Shape<typeof ChildLaunch.ChildRunner> } => {
  const state: ChildState = {
    wake: Signal.make(),
    running: 0,
    starting: 0,
    run: () => Effect.die(new Error("the child runner is not bound yet")),
    announce: () => {}
  }
  return {
    state,
    runner: {
      run: (spec) => Effect.suspend(() => state.run(spec)),
      queued: (tenantId, launchId) => {
        state.wake.notify()
        state.announce(tenantId, launchId)
      }
    }
  }
}

const errorResult = (error: unknown) => {
  const e = error as { readonly _tag?: unknown; readonly message?: unknown; readonly error?: unknown }
  return {
    tag: typeof e?._tag === "string" ? e._tag : error instanceof Error ? error.name : "Error",
    message: typeof e?.error === "string" ? e.error : typeof e?.message === "string" ? e.message : String(error)
  }
}

/** A pass's output as the child's end. */
const endOf = (out: ExecutionOutput): ChildLaunch.ChildEnd =>
  out._tag === "Finished" ? { outcome: "Answered", result: out.output ?? null } : { outcome: "Paused", result: { pauses: out.pauses.length } }

/** The child's record, as it is first written. */
const childRecord = (spec: ChildLaunch.ChildSpec, workflow: { name: string; version: string; configHash: string }, now: number): ExecutionRecord =>
  newRunning({ ...spec, workflow, now })

/**
 * Runs one child to its end on this instance: a new child is recorded and
 * started from its input; a known one is continued from its last checkpoint
 * (waiting for a live holder's lease first), or answered as it ended.
 * `undefined` when it was left running for another holder (the lease lost,
 * the instance stopping, a store failing).
 *
 * @category internal
 * @since 0.1.0
 */
export const runChild = (spec: ChildLaunch.ChildSpec) =>
  Effect.gen(function*() {
    const records = yield* RecordStore
    const { config } = yield* Instance
    const workflow = config.workflows.get(spec.workflowName)
    if (workflow === undefined) {
      return { outcome: "Failed", result: { tag: "UnknownWorkflowError", message: `workflow "${spec.workflowName}" is not registered on the instance that claimed it` } } as ChildLaunch.ChildEnd
    }
    const { leaseMillis, waitPollMillis } = config
    // Deeper than this instance runs: refused here, before it is recorded (one recorded already goes on).
    if (config.maxChildDepth !== undefined && spec.depth > config.maxChildDepth && Option.isNone(yield* records.getRecord(spec.tenantId, spec.executionId))) {
      const refused = new ChildDepthExceededError({ executionId: spec.executionId, depth: spec.depth, maxChildDepth: config.maxChildDepth, instanceId: (yield* Instance).instanceId })
      return { outcome: "Failed", result: errorResult(refused) } as ChildLaunch.ChildEnd
    }
    // An earlier claimer may hold the new child's lease without having recorded it (it died in between):
    // the start is tried again until its lease expired, then the child is started here.
    for (let attempt = 0; attempt <= Math.ceil(leaseMillis / waitPollMillis) + 2; attempt++) {
      const record = yield* records.getRecord(spec.tenantId, spec.executionId)
      if (Option.isSome(record)) {
        const out = yield* TreeDriver.drive(yield* workflowForRecord(record.value), spec.tenantId, spec.executionId, {
          _tag: "Continue",
          reason: "Recovered"
        }, { wait: true })
        return Option.isSome(out) ? endOf(out.value) : undefined
      }
      const now = yield* Clock.currentTimeMillis
      yield* records.createThread({ tenantId: spec.tenantId, threadId: spec.threadId, now })
      const started = yield* TreeDriver.start(workflow, childRecord(spec, workflow, now), spec.input, Effect.void).pipe(
        Effect.map(Option.some),
        // Its lease is held or its record written by an earlier holder: look again (after a poll when nothing is recorded yet).
        Effect.catchTags({ StoreError: () => Effect.succeedNone, ThreadBusyError: () => Effect.succeedNone })
      )
      if (Option.isSome(started)) return endOf(started.value)
      if (Option.isNone(yield* records.getRecord(spec.tenantId, spec.executionId))) yield* Effect.sleep(Duration.millis(waitPollMillis))
    }
    return undefined
  }).pipe(
    Effect.catchTags({
      ExecutionFailedError: (e) => Effect.succeed<ChildLaunch.ChildEnd>({ outcome: "Failed", result: errorResult(e) }),
      ExecutionCancelledError: (e) => Effect.succeed<ChildLaunch.ChildEnd>({ outcome: "Failed", result: errorResult(e) }),
      UnknownWorkflowError: (e) => Effect.succeed<ChildLaunch.ChildEnd>({ outcome: "Failed", result: errorResult(e) })
    }),
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const error = Cause.squash(cause) as { readonly _tag?: unknown }
      // Stopped without an end of its own: whoever takes its lease (or claims its row) next continues it.
      if (error?._tag === "LeaseLostError" || error?._tag === "InstanceStoppingError" || error?._tag === "StoreError") {
        return Effect.as(Effect.logWarning(`child ${spec.executionId} left for another holder: ${String(error)}`), undefined)
      }
      return Effect.succeed<ChildLaunch.ChildEnd | undefined>({ outcome: "Failed", result: errorResult(error) })
    })
  )

/**
 * Answers the parent's children-wait pause once no child of the launch is
 * open, and continues the parent here (when its lease is free; else its
 * holder, resting, takes the answer before it rests — or the sweep does).
 */
const wakeParent = Effect.fnUntraced(function*(queue: ChildQueueStoreShape, row: QueuedChild, continues: FiberSet.FiberSet<unknown, unknown>) {
  if (row.launchId == null) return
  // A sibling still queued, running or resting at a pause: the parent waits on.
  if (!(yield* queue.listLaunch(row.tenantId, row.launchId)).every(ChildLaunch.settled)) return
  const instance = yield* Instance
  const pauses = yield* PauseStore
  const pending = yield* pauses.listByRoot(row.tenantId, row.rootExecutionId, ["Pending"])
  const wait = pending.find((p) => ChildLaunch.waitOf(p.payload)?.launchId === row.launchId)
  if (wait === undefined) return
  yield* ChildLaunch.answerWait(pauses, wait, instance.instanceId, yield* Clock.currentTimeMillis)
  const parent = yield* (yield* RecordStore).getRecord(row.tenantId, row.rootExecutionId)
  if (Option.isNone(parent) || parent.value.status !== "Paused") return
  // A parent that is a child itself goes on the way it runs: back to the queue, or through its own parent's step.
  const root = parent.value.parentExecutionId === null ? parent : yield* ChildPauses.continueUp(parent.value)
  if (Option.isNone(root)) return
  if (!(yield* TreeDriver.continueInBackground(root.value, continues, "Answered", "continuing the parent after its children ended"))) {
    // A worker without the parent's workflow: told like a release (of the launch, not of the parent's tree, whose
    // awaiters would read it still Paused), every sweep looks now and one with the workflow continues the parent.
    ;(yield* LeaseWakeups).released(row.tenantId, row.launchId)
  }
})

/**
 * `wakeParent` retried on the Clock while a store fails it transiently (a
 * lost connection, a failover): the child's queue row is Answered already,
 * so nothing else would claim it again and wake the parent.
 */
const wakeParentRetried = (queue: ChildQueueStoreShape, row: QueuedChild, continues: FiberSet.FiberSet<unknown, unknown>) =>
  wakeParent(queue, row, continues).pipe(
    Effect.retry({
      while: (e) => (e as { readonly _tag?: unknown })._tag === "StoreError" && (e as { readonly isRetryable?: boolean }).isRetryable === true,
      schedule: Schedule.spaced("250 millis"),
      times: 240
    })
  )

/** The root's cap on its children running at once (its workflow's `maxConcurrentExecutions`), if any. */
const capOf = Effect.fnUntraced(function*(row: QueuedChild) {
  const root = yield* (yield* RecordStore).getRecord(row.tenantId, row.rootExecutionId)
  if (Option.isNone(root)) return undefined
  return (yield* Instance).config.workflows.get(root.value.workflowName)?.maxConcurrentExecutions
})

/** The tree's shared slots key in `RateLimitStore`: its tenant's (kept on the tenant's shard under `ShardedStores`). */
const treeKey = (row: QueuedChild) => tenantKey(row.tenantId, `tree/${row.rootExecutionId}`)

/**
 * One of the tree's shared slots for a claimed child when its root caps its
 * children (`maxConcurrentExecutions`): `Some(run)` wraps the child's run to
 * hold the slot (renewed every third of a lease, released when it ends);
 * `None` when the tree's slots are all held — the caller hands the row back.
 */
const treeSlot = Effect.fnUntraced(function*(row: QueuedChild) {
  const instance = yield* Instance
  const cap = yield* capOf(row)
  if (cap === undefined) return Option.some(<A, E, R>(run: Effect.Effect<A, E, R>) => run)
  const store = Context.get(instance.services, RateLimitStore)
  const { leaseMillis } = instance.config
  const slot = yield* store.acquireSlot(treeKey(row), cap, `${instance.instanceId}/${row.executionId}`, leaseMillis, yield* Clock.currentTimeMillis)
  if (Option.isNone(slot)) return Option.none()
  return Option.some(<A, E, R>(run: Effect.Effect<A, E, R>) =>
    Effect.scoped(Effect.andThen(LeasedSlots.renewWhileHeld(store, slot.value, leaseMillis), run)).pipe(
      Effect.ensuring(store.releaseSlot(slot.value).pipe(Effect.ignore))
    )
  )
})

/**
 * A claimed child of a tree asked to cancel (its request on record: the
 * canceller may have died before ending the tree and failing its queued
 * children). One never started ends its row Failed here, without starting
 * (`Refused`; `Lost` when its claim went meanwhile); one started before goes
 * on (`Run`) with a cancel request of its own, so it ends cancelled without
 * running a step.
 */
const refusedForCancel = Effect.fnUntraced(function*(queue: ChildQueueStoreShape, row: QueuedChild) {
  if (!(yield* Cancel.isRequested(row.tenantId, row.rootExecutionId))) return "Run" as const
  const instance = yield* Instance
  if (Option.isSome(yield* (yield* RecordStore).getRecord(row.tenantId, row.executionId))) {
    yield* Cancel.request(row.tenantId, row.executionId, { ownerId: undefined, instanceId: instance.instanceId })
    return "Run" as const
  }
  const completed = yield* queue.complete({
    tenantId: row.tenantId,
    executionId: row.executionId,
    instanceId: instance.instanceId,
    outcome: "Failed",
    result: ChildLaunch.cancelledBeforeStart(row.parentExecutionId)
  })
  return completed ? "Refused" as const : "Lost" as const
})

/** Runs a claimed child, completes its row and, if it was the last of its launch, wakes the parent. */
const runClaimed = (queue: ChildQueueStoreShape, row: QueuedChild, continues: FiberSet.FiberSet<unknown, unknown>) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    // Its tree was asked to cancel: a queued child never starts (the last one wakes the parent, which ends cancelled).
    const cancelled = yield* refusedForCancel(queue, row)
    if (cancelled === "Refused") return yield* wakeParentRetried(queue, row, continues)
    if (cancelled === "Lost") return
    const end = yield* Effect.scoped(Effect.andThen(ChildClaim.keep(queue, row, instance.instanceId, instance.config), runChild({
      tenantId: row.tenantId,
      executionId: row.executionId,
      threadId: row.threadId,
      parentExecutionId: row.parentExecutionId,
      depth: row.depth,
      workflowName: row.workflowName,
      input: row.input
    })))
    if (end === undefined) {
      // A closing instance hands its child over at once (its lease is released already); another claims it now.
      if (instance.lifecycle.stopping() && (yield* queue.releaseClaim(row.tenantId, row.executionId, instance.instanceId))) {
        // Told like a lease release (NOTIFY on Postgres): idle instances claim it now.
        ;(yield* LeaseWakeups).released(row.tenantId, row.executionId)
      }
      return
    }
    const completed = yield* queue.complete({
      tenantId: row.tenantId,
      executionId: row.executionId,
      instanceId: instance.instanceId,
      outcome: end.outcome,
      result: end.result
    })
    if (!completed) return
    // Resting at a pause (or on its own children): its parent waits, its caller sees the pause as the parent's.
    if (end.outcome === "Paused") return yield* ChildPauses.rested(row.tenantId, row.executionId)
    yield* wakeParentRetried(queue, row, continues)
  }).pipe(
    Effect.catchCause((cause) => Effect.logWarning(`claimed child ${row.executionId} stopped; its claim expires for another instance`, cause)),
    Effect.annotateLogs({ executionId: row.executionId, tenantId: row.tenantId })
  )

/**
 * How many more children this instance may claim now: as many as it has free
 * step slots, less those its claimed children that took none yet will take.
 */
const budgetOf = (instance: InstanceShape, state: ChildState): number => {
  const slots = StepSlots.fromInstance(instance)
  return ChildConfig.claimBudget(
    instance.config,
    state.running,
    slots === undefined ? undefined : { free: slots.free - state.starting, capacity: slots.capacity }
  )
}

/**
 * The claim loop of one instance; runs until interrupted. Claimed children
 * run in `children`, parents woken here in `continues` (both owned by the
 * instance: close waits for their passes like any other).
 *
 * @category internal
 * @since 0.1.0
 */
export const run = Effect.fnUntraced(function*(
  state: ChildState,
  children: FiberSet.FiberSet<unknown, unknown>,
  continues: FiberSet.FiberSet<unknown, unknown>
) {
  const instance = yield* Instance
  const queue = Option.getOrUndefined(Context.getOption(instance.services, ChildQueueStore))
  if (queue === undefined) return
  const wakeups = yield* LeaseWakeups
  // A launch is announced like a lease release: other processes' claim loops wake at once (Postgres NOTIFY).
  state.announce = (tenantId, launchId) => wakeups.released(tenantId, launchId)
  // Only children this instance can run: a worker registering just the child workflow claims those, and leaves the rest.
  // Of a name, only the graph registered here (its config hash): a rolling deploy's old and new graphs keep apart.
  const runnable = [...instance.config.workflows.values()].map((w) => ({ name: w.name, configHash: w.configHash }))
  // An instance that only launches (`maxClaimedChildren: 0`) claims nothing: no loop to run.
  if (instance.config.maxClaimedChildren === 0) return
  /** The last round ran out of budget, or found a root's slots all held: a tree that ends may free one. */
  let short = false
  while (true) {
    // Listen before claiming: what is queued or released during the round wakes the next one at once (a
    // release of a tree that ended only when the last round was short of slots).
    const released = wakeups.next(undefined, undefined, { skipEnded: () => !short })
    const woken = yield* Effect.forkChild(Effect.raceFirst(state.wake.next, released), { startImmediately: true })
    let roundShort = false
    if (!instance.lifecycle.stopping()) {
      let budget = budgetOf(instance, state)
      while (budget > 0) {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* queue.claim(instance.instanceId, instance.config.leaseMillis, now, runnable).pipe(
          Effect.catch((e) => Effect.as(Effect.logWarning(`claiming children failed: ${e.message}`), Option.none<QueuedChild>()))
        )
        if (Option.isNone(claimed)) break
        // The root caps its children fleet-wide: with its slots all held, the child goes back and this round ends.
        const slot = yield* treeSlot(claimed.value).pipe(
          Effect.catch((e) => Effect.as(Effect.logWarning(`taking a tree slot failed: ${e.message}`), Option.none()))
        )
        if (Option.isNone(slot)) {
          yield* queue.releaseClaim(claimed.value.tenantId, claimed.value.executionId, instance.instanceId).pipe(Effect.ignore)
          roundShort = true
          break
        }
        budget--
        state.running++
        state.starting++
        instance.passes.progressed()
        // Until its first step takes a slot (or it ends), the child counts against the free slots.
        let started = false
        const start = () => {
          if (started) return
          started = true
          state.starting--
        }
        yield* FiberSet.run(children, slot.value(runClaimed(queue, claimed.value, continues)).pipe(
          Effect.provideService(StepSlots.FirstSlot, start),
          Effect.ensuring(Effect.sync(() => {
            start()
            state.running--
            instance.passes.progressed()
            state.wake.notify()
          }))
        ))
      }
      if (budget <= 0) roundShort = true
    }
    short = roundShort
    yield* Effect.raceFirst(Effect.sleep(Duration.millis(instance.config.waitPollMillis)), Fiber.join(woken)).pipe(
      Effect.ensuring(Fiber.interrupt(woken))
    )
  }
})
