/**
 * Debounced starts: a burst of starts with one `debounce.key` (per tenant)
 * inside the window becomes one execution that runs with the last input,
 * once the window closes on the Clock (`window` after the last start of the
 * burst).
 *
 * The first start of a burst opens a `DebounceStore` window with fresh ids
 * and records the root at once — Paused with no pause and no lease, no input
 * kept yet, its tree marked `@baton/debounce` — so every caller of the burst
 * gets the handle of that one execution; each later start replaces the
 * window's input and moves its `fireAt` on. Every instance's debouncer sleeps
 * until the earliest `fireAt` (at most `sweepInterval`, woken at once by a
 * start in its process) and moves each due window's tree: the tree's gate
 * (`pass`, under the tree's lease) closes the window by a compare-and-set on
 * its version — a start that came meanwhile wins, and the tree rests until
 * the moved `fireAt` — then keeps the window's input with the tree, marks it
 * fired, deletes the window and runs it from that input. A crash anywhere
 * in between leaves the window closed (or the record Running): the next
 * look, or the recovery sweep, goes through the gate again and finishes the
 * firing. A window whose starter died before recording the root is recorded
 * by the debouncer.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Option } from "effect"
import { DebounceStore, type DebounceStoreShape } from "../../../stores/DebounceStore.ts"
import { StoreError } from "../../../stores/Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { reservedPrefix, TreeStore } from "../../../stores/TreeStore.ts"
import type { InstanceShape } from "../Instance.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"
import * as Gate from "./Gate.ts"

/**
 * What a window starts: the workflow (name and config hash) and the thread's owner.
 *
 * @category models
 * @since 0.1.0
 */
export interface Definition {
  readonly workflowName: string
  readonly configHash: string
  readonly ownerId: string | null
}

/**
 * The instance's `DebounceStore`, if it has one.
 *
 * @category internal
 * @since 0.1.0
 */
export const storeOf = (instance: InstanceShape): DebounceStoreShape | undefined =>
  Option.getOrUndefined(Context.getOption(instance.services, DebounceStore))

const pokes = new WeakMap<InstanceShape, () => void>()

/**
 * Registers the instance's debouncer: `poke` makes it look now.
 *
 * @category internal
 * @since 0.1.0
 */
export const onPoke = (instance: InstanceShape, wake: () => void): void => {
  pokes.set(instance, wake)
}

/**
 * Tells the instance's debouncer to look again now (a window was opened or moved here).
 *
 * @category internal
 * @since 0.1.0
 */
export const poke = (instance: InstanceShape): void => pokes.get(instance)?.()

/**
 * The gate of one pass of a debounced tree whose window has not fired, under
 * the pass's lease: `Some(input)` once the window is closed here (or was, by
 * a firing that did not finish) — the input kept with the tree, the record
 * Running, the tree marked fired, the window deleted: the pass runs from
 * that input. `None` while the window is open (or another start moved it):
 * the record rests Paused. (`inputKeyName` is the reserved name a tree's
 * input is kept under, the pass's.)
 *
 * @category internal
 * @since 0.1.0
 */
export const pass = (instance: InstanceShape, record: ExecutionRecord, holder: LeaseHolder, inputKeyName: string) =>
  Effect.gen(function*() {
    const store = storeOf(instance)
    const { tenantId, rootExecutionId } = record
    const records = yield* RecordStore
    const tree = yield* TreeStore
    const rest = Effect.gen(function*() {
      if (record.status === "Running") {
        yield* records.setStatusFenced({ tenantId, executionId: rootExecutionId, from: "Running", to: "Paused", now: yield* Clock.currentTimeMillis, lease: holder.lease })
      }
      return Option.none<unknown>()
    })
    if (store === undefined) {
      return yield* new StoreError({
        store: "DebounceStore",
        operation: "get",
        kind: "Config",
        reason: `execution ${rootExecutionId} was started with debounce, and this instance has no DebounceStore: give every instance the same store bundle`
      })
    }
    let window = yield* store.get(tenantId, rootExecutionId)
    if (Option.isNone(window)) {
      // A firing that kept the input and moved the record on, then stopped: its window was dropped since. Finish it.
      const kept = yield* tree.get(tenantId, rootExecutionId, reservedPrefix + inputKeyName)
      // Neither window nor kept input: its thread was deleted while this pass waited for the lease.
      if (Option.isNone(kept)) {
        return yield* new StoreError({
          store: "DebounceStore",
          operation: "get",
          kind: "Data",
          reason: `the debounce window of execution ${rootExecutionId} is gone before it fired, and no input was kept: its thread was deleted meanwhile`
        })
      }
      yield* tree.saveReservedFenced(tenantId, rootExecutionId, Gate.firedName, { firedAt: yield* Clock.currentTimeMillis }, holder.lease, yield* Clock.currentTimeMillis)
      return Option.some(kept.value)
    }
    if (window.value.open) {
      const now = yield* Clock.currentTimeMillis
      if (window.value.fireAt > now) return yield* rest
      window = yield* store.close(tenantId, rootExecutionId, window.value.version, now)
      // Another start of the burst came first: the window is open until its new fireAt.
      if (Option.isNone(window)) return yield* rest
    }
    const input = window.value.input
    const now = yield* Clock.currentTimeMillis
    yield* tree.saveReservedFenced(tenantId, rootExecutionId, inputKeyName, input, holder.lease, now)
    if (record.status === "Paused") {
      yield* records.setStatusFenced({ tenantId, executionId: rootExecutionId, from: "Paused", to: "Running", now, lease: holder.lease })
    }
    yield* tree.saveReservedFenced(tenantId, rootExecutionId, Gate.firedName, { firedAt: now }, holder.lease, now)
    yield* store.delete(tenantId, rootExecutionId)
    return Option.some(input)
  })

/**
 * Drops the window of a debounced root that ended before it fired (a cancel):
 * the next start of its key opens a new one. A store error is logged.
 *
 * @category internal
 * @since 0.1.0
 */
export const ended = (instance: InstanceShape, record: { readonly tenantId: string; readonly executionId: string; readonly parentExecutionId: string | null }) => {
  const store = storeOf(instance)
  if (store === undefined || record.parentExecutionId !== null) return Effect.void
  return store.delete(record.tenantId, record.executionId).pipe(
    Effect.asVoid,
    Effect.catch((e) => Effect.logWarning(`dropping the debounce window of execution ${record.executionId} failed`, e.message))
  )
}
