/**
 * The gate of a root started with `concurrencyKey`: it runs only while it
 * holds one of its key's slots (an admitted `ConcurrencyKeyStore` entry).
 *
 * The tree carries two reserved keys: `@baton/concurrency-key` (its key and
 * limit, written before the root is recorded) and
 * `@baton/concurrency-admitted` (written, fenced by the holder's lease, once
 * the entry was admitted). Every pass of such a tree — the start's, a
 * recovery's, an admission's — goes through `pass` before a step runs: it
 * places the entry (idempotently: a start that died between recording the
 * root and placing it is placed by whoever takes the tree next), and
 * either marks the tree admitted and runs, or rests it Paused with no lease
 * held and no pause (a waiting tree). A tree marked admitted runs as any
 * other tree: a pause keeps its slot, and the slot is freed when the
 * execution ends (`ended`, called where every end is written) — the next
 * entries admitted are handed to the admitter (see `Admitter`), which moves
 * them on this instance, or on any instance at its next look.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Option } from "effect"
import { ConcurrencyKeyStore, type ConcurrencyKeyStoreShape, type KeyEntry } from "../../../stores/ConcurrencyKeyStore.ts"
import { DebounceStore } from "../../../stores/DebounceStore.ts"
import { StoreError } from "../../../stores/Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { reservedPrefix, TreeStore, type TreeEntry } from "../../../stores/TreeStore.ts"
import type { InstanceShape } from "../Instance.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"

/**
 * The reserved name of a keyed tree's key and limit.
 *
 * @category internal
 * @since 0.1.0
 */
export const markerName = "concurrency-key"

/**
 * The reserved name written once the tree's entry was admitted.
 *
 * @category internal
 * @since 0.1.0
 */
export const admittedName = "concurrency-admitted"

/**
 * The reserved name of a debounced tree's key (see `Debounce`), written before it is recorded.
 *
 * @category internal
 * @since 0.1.0
 */
export const debounceName = "debounce"

/**
 * The reserved name written once a debounced tree's window fired (its input then kept).
 *
 * @category internal
 * @since 0.1.0
 */
export const firedName = "debounce-fired"

/**
 * The tree keys the gates read (with a pass's own reserved keys, in one call).
 *
 * @category internal
 * @since 0.1.0
 */
export const keys: ReadonlyArray<string> = [
  reservedPrefix + markerName,
  reservedPrefix + admittedName,
  reservedPrefix + debounceName,
  reservedPrefix + firedName
]

/**
 * True when the reserved keys are a debounced tree's whose window has not fired yet.
 *
 * @category internal
 * @since 0.1.0
 */
export const debounceWaiting = (entries: ReadonlyArray<TreeEntry>): boolean =>
  entries.some((e) => e.key === reservedPrefix + debounceName) && !entries.some((e) => e.key === reservedPrefix + firedName)

/**
 * What a keyed tree keeps of its key.
 *
 * @category models
 * @since 0.1.0
 */
export interface Marker {
  readonly key: string
  readonly limit: number
}

/**
 * The instance's `ConcurrencyKeyStore`, if it has one.
 *
 * @category internal
 * @since 0.1.0
 */
export const storeOf = (instance: InstanceShape): ConcurrencyKeyStoreShape | undefined =>
  Option.getOrUndefined(Context.getOption(instance.services, ConcurrencyKeyStore))

/** The keyed trees an instance without the store said it leaves alone (said once each). */
const leftAlone = new WeakMap<InstanceShape, Set<string>>()

/**
 * Whether this instance lacks the store a keyed tree waits on (`keyed`: a
 * concurrency key's, `debounced`: a debounce window's; a fleet of
 * mixed store bundles): the tree is then left to an instance that has it —
 * said once per tree in the log — not run, and not failed.
 *
 * @category internal
 * @since 0.1.0
 */
export const cannotMove = (instance: InstanceShape, record: ExecutionRecord, waits: { readonly keyed: boolean; readonly debounced: boolean }) =>
  Effect.suspend(() => {
    const missing = waits.keyed && storeOf(instance) === undefined
      ? "ConcurrencyKeyStore"
      : waits.debounced && Option.isNone(Context.getOption(instance.services, DebounceStore))
      ? "DebounceStore"
      : undefined
    if (missing === undefined) return Effect.succeed(false)
    const said = leftAlone.get(instance) ?? new Set<string>()
    leftAlone.set(instance, said)
    const key = `${record.tenantId}/${record.rootExecutionId}`
    if (said.has(key)) return Effect.succeed(true)
    said.add(key)
    return Effect.as(
      Effect.logWarning(
        `execution ${record.rootExecutionId} waits on its ${missing === "ConcurrencyKeyStore" ? "concurrency key" : "debounce window"}, and this instance has no ${missing}: it is left to an instance that has one (give every instance the same store bundle)`
      ).pipe(Effect.annotateLogs({ executionId: record.rootExecutionId, tenantId: record.tenantId })),
      true
    )
  })

