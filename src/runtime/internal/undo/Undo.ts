/**
 * Durable undo: steps register undos with their results; an execution that
 * ends without finishing runs its open undos last-in-first-out before it
 * ends, and whoever holds the tree next finishes what a stopped holder left.
 *
 * What is durable, in the tree store (reserved keys under `@baton/`):
 * - `undo/<step key>`: "the step with this idempotency key finished with
 *   this result and has an undo" — written (saveIfAbsent, keyed by the
 *   step's idempotency key) inside the tracked step body, right after the
 *   body returned and before its result goes to LangGraph's fenced
 *   checkpoint write. So a step whose result is checkpointed always has its
 *   undo on record. The other way round, a registration whose checkpoint
 *   was never written (the holder died in between) belongs to a body that
 *   did return — its side effect happened, so its undo is rightly on record;
 *   the step's re-run has the same key and finds it there. A stale holder
 *   may not register: like every write below, it is fenced in the store's
 *   own write (see `fencedSave`), after a local check.
 * - `unwinding`: why the tree ends (reason, error tag, message), written
 *   before the first undo; the first one written is kept.
 * - `compensated/<step key>`: after each undo that succeeded.
 * - `undo-failed/<step key>`: an undo that failed after its last try; the
 *   next holder does not try it again, and it is listed in the end.
 * The record stays Running while the tree unwinds, so a crash, lost lease or
 * close mid-undo leaves it to the recovery sweep (or a waiting resume),
 * which reads `unwinding` at its lease take and finishes.
 *
 * Order: registrations carry the holder's lease epoch (a new holder always
 * has a higher one) and a per-pass counter, so sorting by (epoch, counter)
 * is the order the steps finished in; undos run in its reverse.
 *
 * Children: a parent that unwinds undoes the children it launched
 * that finished (their own undos) at the launching step's place, children of
 * one launch in reverse launch order, before its earlier steps:
 * - `undo/<launch id>` (kind `launch`): written by the launching step under
 *   the parent's fence before any child exists — only when the child workflow
 *   (or one of its own children) declares an undo — naming the children in
 *   launch order. Its (epoch, counter) puts the launch among the steps.
 * - `child-undo/<child execution id>`: a child that finishes copies its
 *   undo state (its registrations and its own children's hand-offs) into its
 *   parent's tree, under its lease, before its record ends Finished (its own
 *   tree's keys go when it ends). A child that fails or is cancelled unwinds
 *   itself and hands nothing over — but for the undos it already handed over
 *   (its `handoff` claim written: those are its parent's to run); one whose
 *   parent ended or unwinds already undoes itself too (see `handOff`).
 * - `handoff` in the child's own tree: who has the child's undos. The child
 *   writes it (with its undo state) before copying, its unwinding parent (or
 *   a holder ending it without its workflow) writes a refusal (see
 *   `closeHandOffs`): the first write decides, so a
 *   hand-off landing while the parent unwinds or after it ended is either
 *   in the parent's tree before it reads its undos, or undone by the child.
 * Unwinding reads the registrations with each launch expanded into its
 * children's undos (see `stateOf`), so a child's undo is one more entry:
 * marked done in the parent's tree under its step key, resumable, once each.
 *
 * @since 0.1.0
 */
import * as StepClock from "../StepClock.ts"
import { Cause, Clock, Deferred, Duration, Effect, Exit, Option } from "effect"
import { type InvalidInputError, LeaseLostError, type StoreError } from "../../../stores/Errors.ts"
import { ExecutionFailedError, InstanceStoppingError, UndoFailedError } from "../../Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { reservedPrefix, TreeStore, type TreeStoreShape } from "../../../stores/TreeStore.ts"
import { Observer } from "../../Observer.ts"
import type { AnyWorkflow, UndoContext, UndoReason } from "../../Workflow.ts"
import * as NodeUndo from "./NodeUndo.ts"
import * as Metrics from "../../Metrics.ts"
import * as History from "../observe/History.ts"
import * as Metering from "../observe/Metering.ts"
import * as StepSlots from "../limits/StepSlots.ts"
import * as Timers from "../timers/Deliver.ts"
import * as Gate from "../keyed/Gate.ts"
import { type ActivePass, Instance, type InstanceShape } from "../Instance.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"
import * as Passes from "../pass/Passes.ts"

const registrationPrefix = "undo/"
const unwindingName = "unwinding"
const compensatedPrefix = "compensated/"
const failedPrefix = "undo-failed/"
const handoffPrefix = "child-undo/"
const claimName = "handoff"

/** A step's undo as the runtime keeps it on the node. */
type UndoFunction = NodeUndo.NodeUndo<UndoContext>

/**
 * The reserved tree key of a tree that unwinds.
 *
 * @category internal
 * @since 0.1.0
 */
export const unwindingKey = `${reservedPrefix}${unwindingName}`

/**
 * The reserved tree key marking the undo of step `key` done.
 *
 * @category internal
 * @since 0.1.0
 */
export const compensatedKey = (stepKey: string) => `${reservedPrefix}${compensatedPrefix}${stepKey}`

