/**
 * The debouncer: every instance fires the debounce windows that are due, so a
 * burst's execution runs once its window closes, on whichever instance is
 * alive. A look reads one page of due windows (the open ones past their
 * `fireAt`, earliest first, then the closed ones whose firing did not
 * finish) and moves each one's tree here through its gate (see
 * `Debounce.pass`: exactly one instance closes a window); a window whose
 * execution ended is dropped, and one whose starter died before recording
 * its root is recorded here. Between looks the debouncer sleeps on the
 * Clock until the earliest `fireAt`, at most `sweepInterval`, and is woken
 * at once by a start in its process.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Deferred, Duration, Effect, FiberSet, Option } from "effect"
import type { DebounceStoreShape, DebounceWindow } from "../../../stores/DebounceStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { Instance } from "../Instance.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as Debounce from "./Debounce.ts"
import * as Gate from "./Gate.ts"

/**
 * Records the root of a window whose starter died before recording it.
 *
 * @category models
 * @since 0.1.0
 */
export type RecordWindow = (window: DebounceWindow) => Effect.Effect<void, unknown, never>

/** One due (or unfinished) window: its tree moved here, or the window dropped when its execution ended. */
const fire = Effect.fnUntraced(function*(
  store: DebounceStoreShape,
  window: DebounceWindow,
  moves: FiberSet.FiberSet<unknown, unknown>,
  recordWindow: RecordWindow
) {
  const instance = yield* Instance
  const { tenantId, executionId } = window
  if (instance.passes.onTree(tenantId, executionId) !== undefined) return
  const record = yield* (yield* RecordStore).getRecord(tenantId, executionId)
  if (Option.isNone(record)) {
    // Its starter died before recording it (or records it right now: the shared start lets one of us).
    yield* FiberSet.run(moves, recordWindow(window).pipe(Effect.catchCause((cause) => Effect.logDebug("recording a debounced execution stopped", cause))))
    return
  }
  if (record.value.status !== "Running" && record.value.status !== "Paused") {
    yield* store.delete(tenantId, executionId)
    return
  }
  if (!(yield* Gate.restsWaiting(instance, record.value))) {
    // Fired, its window left behind by a firing that stopped after marking it: nothing more to do.
    if (!window.open && record.value.status === "Running") yield* store.delete(tenantId, executionId)
    return
  }
  yield* TreeDriver.continueInBackground(record.value, moves, "Recovered", "firing a debounced execution")
}, (effect, _store, window) =>
  effect.pipe(
    Effect.catch((e) => Effect.logWarning(`debounce window of execution ${window.executionId} not fired (the next look tries again): ${e.message}`))
  ))

/**
 * The debouncer of this instance, until its scope closes; nothing without a
 * `DebounceStore`. The trees it moves run in `moves`.
 *
 * @category internal
 * @since 0.1.0
 */
export const run = Effect.fnUntraced(function*(moves: FiberSet.FiberSet<unknown, unknown>, recordWindow: RecordWindow) {
  const instance = yield* Instance
  const store = Debounce.storeOf(instance)
  if (store === undefined) return
  let poked = yield* Deferred.make<void>()
  Debounce.onPoke(instance, () => Deferred.doneUnsafe(poked, Effect.void))
  while (true) {
    const current = poked
    yield* Effect.gen(function*() {
      const due = yield* store.due(yield* Clock.currentTimeMillis, instance.config.sweepPageSize)
      for (const window of due) yield* fire(store, window, moves, recordWindow)
    }).pipe(Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("debounce look failed", cause)))
    const next = yield* store.nextDue.pipe(Effect.catch(() => Effect.succeed(Option.none<number>())))
    // Read after the query: the Clock may have moved while it ran.
    const now = yield* Clock.currentTimeMillis
    const wait = Math.max(1, Math.min(instance.config.sweepMillis, Option.getOrElse(next, () => Infinity) - now))
    yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), Deferred.await(current))
    if (Deferred.isDoneUnsafe(current)) poked = yield* Deferred.make<void>()
  }
})