/**
 * The marker of a tree not admitted yet, from its reserved keys; undefined for
 * a tree without a key or one admitted already.
 *
 * @category internal
 * @since 0.1.0
 */
export const waitingOf = (entries: ReadonlyArray<TreeEntry>): Marker | undefined => {
  const marker = entries.find((e) => e.key === reservedPrefix + markerName)
  if (marker === undefined || entries.some((e) => e.key === reservedPrefix + admittedName)) return undefined
  return marker.value as Marker
}

/**
 * True when the record is a keyed tree resting until its key admits it
 * (Paused, its marker kept, not admitted), or a debounced one whose window
 * has not fired: `await` and `execute` wait on.
 *
 * @category internal
 * @since 0.1.0
 */
export const restsWaiting = (instance: InstanceShape, record: ExecutionRecord) =>
  Effect.gen(function*() {
    if (record.status !== "Paused" || record.parentExecutionId !== null) return false
    if (storeOf(instance) === undefined && !Context.getOption(instance.services, DebounceStore).pipe(Option.isSome)) return false
    const entries = yield* (yield* TreeStore).getMany(record.tenantId, record.rootExecutionId, keys)
    return waitingOf(entries) !== undefined || debounceWaiting(entries)
  })

/** Admitted entries handed to the instance's admitter (see `Admitter.onAdmitted`). */
const handOffs = new WeakMap<InstanceShape, (entries: ReadonlyArray<KeyEntry>) => void>()

/**
 * Registers the instance's admitter: entries admitted by a call made here are handed to it.
 *
 * @category internal
 * @since 0.1.0
 */
export const onAdmitted = (instance: InstanceShape, take: (entries: ReadonlyArray<KeyEntry>) => void): void => {
  handOffs.set(instance, take)
}

/**
 * Hands entries admitted here to the instance's admitter (those of this tree excepted).
 *
 * @category internal
 * @since 0.1.0
 */
export const handOff = (instance: InstanceShape, entries: ReadonlyArray<KeyEntry>, except?: string): void => {
  const others = entries.filter((e) => e.executionId !== except)
  if (others.length > 0) handOffs.get(instance)?.(others)
}

/**
 * The gate of one pass of a keyed tree (its marker read, not admitted yet),
 * under the pass's lease: places its entry, then answers true once the tree
 * is marked admitted (the pass runs), or false when it waits — the record
 * moved to (or left) Paused, for the admitter to move later.
 *
 * @category internal
 * @since 0.1.0
 */
export const pass = (instance: InstanceShape, record: ExecutionRecord, holder: LeaseHolder, marker: Marker) =>
  Effect.gen(function*() {
    const store = storeOf(instance)
    const { tenantId, rootExecutionId } = record
    if (store === undefined) {
      return yield* new StoreError({
        store: "ConcurrencyKeyStore",
        operation: "enqueue",
        kind: "Config",
        reason: `execution ${rootExecutionId} was started with a concurrency key, and this instance has no ConcurrencyKeyStore: give every instance the same store bundle`
      })
    }
    const placed = yield* store.enqueue({ tenantId, key: marker.key, executionId: rootExecutionId, limit: marker.limit, now: yield* Clock.currentTimeMillis })
    handOff(instance, placed.admitted, rootExecutionId)
    const now = yield* Clock.currentTimeMillis
    if (placed.entry.admitted) {
      yield* (yield* TreeStore).saveReservedFenced(tenantId, rootExecutionId, admittedName, { admittedAt: placed.entry.admittedAt }, holder.lease, now)
      return true
    }
    if (record.status === "Running") {
      yield* (yield* RecordStore).setStatusFenced({ tenantId, executionId: rootExecutionId, from: "Running", to: "Paused", now, lease: holder.lease })
    }
    return false
  })

/**
 * Frees the slot of a root that ended (called where every end is written):
 * its entry goes, and the entries admitted in its place are handed to the
 * admitter. A store error is logged: the admitter's next look frees the
 * slot of an ended execution.
 *
 * @category internal
 * @since 0.1.0
 */
export const ended = (instance: InstanceShape, record: { readonly tenantId: string; readonly executionId: string; readonly parentExecutionId: string | null }) => {
  const store = storeOf(instance)
  if (store === undefined || record.parentExecutionId !== null) return Effect.void
  return Clock.currentTimeMillis.pipe(
    Effect.flatMap((now) => store.release(record.tenantId, record.executionId, now)),
    Effect.tap((released) => Effect.sync(() => handOff(instance, released.admitted))),
    Effect.asVoid,
    Effect.catch((e) => Effect.logWarning(`freeing the concurrency key slot of execution ${record.executionId} failed; the next look frees it`, e.message))
  )
}
