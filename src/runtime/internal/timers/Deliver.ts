/**
 * Answering sleeps and signal waits. A resting wait has one timer row
 * (`TimerStore`); whoever finds it due — the holder about to rest, or any
 * instance's waker — answers its pause with the same decision, read from
 * the store: the sleep's end once its due time has come (never before), the
 * signal the wait took (`TimerStore.consume`: exactly one wait takes each
 * signal), or its timeout (sealed in the store, so no signal is lost to it).
 * The pause's `resolve` happens once; the tree then continues from its
 * checkpoint like after a `resume`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { Pause } from "../../../stores/Pause.ts"
import type { PauseStoreShape } from "../../../stores/PauseStore.ts"
import { type Timer, TimerStore, type TimerStoreShape } from "../../../stores/TimerStore.ts"
import type { InstanceShape } from "../Instance.ts"
import { type Wait, type WaitAnswer, waitOf } from "./Waits.ts"

/**
 * The instance's `TimerStore`, if it has one.
 *
 * @category internal
 * @since 0.1.0
 */
export const storeOf = (instance: InstanceShape): TimerStoreShape | undefined =>
  Option.getOrUndefined(Context.getOption(instance.services, TimerStore))

/**
 * Whether the instance has a `TimerStore`.
 *
 * @category internal
 * @since 0.1.0
 */
export const available = (instance: InstanceShape): boolean => storeOf(instance) !== undefined

const pokes = new WeakMap<InstanceShape, () => void>()

/**
 * Registers the instance's waker: `poke` makes it look for due timers now.
 *
 * @category internal
 * @since 0.1.0
 */
export const onPoke = (instance: InstanceShape, wake: () => void): void => {
  pokes.set(instance, wake)
}

/**
 * Tells the instance's waker to look now (a timer was armed or a signal sent here).
 *
 * @category internal
 * @since 0.1.0
 */
export const poke = (instance: InstanceShape): void => pokes.get(instance)?.()

/** The timer of a wait's pause, as armed. */
const timerOf = (pause: Pause, wait: Wait, now: number): Timer => {
  const dueAt = wait._tag === "Sleep" ? wait.wakesAt : wait.timeoutAt
  return {
    tenantId: pause.tenantId,
    pauseId: pause.pauseId,
    rootExecutionId: pause.rootExecutionId,
    threadId: pause.threadId,
    kind: wait._tag,
    name: wait._tag === "Signal" ? wait.name : null,
    dueAt,
    wakesAt: dueAt,
    claimedBy: null,
    createdAt: now
  }
}

/** The wait's answer at `now`, read from the store; undefined while it still waits. */
const answerOf = Effect.fnUntraced(function*(store: TimerStoreShape, timer: Timer, now: number) {
  if (timer.kind === "Sleep") return timer.dueAt !== null && timer.dueAt <= now ? { woke: timer.dueAt } satisfies WaitAnswer as WaitAnswer : undefined
  const taken = yield* store.consume({
    tenantId: timer.tenantId,
    rootExecutionId: timer.rootExecutionId,
    threadId: timer.threadId,
    name: timer.name ?? "",
    pauseId: timer.pauseId,
    timeUp: timer.dueAt !== null && timer.dueAt <= now,
    now
  })
  if (taken._tag === "Signal") return { signal: { seq: taken.signal.seq, payload: taken.signal.payload } } satisfies WaitAnswer as WaitAnswer
  if (taken._tag === "TimedOut") return { timedOut: timer.dueAt ?? now } satisfies WaitAnswer as WaitAnswer
  return undefined
})

/**
 * What became of a timer looked at: its pause answered now (`Answered`), still waiting, or gone (its pause
 * answered, withdrawn or deleted already: the timer is dropped).
 *
 * @category models
 * @since 0.1.0
 */
export type Delivery = "Answered" | "Waiting" | "Gone"

/**
 * Answers the timer's pause if its wait is over at `now`, and drops the timer once its pause is settled.
 *
 * @category internal
 * @since 0.1.0
 */
export const deliver = Effect.fnUntraced(function*(store: TimerStoreShape, pauses: PauseStoreShape, timer: Timer, instanceId: string, now: number) {
  const pause = yield* pauses.get(timer.tenantId, timer.pauseId)
  if (Option.isNone(pause) || pause.value.status !== "Pending") {
    yield* store.disarm(timer.tenantId, timer.pauseId)
    return "Gone" satisfies Delivery as Delivery
  }
  const answer = yield* answerOf(store, timer, now)
  if (answer === undefined) return "Waiting" satisfies Delivery as Delivery
  const answered = yield* pauses.resolve({ tenantId: timer.tenantId, pauseId: timer.pauseId, decision: answer, resolvedBy: instanceId, now }).pipe(
    Effect.as(true),
    // Answered already (the same answer: it is read from the store), or withdrawn by a cancel.
    Effect.catchTags({ NotPausedError: () => Effect.succeed(false), UnknownPauseError: () => Effect.succeed(false) })
  )
  yield* store.disarm(timer.tenantId, timer.pauseId)
  return (answered ? "Answered" : "Gone") satisfies Delivery as Delivery
})

/**
 * Before a tree rests: every sleep and signal wait among its pending pauses
 * gets its timer (once), and one over already — a signal sent before the wait
 * started, a sleep of no time — is answered here (the pass then goes on).
 *
 * @category internal
 * @since 0.1.0
 */
export const armWaits = Effect.fnUntraced(function*(instance: InstanceShape, pauses: PauseStoreShape, record: ExecutionRecord, now: number) {
  const store = storeOf(instance)
  if (store === undefined) return
  const pending = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending"])
  let armed = false
  for (const pause of pending) {
    const wait = waitOf(pause.payload)
    if (wait === undefined) continue
    const timer = timerOf(pause, wait, now)
    if (yield* store.arm(timer)) armed = true
    yield* deliver(store, pauses, (yield* store.get(timer.tenantId, timer.pauseId)).pipe(Option.getOrElse(() => timer)), instance.instanceId, now)
  }
  if (armed) poke(instance)
})

/**
 * The tree ended: its timers and signals go.
 *
 * @category internal
 * @since 0.1.0
 */
export const dropRows = (instance: InstanceShape, record: { readonly tenantId: string; readonly rootExecutionId: string }) => {
  const store = storeOf(instance)
  return store === undefined ? Effect.void : Effect.asVoid(store.deleteRoot(record.tenantId, record.rootExecutionId))
}