/**
 * A step's undo on record.
 *
 * @category models
 * @since 0.1.0
 */
export interface Registration {
  readonly node: string
  /** The step's idempotency key. */
  readonly key: string
  /** The step's result, as the store keeps it. */
  readonly result: unknown
  readonly executionId: string
  /** The lease epoch and the pass's counter when it registered: the order steps finished in. */
  readonly epoch: number
  readonly seq: number
  readonly at: number
  /** A launch's registration (`key` is the launch id): its children, in launch order. */
  readonly kind?: "launch" | undefined
  readonly children?: ReadonlyArray<string> | undefined
  /** Set on a child's undo as its parent reads it: the child's workflow and thread. */
  readonly workflowName?: string | undefined
  readonly threadId?: string | undefined
}

/**
 * A finished child's undo state, handed to its parent's tree.
 *
 * @category models
 * @since 0.1.0
 */
export interface HandOff {
  readonly workflowName: string
  readonly threadId: string
  readonly registrations: ReadonlyArray<Registration>
  /** Its own finished children's hand-offs, by execution id. */
  readonly handoffs: Readonly<Record<string, HandOff>>
}

/**
 * Why a tree unwinds, as `@baton/unwinding` keeps it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Unwinding {
  readonly reason: UndoReason
  readonly errorTag: string
  readonly message: string
  readonly at: number
}

/**
 * An undo that failed after its last try.
 *
 * @category models
 * @since 0.1.0
 */
export interface FailedUndo {
  readonly node: string
  readonly stepIdempotencyKey: string
  readonly attempts: number
  readonly error: string
}

/**
 * What an unwind did: the reason kept (the first recorded), and the undos that failed.
 *
 * @category models
 * @since 0.1.0
 */
export interface Outcome {
  readonly unwinding: Unwinding
  readonly failed: ReadonlyArray<FailedUndo>
}

/**
 * What the holder that unwinds brings: the root's record, the workflow
 * whose steps' undos run (undefined: none registered here), its lease
 * holder, its pass on this instance, and the pass's step recorder (the
 * undos' tries are noted in the execution history with its steps; none
 * without an `ExecutionHistoryStore`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Unwinder {
  readonly record: ExecutionRecord
  readonly workflow: AnyWorkflow | undefined
  readonly holder: LeaseHolder
  readonly pass: ActivePass
  readonly recorder: History.StepRecorder | undefined
}

/**
 * The unwinder of a holder's pass, with the pass's step recorder (one per
 * pass: its steps and its undos' tries share it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const unwinderOf = (options: Omit<Unwinder, "recorder">) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const tree = yield* TreeStore
    const clock = yield* Clock.Clock
    const { holder, record } = options
    const recorder = History.stepRecorder({
      services: instance.services,
      tree,
      record,
      holder: holder.lease.holder,
      epoch: holder.lease.epoch,
      instanceId: instance.instanceId,
      now: () => clock.currentTimeMillisUnsafe()
    })
    return { ...options, recorder } satisfies Unwinder as Unwinder
  })

/**
 * Writes `@baton/<name>` in tree `root` once, under the holder's lease:
 * refused locally first (no round trip), then fenced in the store's own
 * write, like a checkpoint write — a holder that lost its lease while the
 * write was under way (frozen, slow) writes nothing and stops with
 * `LeaseLostError`. Answers whether it wrote (false: the key was there).
 */
const fencedSave = (holder: LeaseHolder, tenantId: string, root: string, name: string, value: unknown) =>
  Effect.gen(function*() {
    const refused = holder.fence.refusal()
    if (refused !== undefined) return yield* Effect.fail(refused)
    const tree = yield* TreeStore
    return yield* tree.saveReservedFenced(tenantId, root, name, value, holder.lease, holder.fence.now()).pipe(
      Effect.tapError((e) => e._tag === "LeaseLostError" ? Effect.sync(() => holder.fence.lost(e)) : Effect.void)
    )
  })

/**
 * Writes the registration of step `key`'s undo (once per key), under the
 * holder's lease (see `fencedSave`).
 *
 * @category internal
 * @since 0.1.0
 */
export const register = (
  tree: TreeStoreShape,
  holder: LeaseHolder,
  record: ExecutionRecord,
  registration: Omit<Registration, "epoch" | "executionId">
): Effect.Effect<void, LeaseLostError | StoreError | InvalidInputError> =>
  Effect.gen(function*() {
    const value: Registration = { ...registration, executionId: record.executionId, epoch: holder.lease.epoch }
    yield* fencedSave(holder, record.tenantId, record.rootExecutionId, `${registrationPrefix}${registration.key}`, value)
  }).pipe(Effect.provideService(TreeStore, tree))

/** True when the workflow or one of its children declares an undo. */
const declaresUndo = (workflow: AnyWorkflow): boolean =>
  Object.values(workflow.graph.nodes as Record<string, unknown>).some((n) => NodeUndo.undoOfNode<UndoContext>(n) !== undefined) ||
  workflow.children.some(declaresUndo)

/**
 * Writes a launch's registration (once per launch id) when its children may
 * have undos: they are undone at this place of the parent's unwinding.
 *
 * @category internal
 * @since 0.1.0
 */
