/**
 * What a parent waits on while its children rest, and the pauses of its
 * children it shows as its own.
 *
 * A parent rests on one of two pauses only the runtime answers: a children
 * wait (placement `"any"`: the launch's queued children, answered once each
 * has finished or failed) or a paused-children wait (placement `"parent"`:
 * the inline children that rest at a pause, answered when one of them is
 * answered). A child rests Paused on its own thread — at its own pause, or
 * on its own children — and its parent keeps waiting. Every pause a caller
 * may answer below a parent, at any depth, is forwarded: the parent's reads
 * and outputs list it, marked with the child it belongs to.
 *
 * @since 0.1.0
 */
import * as TreeRoot from "./TreeRoot.ts"
import { Effect, Option } from "effect"
import { ChildQueueStore, type Failure } from "../../../stores/ChildQueueStore.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { Pause } from "../../../stores/Pause.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import type { ChildPauseOrigin, ChildrenWait } from "../../Children.ts"
import { isTimerWait } from "../timers/Waits.ts"

/**
 * The key in a children-wait pause's payload: such a pause is answered by the runtime, never by `resume`.
 *
 * @category internal
 * @since 0.1.0
 */
export const waitMarker = "@baton/children"

/**
 * The key in a paused-children wait's payload (placement `"parent"`): answered by the runtime.
 *
 * @category internal
 * @since 0.1.0
 */
export const pausedMarker = "@baton/children-paused"

/**
 * What a paused-children wait stands for: the inline children of one launch that rest at a pause.
 *
 * @category internal
 * @since 0.1.0
 */
export interface PausedChildrenWait {
  readonly launchId: string
  readonly workflowName: string
  readonly children: ReadonlyArray<string>
}

const markerOf = (payload: unknown, marker: string): Record<string, unknown> | undefined => {
  if (typeof payload !== "object" || payload === null) return undefined
  const wait = (payload as Record<string, unknown>)[marker]
  return typeof wait === "object" && wait !== null && typeof (wait as { launchId?: unknown }).launchId === "string"
    ? wait as Record<string, unknown>
    : undefined
}

/**
 * The children wait a pause stands for, if it is one.
 *
 * @category internal
 * @since 0.1.0
 */
export const waitOf = (payload: unknown): ChildrenWait | undefined => markerOf(payload, waitMarker) as ChildrenWait | undefined

/**
 * The paused-children wait a pause stands for, if it is one.
 *
 * @category internal
 * @since 0.1.0
 */
export const pausedWaitOf = (payload: unknown): PausedChildrenWait | undefined => {
  const wait = markerOf(payload, pausedMarker)
  return wait !== undefined && Array.isArray(wait.children) ? wait as unknown as PausedChildrenWait : undefined
}

/**
 * True for a pause only the runtime answers (a children wait of either placement).
 *
 * @category internal
 * @since 0.1.0
 */
export const isRuntimeWait = (pause: { readonly payload: unknown }): boolean =>
  waitOf(pause.payload) !== undefined || pausedWaitOf(pause.payload) !== undefined

/** How deep forwarding looks below a parent (a bound against a malformed tree). */
const maxDepth = 64

/**
 * The ids of the children a runtime wait waits on that rest now: a launch's
 * rows resting Paused, or the inline children the wait names.
 */
const restingChildren = (tenantId: string, pause: Pause) =>
  Effect.gen(function*() {
    const wait = waitOf(pause.payload)
    if (wait !== undefined) {
      const queue = yield* Effect.serviceOption(ChildQueueStore)
      if (Option.isNone(queue)) return []
      const rows = yield* queue.value.listLaunch(tenantId, wait.launchId)
      return rows.filter((r) => r.status === "Paused").map((r) => r.executionId)
    }
    return [...(pausedWaitOf(pause.payload)?.children ?? [])]
  })

/**
 * A pause a caller may answer, found below a record, with the execution it
 * belongs to.
 *
 * @category models
 * @since 0.1.0
 */
export interface Leaf {
  readonly pause: Pause
  readonly owner: ExecutionRecord
}

/** The pending pauses `take` keeps in the record's tree and, through its runtime waits, below it at any depth. */
const collect = (record: ExecutionRecord, take: (pause: Pause) => boolean): Effect.Effect<ReadonlyArray<Leaf>, Failure, PauseStore | RecordStore> =>
  Effect.gen(function*() {
    const pauses = yield* PauseStore
    const records = yield* RecordStore
    const out: Array<Leaf> = []
    const seen = new Set<string>()
    const visit = (r: ExecutionRecord, depth: number): Effect.Effect<void, Failure> =>
      Effect.gen(function*() {
        if (r.status !== "Paused" || depth > maxDepth || seen.has(r.executionId)) return
        seen.add(r.executionId)
        const pending = yield* pauses.listByRoot(r.tenantId, r.rootExecutionId, ["Pending"])
        for (const p of pending) if (!isRuntimeWait(p) && take(p)) out.push({ pause: p, owner: r })
        for (const p of pending) {
          if (!isRuntimeWait(p)) continue
          for (const id of yield* restingChildren(r.tenantId, p)) {
            const child = yield* records.getRecord(r.tenantId, id)
            if (Option.isSome(child) && child.value.parentExecutionId === r.executionId) yield* visit(child.value, depth + 1)
          }
        }
      })
    yield* visit(record, 0)
    return out
  })

