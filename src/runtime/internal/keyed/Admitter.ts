/**
 * The admitter: every instance moves the trees whose concurrency key entry
 * was admitted while they rest waiting, so an admission is acted on whatever
 * instance made it, and whichever instances are alive.
 *
 * Entries admitted by a call made here (a start, an end that freed a slot)
 * are handed over at once and moved here: the tree's lease taken if free
 * (else its holder or another instance has it), its gate passed (see
 * `Gate.pass`), its first step run. Every `sweepInterval`, and at start, a
 * look pages through the admitted entries of every tenant: a tree still
 * waiting is moved (its admitter died before moving it); an execution that
 * ended or is gone has its slot freed (its end's own release failed, or its
 * instance died right after writing the end), and the entries admitted in
 * its place are moved. A tree that runs, or rests at a pause, is left as it
 * is: it keeps its slot. Between looks the admitter sleeps on the Clock.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Deferred, Duration, Effect, FiberSet, Option } from "effect"
import type { ConcurrencyKeyStoreShape, EntryCursor, KeyEntry } from "../../../stores/ConcurrencyKeyStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { Instance } from "../Instance.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as Gate from "./Gate.ts"

/** Pages a look takes at most (a larger backlog is taken on at the next look). */
const maxPages = 100

/** One admitted entry: its waiting tree moved here, its ended execution's slot freed, or left alone. */
const admitOne = Effect.fnUntraced(function*(store: ConcurrencyKeyStoreShape, entry: KeyEntry, moves: FiberSet.FiberSet<unknown, unknown>) {
  const instance = yield* Instance
  const { tenantId, executionId } = entry
  if (instance.passes.onTree(tenantId, executionId) !== undefined) return
  const record = yield* (yield* RecordStore).getRecord(tenantId, executionId)
  if (Option.isNone(record) || (record.value.status !== "Running" && record.value.status !== "Paused")) {
    const released = yield* store.release(tenantId, executionId, yield* Clock.currentTimeMillis)
    Gate.handOff(instance, released.admitted)
    return
  }
  if (!(yield* Gate.restsWaiting(instance, record.value))) return
  // Not registered here: an instance that runs it moves it at its next look.
  yield* TreeDriver.continueInBackground(record.value, moves, "Recovered", "moving an admitted execution")
}, (effect, _store, entry) =>
  effect.pipe(
    Effect.catch((e) => Effect.logWarning(`admitted execution ${entry.executionId} not moved (the next look tries again): ${e.message}`))
  ))

/** One look: the admitted entries of every tenant, page by page. */
const look = Effect.fnUntraced(function*(store: ConcurrencyKeyStoreShape, moves: FiberSet.FiberSet<unknown, unknown>) {
  const { sweepPageSize } = (yield* Instance).config
  let after = Option.none<EntryCursor>()
  for (let page = 0; page < maxPages; page++) {
    const entries = yield* store.listAdmitted(sweepPageSize, after)
    for (const entry of entries) yield* admitOne(store, entry, moves)
    if (entries.length < sweepPageSize) return
    const last = entries[entries.length - 1]!
    after = Option.some({ tenantId: last.tenantId, executionId: last.executionId })
  }
})

/**
 * The admitter of this instance, until its scope closes; nothing without a
 * `ConcurrencyKeyStore`. The trees it moves run in `moves`.
 *
 * @category internal
 * @since 0.1.0
 */
export const run = Effect.fnUntraced(function*(moves: FiberSet.FiberSet<unknown, unknown>) {
  const instance = yield* Instance
  const store = Gate.storeOf(instance)
  if (store === undefined) return
  const handed: Array<KeyEntry> = []
  let poked = yield* Deferred.make<void>()
  Gate.onAdmitted(instance, (entries) => {
    handed.push(...entries)
    Deferred.doneUnsafe(poked, Effect.void)
  })
  let nextLook = yield* Clock.currentTimeMillis
  while (true) {
    const current = poked
    for (const entry of handed.splice(0)) yield* admitOne(store, entry, moves)
    if ((yield* Clock.currentTimeMillis) >= nextLook) {
      yield* look(store, moves).pipe(
        Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("concurrency key look failed", cause))
      )
      nextLook = (yield* Clock.currentTimeMillis) + instance.config.sweepMillis
    }
    if (handed.length > 0) continue
    const wait = Math.max(1, nextLook - (yield* Clock.currentTimeMillis))
    yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), Deferred.await(current))
    if (Deferred.isDoneUnsafe(current)) poked = yield* Deferred.make<void>()
  }
})