export const registerLaunch = (
  tree: TreeStoreShape,
  holder: LeaseHolder,
  record: ExecutionRecord,
  launch: { readonly launchId: string; readonly workflow: AnyWorkflow; readonly children: ReadonlyArray<string>; readonly seq: number; readonly at: number }
) =>
  declaresUndo(launch.workflow)
    ? register(tree, holder, record, {
      node: `launch of "${launch.workflow.name}"`,
      key: launch.launchId,
      result: null,
      seq: launch.seq,
      at: launch.at,
      kind: "launch",
      children: launch.children
    })
    : Effect.void

/** The tree's registrations and hand-offs as stored. */
const rawStateOf = (tree: TreeStoreShape, tenantId: string, rootExecutionId: string) =>
  Effect.gen(function*() {
    const list = (prefix: string) => tree.list(tenantId, rootExecutionId, `${reservedPrefix}${prefix}`)
    const registrations = (yield* list(registrationPrefix)).map((e) => e.value as Registration)
    const handoffs = Object.fromEntries(
      (yield* list(handoffPrefix)).map((e) => [e.key.slice(reservedPrefix.length + handoffPrefix.length), e.value as HandOff])
    )
    return { registrations, handoffs }
  })

/**
 * The claim on a child's hand-off, `@baton/handoff` in the child's own tree:
 * written once, by the child handing its undo state to its parent, or by
 * its unwinding parent refusing it. Whoever writes it first decides: a
 * hand-off the parent refused is undone by the child itself; one the child
 * claimed is undone by the parent, which copies it into its own tree when
 * the child's copy has not landed (see `closeHandOffs`).
 *
 * @category models
 * @since 0.1.0
 */
export type HandOffClaim =
  | { readonly handedTo: string; readonly handOff: HandOff }
  | { readonly refusedBy: string; readonly at: number }

/** The claim on the hand-off of the tree's execution, if written. */
const claimOf = (tree: TreeStoreShape, tenantId: string, rootExecutionId: string) =>
  Effect.map(tree.get(tenantId, rootExecutionId, `${reservedPrefix}${claimName}`), (v) => Option.getOrUndefined(v) as HandOffClaim | undefined)

/**
 * A finished child hands its undo state to its parent's tree (once), under
 * its own lease, before its record ends: it claims its hand-off in its own
 * tree (see `HandOffClaim`), then copies it into its parent's. True when it
 * may end Finished: it has no parent, nothing to hand over, or handed it
 * over. False when its parent ended, unwinds already or refused the
 * hand-off — nobody would undo it there: the child then undoes itself (the
 * caller ends it as cancelled).
 *
 * @category internal
 * @since 0.1.0
 */
export const handOff = (u: Unwinder) =>
  Effect.gen(function*() {
    const { record } = u
    const parentId = record.parentExecutionId
    if (parentId == null) return true
    const tree = yield* TreeStore
    const own = yield* rawStateOf(tree, record.tenantId, record.rootExecutionId)
    if (own.registrations.length === 0 && Object.keys(own.handoffs).length === 0) return true
    // A claim on record (an earlier holder of this child wrote it) decides; else this holder claims.
    const claim = (yield* claimOf(tree, record.tenantId, record.rootExecutionId)) ?? (yield* claimHandOff(u, parentId, own))
    if (claim === undefined || "refusedBy" in claim) {
      yield* Effect.logWarning(`child ${record.executionId} finished after its parent ${parentId} ended or began unwinding: it undoes itself`)
      return false
    }
    yield* copyHandOff(u, claim)
    return true
  })

/** The child claims its hand-off, unless its parent ended or unwinds already; answers the claim on record then (undefined: none, the parent is gone). */
const claimHandOff = (u: Unwinder, parentId: string, own: Pick<HandOff, "registrations" | "handoffs">) =>
  Effect.gen(function*() {
    const { record } = u
    const tree = yield* TreeStore
    const parent = yield* (yield* RecordStore).getRecord(record.tenantId, parentId)
    const live = Option.isSome(parent) && (parent.value.status === "Running" || parent.value.status === "Paused")
    // The parent's tree (a parent is the root of its own tree, as every execution is).
    const parentTree = Option.isSome(parent) ? parent.value.rootExecutionId : parentId
    if (!live || Option.isSome(yield* unwindingOf(record.tenantId, parentTree))) return undefined
    const value: HandOffClaim = { handedTo: parentTree, handOff: { workflowName: record.workflowName, threadId: record.threadId, ...own } }
    if (yield* fencedSave(u.holder, record.tenantId, record.rootExecutionId, claimName, value)) return value
    return yield* claimOf(tree, record.tenantId, record.rootExecutionId)
  })

/**
 * After a write into another execution's tree: when that execution ended
 * (before or meanwhile), its tree's keys were removed at its end, and the
 * write is all that is there — it goes too.
 */
const dropIfEnded = (tenantId: string, executionId: string, root: string) =>
  Effect.gen(function*() {
    const record = yield* (yield* RecordStore).getRecord(tenantId, executionId)
    if (Option.isNone(record) || endedStatuses.has(record.value.status)) yield* (yield* TreeStore).deleteRoot(tenantId, root)
  })