/**
 * Every pending pause a caller may answer in the record's tree and, through
 * its runtime waits, in the trees of its resting children at any depth —
 * the record's own first, then its children's in launch order. Sleeps and
 * signal waits are not among them: the runtime answers those on time (or a
 * signal does).
 *
 * @category internal
 * @since 0.1.0
 */
export const leavesOf = (record: ExecutionRecord): Effect.Effect<ReadonlyArray<Leaf>, Failure, PauseStore | RecordStore> =>
  collect(record, (p) => !isTimerWait(p))

/**
 * The sleeps and signal waits of `record`'s resting children (at any depth), for its `status`.
 *
 * @category internal
 * @since 0.1.0
 */
export const timerWaitsBelow = (record: ExecutionRecord) =>
  Effect.map(collect(record, isTimerWait), (leaves) => leaves.filter((l) => l.owner.executionId !== record.executionId))

/**
 * The child a forwarded pause belongs to.
 *
 * @category internal
 * @since 0.1.0
 */
export const originOf = (leaf: Leaf): ChildPauseOrigin => ({
  executionId: leaf.owner.executionId,
  threadId: leaf.owner.threadId,
  pauseId: leaf.pause.pauseId,
  workflowName: leaf.owner.workflowName,
  depth: leaf.owner.depth
})

/**
 * The pauses of `record`'s resting children (at any depth) a caller of
 * `record` may answer: not its own.
 *
 * @category internal
 * @since 0.1.0
 */
export const forwardedOf = (record: ExecutionRecord) =>
  Effect.map(leavesOf(record), (leaves) => leaves.filter((l) => l.owner.executionId !== record.executionId))

/**
 * True when the record rests Paused on nothing but runtime waits (or on
 * one answered and not taken yet) and no child below it rests at a pause a
 * caller may answer: the runtime continues it, nobody needs to answer.
 *
 * @category internal
 * @since 0.1.0
 */
export const restsOnlyOnChildren = (record: ExecutionRecord) =>
  Effect.gen(function*() {
    if (record.status !== "Paused") return false
    const open = yield* (yield* PauseStore).listByRoot(record.tenantId, record.rootExecutionId, ["Pending", "Resolved"])
    const pending = open.filter((p) => p.status === "Pending")
    // A wait answered and not taken yet: whoever answered it continues the tree now.
    const answeredWait = open.some((p) => p.status === "Resolved" && isRuntimeWait(p))
    if ((pending.length === 0 && !answeredWait) || !pending.every(isRuntimeWait)) return false
    return (yield* leavesOf(record)).length === 0
  })

/**
 * True when a resting child may go on: it no longer rests Paused, or a
 * decision for its tree waits to be taken.
 *
 * @category internal
 * @since 0.1.0
 */
export const mayGoOn = (tenantId: string, executionId: string) =>
  Effect.gen(function*() {
    const record = yield* (yield* RecordStore).getRecord(tenantId, executionId)
    if (Option.isNone(record) || record.value.status !== "Paused") return true
    return (yield* (yield* PauseStore).listByRoot(tenantId, record.value.rootExecutionId, ["Resolved"])).length > 0
  })

/**
 * The root of the caller's tree above a record: its parents followed up to the one without a parent.
 *
 * @category internal
 * @since 0.1.0
 */
export const topOf = (record: ExecutionRecord) => Effect.map(TreeRoot.highestOf(record), (h) => h.record)

/**
 * A paused output with the pauses of the record's resting children added
 * (each marked with its child), after its own.
 *
 * @category internal
 * @since 0.1.0
 */
export const withForwarded = <A extends { readonly _tag: string }>(out: A, record: ExecutionRecord) =>
  out._tag !== "Paused"
    ? Effect.succeed(out)
    : Effect.map(forwardedOf(record), (forwarded): A => {
      if (forwarded.length === 0) return out
      const own = (out as unknown as { readonly pauses: ReadonlyArray<{ readonly pauseId: string }> }).pauses
      const known = new Set(own.map((p) => p.pauseId))
      const more = forwarded.filter((l) => !known.has(l.pause.pauseId)).map((l) => ({ pauseId: l.pause.pauseId, payload: l.pause.payload, child: originOf(l) }))
      return { ...out, pauses: [...own, ...more] }
    })
