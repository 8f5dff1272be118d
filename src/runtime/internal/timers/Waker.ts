/**
 * The waker: every instance looks for due timers and answers them, so a
 * resting sleep or signal wait is woken on whichever instance is alive.
 *
 * A look claims one page of due timers (`TimerStore.claimDue`: one indexed
 * query; a claim moves the timer past the claim's length, so exactly one
 * instance has it and one that dies with it leaves it due again a lease
 * later), answers each pause whose wait is over, and continues its tree here
 * (when its lease is free; else the holder takes the answer before it rests,
 * or the recovery sweep does), 16 timers of a page at a time. A timer claimed by a signal whose signal went
 * to another wait is set back. A full page is followed by the next at once,
 * at most `maxPages` in a row. Between looks the waker sleeps on the Clock
 * until the earliest wake the store holds, at most `sweepInterval`, and is
 * woken at once when a timer is armed or a signal sent in this process, or
 * a tree that did not end is released anywhere the lease wake-ups reach
 * (another process's tree resting on a new timer: Postgres NOTIFY, the
 * SQLite poll).
 *
 * @since 0.1.0
 */
import { Cause, Clock, Deferred, Duration, Effect, Fiber, FiberSet, Option } from "effect"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import type { Timer, TimerStoreShape } from "../../../stores/TimerStore.ts"
import { Instance } from "../Instance.ts"
import * as ChildPauses from "../children/ChildPauses.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as Deliver from "./Deliver.ts"

/** Pages a look takes in a row before it sleeps (a backlog is taken on at the next look). */
const maxPages = 10

/** Timers of a page answered at once (each a few store calls; the trees then continue in their own fibers). */
const wakeConcurrency = 16

/**
 * Continues what the answered wait moves, in a fiber of `continues`: a root's tree (its lease taken if free);
 * a child the way it runs (`ChildPauses.continueUp`): a queued child back to its queue, an inline child
 * through its parent's step, the root above driven here.
 */
const continueTree = Effect.fnUntraced(function*(timer: Timer, continues: FiberSet.FiberSet<unknown, unknown>) {
  const pause = yield* (yield* PauseStore).get(timer.tenantId, timer.pauseId)
  const owner = yield* (yield* RecordStore).getRecord(timer.tenantId, Option.match(pause, { onNone: () => timer.rootExecutionId, onSome: (p) => p.executionId }))
  if (Option.isNone(owner) || owner.value.status !== "Paused") return
  const root = owner.value.parentExecutionId === null ? owner : yield* ChildPauses.continueUp(owner.value)
  if (Option.isNone(root)) return
  // Not registered here: an instance that runs it continues it (its recovery sweep finds the answered pause).
  yield* TreeDriver.continueInBackground(root.value, continues, "Answered", "continuing a tree after its wait was answered")
})

/** One claimed timer: answered (and its tree continued), set back while it still waits, or dropped. */
const wake = Effect.fnUntraced(function*(store: TimerStoreShape, timer: Timer, continues: FiberSet.FiberSet<unknown, unknown>) {
  const instance = yield* Instance
  const pauses = yield* PauseStore
  const now = yield* Clock.currentTimeMillis
  const delivery = yield* Deliver.deliver(store, pauses, timer, instance.instanceId, now)
  if (delivery === "Waiting") yield* store.release(timer.tenantId, timer.pauseId, instance.instanceId, timer.dueAt)
  if (delivery === "Answered") yield* continueTree(timer, continues)
}, (effect, _store, timer) =>
  effect.pipe(
    Effect.catch((e) => Effect.logWarning(`timer of pause ${timer.pauseId} not answered (it is due again when its claim runs out): ${e.message}`))
  ))

/** One look: up to `maxPages` pages of due timers claimed and answered. */
const look = Effect.fnUntraced(function*(store: TimerStoreShape, continues: FiberSet.FiberSet<unknown, unknown>) {
  const instance = yield* Instance
  const { leaseMillis, sweepPageSize } = instance.config
  for (let page = 0; page < maxPages; page++) {
    const now = yield* Clock.currentTimeMillis
    const due = yield* store.claimDue(now, sweepPageSize, instance.instanceId, leaseMillis)
    yield* Effect.forEach(due, (timer) => wake(store, timer, continues), { concurrency: wakeConcurrency, discard: true })
    if (due.length < sweepPageSize) return
  }
})

/**
 * The waker of this instance, until its scope closes; nothing without a `TimerStore`.
 *
 * @category internal
 * @since 0.1.0
 */
export const run = Effect.fnUntraced(function*(continues: FiberSet.FiberSet<unknown, unknown>) {
  const instance = yield* Instance
  const store = Deliver.storeOf(instance)
  if (store === undefined) return
  const wakeups = yield* LeaseWakeups
  let poked = yield* Deferred.make<void>()
  Deliver.onPoke(instance, () => Deferred.doneUnsafe(poked, Effect.void))
  while (true) {
    // A poke during the look wakes the next one at once; so does a release of a tree that did not end, on any
    // instance the wake-ups reach (Postgres NOTIFY, the SQLite poll): a tree that rests may have armed a timer.
    const current = poked
    const released = yield* Effect.forkChild(wakeups.next(undefined, undefined, { skipEnded: () => true }), { startImmediately: true })
    yield* look(store, continues).pipe(
      Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("timer look failed", cause))
    )
    const next = yield* store.nextWake.pipe(Effect.catch(() => Effect.succeed(Option.none<number>())))
    // The time is read after the query: the Clock may have moved while it ran, and a wait measured from before
    // would sleep past the wake by that much.
    const now = yield* Clock.currentTimeMillis
    const wait = Math.max(0, Math.min(instance.config.sweepMillis, Option.getOrElse(next, () => Infinity) - now))
    // A timer of this look (due, but past the page) is taken at once; else sleep until the next wake.
    yield* Effect.raceAllFirst([Effect.sleep(Duration.millis(Math.max(wait, 1))), Deferred.await(current), Fiber.join(released)]).pipe(
      Effect.ensuring(Fiber.interrupt(released))
    )
    if (Deferred.isDoneUnsafe(current)) poked = yield* Deferred.make<void>()
  }
})