/**
 * The child's claimed hand-off, copied into its parent's tree (once: a copy
 * there is kept) while the parent has not ended: an ended parent has no use
 * for it (an unwinding one copied the claim itself before it read its
 * undos), and its tree's keys are gone — a copy that lands as it ends goes.
 */
const copyHandOff = (u: Unwinder, claim: Extract<HandOffClaim, { readonly handedTo: string }>) =>
  Effect.gen(function*() {
    const { record } = u
    const parentId = record.parentExecutionId ?? claim.handedTo
    const parent = yield* (yield* RecordStore).getRecord(record.tenantId, parentId)
    if (Option.isNone(parent) || endedStatuses.has(parent.value.status)) return
    if (yield* fencedSave(u.holder, record.tenantId, claim.handedTo, `${handoffPrefix}${record.executionId}`, claim.handOff)) {
      yield* dropIfEnded(record.tenantId, parentId, claim.handedTo)
    }
  })

/** True when the execution claimed its hand-off (see `HandOffClaim`): its copy into the parent's tree is made (again, once). */
const handedOver = (u: Unwinder) =>
  Effect.gen(function*() {
    const { record } = u
    if (record.parentExecutionId == null) return false
    const claim = yield* claimOf(yield* TreeStore, record.tenantId, record.rootExecutionId)
    if (claim === undefined || "refusedBy" in claim) return false
    yield* copyHandOff(u, claim)
    return true
  })

const endedStatuses: ReadonlySet<string> = new Set(["Finished", "Failed", "Cancelled"])

/**
 * Closes the hand-offs of the children the tree launched, under the
 * holder's lease, before the tree's undos are read: once it unwinds (after
 * `@baton/unwinding` is on record), and before a holder without its
 * workflow ends it (see `TreeDriver.endIfFree`). Each child that has not
 * handed over yet is refused (see `HandOffClaim`), or, when it claimed
 * already, its claimed hand-off is copied here. So every finished child's
 * undo is either in this tree before its undos are read, or run by the
 * child itself — never neither, never both. A child with no record has not
 * started: it will find `@baton/unwinding` (or its parent ended) and undo
 * itself. One that ended having claimed its hand-off (Finished, or
 * cancelled or failed after it claimed: see `handedOver`) copied it here
 * before it ended — the read of this tree's undos that follows finds it;
 * one that ended Failed or Cancelled without a claim undid itself.
 *
 * @category internal
 * @since 0.1.0
 */
export const closeHandOffs = (holder: LeaseHolder, record: ExecutionRecord) =>
  Effect.gen(function*() {
    const tree = yield* TreeStore
    const records = yield* RecordStore
    const { executionId, rootExecutionId, tenantId } = record
    const raw = yield* rawStateOf(tree, tenantId, rootExecutionId)
    const waiting = raw.registrations.flatMap((r) => r.kind === "launch" ? r.children ?? [] : []).filter((id) => raw.handoffs[id] === undefined)
    for (const childId of waiting) {
      const child = yield* records.getRecord(tenantId, childId)
      if (Option.isNone(child) || endedStatuses.has(child.value.status)) continue
      const childTree = child.value.rootExecutionId
      const refusal: HandOffClaim = { refusedBy: executionId, at: yield* Clock.currentTimeMillis }
      if (yield* fencedSave(holder, tenantId, childTree, claimName, refusal)) {
        yield* dropIfEnded(tenantId, childId, childTree)
        continue
      }
      const claim = yield* claimOf(tree, tenantId, childTree)
      if (claim !== undefined && "handOff" in claim) yield* fencedSave(holder, tenantId, rootExecutionId, `${handoffPrefix}${childId}`, claim.handOff)
    }
  })

const lastFirst = (a: Registration, b: Registration) => b.epoch - a.epoch || b.seq - a.seq || b.at - a.at

/**
 * The undos of registrations (sorted last finished first), each launch
 * replaced by its finished children's undos, last child first (recursively).
 */
const expand = (registrations: ReadonlyArray<Registration>, handoffs: Readonly<Record<string, HandOff>>): Array<Registration> =>
  [...registrations].sort(lastFirst).flatMap((r) =>
    r.kind !== "launch" ? [r] : [...(r.children ?? [])].reverse().flatMap((childId) => {
      const child = handoffs[childId]
      if (child === undefined) return []
      return expand(child.registrations, child.handoffs).map((e) => ({
        ...e,
        workflowName: e.workflowName ?? child.workflowName,
        threadId: e.threadId ?? child.threadId
      }))
    })
  )

/**
 * The tree's `@baton/unwinding`, if it unwinds.
 *
 * @category internal
 * @since 0.1.0
 */
export const unwindingOf = (tenantId: string, rootExecutionId: string) =>
  TreeStore.use((tree) => tree.get(tenantId, rootExecutionId, unwindingKey)).pipe(
    Effect.map(Option.map((v) => v as Unwinding))
  )

/**
 * True when the tree has undos on record that did not run yet (whoever ends it needs their workflow).
 *
 * @category internal
 * @since 0.1.0
 */
export const hasOpen = (tenantId: string, rootExecutionId: string) =>
  Effect.map(stateOf(tenantId, rootExecutionId), (s) => s.registrations.some((r) => !s.done.has(r.key) && !s.failed.has(r.key)))

/**
 * The undos on record that have not run, said for an error text (`undefined`: none) — for an
 * execution that ends without its undos (marked Failed after `maxRecoveryAttempts`): never a silent skip.
 *
 * @category internal
 * @since 0.1.0
 */
export const openSummary = (tenantId: string, rootExecutionId: string) =>
  Effect.map(stateOf(tenantId, rootExecutionId), (s) => {
    const open = s.registrations.filter((r) => !s.done.has(r.key) && !s.failed.has(r.key))
    if (open.length === 0) return undefined
    return `${open.length} undo(s) on record did not run, put them right by hand: ${open.map((r) => `step "${r.node}" (key ${r.key})`).join(", ")}`
  })

/** The tree's undos (last finished first, launches expanded into their children's), and the undos done or given up. */
const stateOf = (tenantId: string, rootExecutionId: string) =>
  Effect.gen(function*() {
    const tree = yield* TreeStore
    const list = (prefix: string) => tree.list(tenantId, rootExecutionId, `${reservedPrefix}${prefix}`)
    const raw = yield* rawStateOf(tree, tenantId, rootExecutionId)
    const registrations = expand(raw.registrations, raw.handoffs)
    const done = new Set((yield* list(compensatedPrefix)).map((e) => e.key.slice(reservedPrefix.length + compensatedPrefix.length)))
    const failed = new Map((yield* list(failedPrefix)).map((e) => [(e.value as FailedUndo).stepIdempotencyKey, e.value as FailedUndo]))
    return { registrations, done, failed, launched: raw.registrations.some((r) => r.kind === "launch") }
  })

/**
 * What `status` shows of a tree that unwinds.
 *
 * @category models
 * @since 0.1.0
 */
export interface UnwindingView {
  readonly reason: UndoReason
  readonly error: { readonly tag: string; readonly message: string }
  /** Undos on record, done, still to run, and failed after their last try. */
  readonly undos: number
  readonly compensated: number
  readonly remaining: number
  readonly failed: ReadonlyArray<FailedUndo>
}

/**
 * The unwinding of a tree as `status` shows it (None: it does not unwind).
 *
 * @category internal
 * @since 0.1.0
 */
export const view = (tenantId: string, rootExecutionId: string) =>
  Effect.gen(function*() {
    const unwinding = yield* unwindingOf(tenantId, rootExecutionId)
    if (Option.isNone(unwinding)) return Option.none<UnwindingView>()
    const s = yield* stateOf(tenantId, rootExecutionId)
    const compensated = s.registrations.filter((r) => s.done.has(r.key)).length
    return Option.some<UnwindingView>({
      reason: unwinding.value.reason,
      error: { tag: unwinding.value.errorTag, message: unwinding.value.message },
      undos: s.registrations.length,
      compensated,
      remaining: s.registrations.length - compensated - s.failed.size,
      failed: [...s.failed.values()]
    })
  })

/** The workflow named `name`: `workflow` or one of its children (recursively). */
const workflowNamed = (workflow: AnyWorkflow | undefined, name: string): AnyWorkflow | undefined => {
  if (workflow === undefined || workflow.name === name) return workflow
  for (const child of workflow.children) {
    const found = workflowNamed(child, name)
    if (found !== undefined) return found
  }
  return undefined
}

/** The undo of the registration's node, in its workflow (a child's undo: in that child workflow's graph). */
const undoFor = (workflow: AnyWorkflow | undefined, registration: Registration): UndoFunction | undefined => {
  const owner = registration.workflowName === undefined ? workflow : workflowNamed(workflow, registration.workflowName)
  return owner === undefined ? undefined : NodeUndo.undoOfNode<UndoContext>(owner.graph.nodes[registration.node])
}

/** Why the holder must stop unwinding now (its lease lost, its instance closing), if it must. */
const stopReason = (u: Unwinder, instance: InstanceShape): LeaseLostError | InstanceStoppingError | undefined => {
  const refused = u.holder.fence.refusal()
  if (refused !== undefined) return refused
  const reason = u.holder.signal.aborted ? u.holder.signal.reason : undefined
  if (reason instanceof LeaseLostError || reason instanceof InstanceStoppingError) return reason
  // A pass aborted by a cancel first keeps that reason: a close is then seen at its deadline.
  if (Deferred.isDoneUnsafe(instance.lifecycle.closeDeadline)) return new InstanceStoppingError({ instanceId: instance.instanceId })
  return undefined
}

/** Completes when the holder must stop (lease lost, instance closing); a cancel does not stop an unwind. */
const stopped = (u: Unwinder, instance: InstanceShape): Effect.Effect<never, LeaseLostError | InstanceStoppingError> =>
  Effect.raceFirst(
    Effect.raceFirst(
      Deferred.await(u.holder.lost),
      Effect.andThen(Deferred.await(instance.lifecycle.closeDeadline), Effect.fail(new InstanceStoppingError({ instanceId: instance.instanceId })))
    ),
    Effect.callback<never, LeaseLostError | InstanceStoppingError>((resume) => {
      const signal = u.holder.signal
      const check = () => {
        const r = signal.reason
        if (r instanceof LeaseLostError || r instanceof InstanceStoppingError) resume(Effect.fail(r))
      }
      if (signal.aborted) check()
      else signal.addEventListener("abort", check, { once: true })
      return Effect.sync(() => signal.removeEventListener("abort", check))
    })
  )

const checkStop = (u: Unwinder, instance: InstanceShape) =>
  Effect.suspend(() => {
    const reason = stopReason(u, instance)
    return reason === undefined ? Effect.void : Effect.fail(reason)
  })

/** The pass waits on the Clock meanwhile: a test harness sees it idle, as a pass waiting for a lease. */
const waiting = <A, E, R>(u: Unwinder, instance: InstanceShape, effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      u.pass.phase = "waiting"
      instance.passes.progressed()
    }),
    () => effect,
    () =>
      Effect.sync(() => {
        u.pass.phase = "running"
        instance.passes.progressed()
      })
  )

/** Waits until the step bodies still running have settled (a cancelled one may register yet), or the holder must stop. */
const bodiesSettled = (u: Unwinder, instance: InstanceShape) =>
  u.pass.bodies.size === 0 ? Effect.void : Effect.raceFirst(
    // Waiting (a step launching children here waits for them on the Clock): a test harness sees the pass idle.
    waiting(u, instance, Effect.promise(() => Promise.allSettled([...u.pass.bodies])).pipe(Effect.repeat({ until: () => u.pass.bodies.size === 0 }), Effect.asVoid)),
    stopped(u, instance)
  )

const messageOf = (error: unknown) => (error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error) ?? String(error))

/** A try past the undo's `compensationTimeout` (on the Clock) fails as timed out. */
const timed = <A>(undo: UndoFunction, registration: Registration, effect: Effect.Effect<A, { undoFailed: unknown }>) =>
  undo.timeoutMillis === undefined ? effect : effect.pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(undo.timeoutMillis),
      orElse: () => Effect.fail({ undoFailed: new Error(`the undo of step "${registration.node}" ran past its compensationTimeout (${undo.timeoutMillis} ms)`) })
    })
  )

/** One try of one undo (within its `compensationTimeout`), raced with the holder having to stop. */
const attempt = (u: Unwinder, instance: InstanceShape, clock: Clock.Clock, undo: UndoFunction, registration: Registration, ctx: UndoContext) =>
  Effect.raceFirst(timed(undo, registration, 
    undo._tag === "Effect"
      ? Effect.suspend(() => undo.run(registration.result, ctx)).pipe(
        // Waits of the undo on the Clock leave the pass idle for a test harness.
        Effect.provideService(Clock.Clock, StepClock.withSleep(clock, (d) => waiting(u, instance, clock.sleep(d)))),
        Effect.provideContext(instance.services),
        Effect.mapError((e) => ({ undoFailed: e })),
        Effect.catchDefect((d) => Effect.fail({ undoFailed: d }))
      )
      : Effect.callback<unknown, { undoFailed: unknown }>((resume) => {
        // Tracked like a step body: the lease is released only once it returned.
        const p = Promise.resolve().then(() => undo.run(registration.result, ctx))
        Passes.nameBody(p, `undo of ${registration.node}`, ctx.idempotencyKey)
        u.pass.bodies.add(p)
        instance.passes.progressed()
        const settled = () => {
          u.pass.bodies.delete(p)
          instance.passes.progressed()
        }
        p.then((v) => {
          settled()
          resume(Effect.succeed(v))
        }, (e) => {
          settled()
          resume(Effect.fail({ undoFailed: e }))
        })
      })),
    stopped(u, instance)
  )

/** A try noted in the execution history as a visit of the step's undo (see `History.StepRecorder`). */
const noted = <A, E>(u: Unwinder, registration: Registration, ctx: UndoContext, effect: Effect.Effect<A, E>) =>
  u.recorder === undefined ? effect : u.recorder.undo(registration.node, ctx.idempotencyKey, effect)

/**
 * With a cap on steps (`maxConcurrentSteps`), a try of an undo runs in a
 * step slot like a step, at the depth of the execution: it waits for one
 * (the pass idle meanwhile) until the holder must stop, and gives it back
 * when the try ends.
 */
const inSlot = <A, E>(u: Unwinder, instance: InstanceShape, effect: Effect.Effect<A, E>) => {
  const slots = StepSlots.fromInstance(instance)
  if (slots === undefined) return effect
  const claim: StepSlots.Claim = { closesBranch: false, depth: u.record.depth, newRoot: false }
  return Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      restore(Effect.raceFirst(waiting(u, instance, slots.take(claim)), stopped(u, instance))),
      () => Effect.ensuring(restore(effect), slots.release)
    )
  )
}

/**
 * Runs one undo: tries it up to `undoAttempts` times with a doubling
 * backoff on the Clock; marks it done, or given up. Answers the failure
 * when given up. A finished child's undo is one of these (its own
 * workflow's node, its execution and thread ids; marked in this tree).
 */
const runOne = (u: Unwinder, instance: InstanceShape, why: Unwinding, registration: Registration) =>
  Effect.gen(function*() {
    const { config } = instance
    const { record } = u
    const clock = yield* Clock.Clock
    const controller = new AbortController()
    const undo = undoFor(u.workflow, registration)
    let lastError = `no undo for node "${registration.node}" in workflow "${registration.workflowName ?? u.workflow?.name ?? record.workflowName}" on this instance`
    let attempts = 0
    if (undo !== undefined) {
      for (let n = 1; n <= config.undoAttempts; n++) {
        yield* checkStop(u, instance)
        attempts = n
        const ctx: UndoContext = {
          tenantId: record.tenantId,
          threadId: registration.threadId ?? record.threadId,
          executionId: registration.executionId,
          rootExecutionId: record.rootExecutionId,
          instanceId: instance.instanceId,
          node: registration.node,
          stepIdempotencyKey: registration.key,
          idempotencyKey: `${registration.key}:undo`,
          reason: why.reason,
          attempt: n,
          signal: controller.signal,
          leaseHeld: () => stopReason(u, instance) === undefined
        }
        const exit = yield* Effect.exit(inSlot(u, instance, noted(u, registration, ctx, attempt(u, instance, clock, undo, registration, ctx))))
        if (Exit.isSuccess(exit)) {
          // Marked by a holder that still holds the tree (else the next one runs it again, same key).
          yield* checkStop(u, instance).pipe(Effect.tapError((stop) => Effect.sync(() => controller.abort(stop))))
          yield* fencedSave(u.holder, record.tenantId, record.rootExecutionId, `${compensatedPrefix}${registration.key}`, {
            at: yield* Clock.currentTimeMillis,
            instanceId: instance.instanceId
          })
          return undefined
        }
        const failure = Cause.findErrorOption(exit.cause)
        if (Option.isNone(failure)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
        const f = failure.value
        if (f instanceof LeaseLostError || f instanceof InstanceStoppingError) {
          // The holder stops: the undo's signal says so, the next holder runs it again (same key).
          controller.abort(f)
          return yield* Effect.fail(f)
        }
        lastError = messageOf(f.undoFailed)
        yield* Effect.logWarning(`undo of step "${registration.node}" (${registration.key}) failed (try ${n} of ${config.undoAttempts}): ${lastError}`)
        if (n < config.undoAttempts) {
          const wait = Math.min(config.undoBackoffMaxMillis, config.undoBackoffMillis * 2 ** (n - 1))
          yield* Effect.raceFirst(waiting(u, instance, Effect.sleep(Duration.millis(wait))), stopped(u, instance))
        }
      }
    }
    const failed: FailedUndo = { node: registration.node, stepIdempotencyKey: registration.key, attempts, error: lastError }
    yield* checkStop(u, instance)
    yield* fencedSave(u.holder, record.tenantId, record.rootExecutionId, `${failedPrefix}${registration.key}`, failed)
    yield* Effect.logError(`undo of step "${registration.node}" (${registration.key}) failed after ${attempts} tries; the other undos go on: ${lastError}`)
    return failed
  })

/** Paused → Running under the holder's lease (a record already Running is fine; one that ended is not ours any more). */
const resumeRunning = (u: Unwinder) =>
  Effect.gen(function*() {
    const { record } = u
    const moved = yield* (yield* RecordStore).setStatusFenced({
      tenantId: record.tenantId,
      executionId: record.executionId,
      from: "Paused",
      to: "Running",
      now: yield* Clock.currentTimeMillis,
      lease: u.holder.lease
    })
    if (moved) return
    const current = yield* (yield* RecordStore).getRecord(record.tenantId, record.executionId)
    if (Option.isSome(current) && current.value.status === "Running") return
    return yield* Effect.fail(new LeaseLostError({
      tenantId: record.tenantId,
      rootExecutionId: record.rootExecutionId,
      holder: u.holder.lease.holder,
      epoch: u.holder.lease.epoch,
      reason: "the record left Paused under this holder (another holder moved it)"
    }))
  })

/**
 * Unwinds the tree under the holder's lease: once the step bodies still
 * running settled, writes `@baton/unwinding` (the first reason written is
 * kept) and runs every undo on record not yet done, last finished first,
 * skipping those marked done or given up. Stops — with `LeaseLostError` or
 * `InstanceStoppingError`, the record left Running for the next holder —
 * when the lease is lost or the instance closes; a cancel does not stop it.
 * A tree with no undo on record (nor a launch: its children's hand-offs are
 * refused first) writes nothing.
 *
 * @category internal
 * @since 0.1.0
 */
export const unwind = (u: Unwinder, why: Unwinding) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const { rootExecutionId, tenantId } = u.record
    yield* bodiesSettled(u, instance)
    // A child that handed its undos over (then was cancelled, or lost its lease before it ended): they are its
    // parent's now — the copy made sure of — and this tree runs none of them.
    const handed = yield* handedOver(u)
    const first = yield* stateOf(tenantId, rootExecutionId)
    if (handed || (first.registrations.length === 0 && !first.launched)) {
      const recorded = yield* unwindingOf(tenantId, rootExecutionId)
      return { unwinding: Option.getOrElse(recorded, () => why), failed: [] } satisfies Outcome as Outcome
    }
    yield* checkStop(u, instance)
    // A paused tree that unwinds (it was cancelled) is Running while it does: a holder stopped
    // mid-undo leaves it to the recovery sweep, which looks at Running trees.
    if (u.record.status === "Paused") yield* resumeRunning(u)
    if (!(yield* fencedSave(u.holder, tenantId, rootExecutionId, unwindingName, why))) {
      why = Option.getOrElse(yield* unwindingOf(tenantId, rootExecutionId), () => why)
    }
    // Once `unwinding` is on record: each launched child has handed its undos over, or undoes itself.
    yield* closeHandOffs(u.holder, u.record)
    const state = yield* stateOf(tenantId, rootExecutionId)
    const failed: Array<FailedUndo> = [...state.failed.values()]
    for (const registration of state.registrations) {
      if (state.done.has(registration.key) || state.failed.has(registration.key)) continue
      const given = yield* runOne(u, instance, why, registration)
      if (given !== undefined) failed.push(given)
    }
    return { unwinding: why, failed } satisfies Outcome as Outcome
  }).pipe(Effect.withSpan("Baton.unwind"))

/**
 * The reason a failed step gives an unwind.
 *
 * @category internal
 * @since 0.1.0
 */
export const failedWhy = (error: ExecutionFailedError, at: number): Unwinding => {
  const cause = error.cause as { _tag?: unknown; name?: unknown } | undefined
  const tag = typeof cause?._tag === "string" ? cause._tag : typeof cause?.name === "string" ? cause.name : "Error"
  return { reason: "Failed", errorTag: tag, message: error.error, at }
}

/**
 * The reason a cancel gives an unwind.
 *
 * @category internal
 * @since 0.1.0
 */
export const cancelledWhy = (at: number): Unwinding => ({
  reason: "Cancelled",
  errorTag: "ExecutionCancelledError",
  message: "cancelled",
  at
})

/**
 * The error an unwound execution ends Failed with: the original one, and the undos that failed.
 *
 * @category internal
 * @since 0.1.0
 */
export const failedError = (record: ExecutionRecord, outcome: Outcome, original?: ExecutionFailedError) => {
  const base = { tenantId: record.tenantId, executionId: record.executionId }
  if (outcome.failed.length === 0) return original ?? new ExecutionFailedError({ ...base, error: outcome.unwinding.message })
  const cause = new UndoFailedError({
    ...base,
    reason: outcome.unwinding.reason,
    original: outcome.unwinding.message,
    failed: outcome.failed
  })
  const list = outcome.failed.map((f) => `undo of step "${f.node}" (key ${f.stepIdempotencyKey}) failed after ${f.attempts} tries: ${f.error}`)
  return new ExecutionFailedError({ ...base, error: `${outcome.unwinding.message}; ${list.join("; ")}`, cause })
}

/**
 * Ends the unwound tree Failed under the holder's lease: history snapshot,
 * the record Running → Failed (fenced), its keys removed, the error hook
 * once. Best effort like any end: a holder stopped in between leaves the
 * tree Running with `@baton/unwinding` for the next one, which ends it.
 *
 * @category internal
 * @since 0.1.0
 */
export const endFailed = (u: Unwinder, error: ExecutionFailedError) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const records = yield* RecordStore
    const pauses = yield* PauseStore
    const tree = yield* TreeStore
    const observer = yield* Observer
    const { record } = u
    const lease = u.holder.lease
    const refused = u.holder.fence.refusal()
    if (refused !== undefined) return yield* Effect.fail(refused)
    const now = yield* Clock.currentTimeMillis
    // A pause of another branch can no longer be answered.
    for (const p of yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending", "Resolved"])) {
      yield* pauses.withdraw(record.tenantId, p.pauseId, now)
      yield* Metering.add(Metrics.pausesPending, instance.instanceId, undefined, -1)
    }
    yield* History.save(record, "Failed", error.error, lease, u.recorder)
    const moved = yield* records.setStatusFenced({
      tenantId: record.tenantId,
      executionId: record.executionId,
      from: "Running",
      to: "Failed",
      now,
      error: error.error,
      lease
    })
    if (!moved) return
    u.holder.treeEnded()
    yield* tree.deleteRoot(record.tenantId, record.rootExecutionId)
    yield* Timers.dropRows(instance, record)
    // A root of a concurrency key frees its slot: the next one of its key is admitted.
    yield* Gate.ended(instance, record)
    yield* Metering.add(Metrics.executionsEnded, instance.instanceId, { workflow: record.workflowName, status: "Failed" })
    yield* observer.onError({
      tenantId: record.tenantId,
      executionId: record.executionId,
      rootExecutionId: record.rootExecutionId,
      instanceId: instance.instanceId,
      workflowName: record.workflowName,
      error: error.error
    })
  })
