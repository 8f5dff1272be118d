/**
 * One pass over an execution tree: run its graph under a held lease until it
 * finishes, fails or rests paused — taking every decision resolved meanwhile.
 *
 * @since 0.1.0
 */
import type { ReusedKeys } from "./ReusedKeys.ts"
import * as StepClock from "../StepClock.ts"
import { Command, isInterrupted } from "@langchain/langgraph"
import { Cause, Clock, Context, Deferred, Effect, Exit, type Metric, Option, Redacted } from "effect"
import * as ModelCalls from "../evaluation/ModelCalls.ts"
import * as Cancel from "../undo/Cancel.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as Timers from "../timers/Deliver.ts"
import * as Gate from "../keyed/Gate.ts"
import type { ChildPauseOrigin } from "../../Children.ts"
import { type InvalidInputError, LeaseLostError, StoreError } from "../../../stores/Errors.ts"
import { ExecutionCancelledError, ExecutionFailedError, InstanceStoppingError, UndoFailedError } from "../../Errors.ts"
import type { ExecutionRecord, ExecutionStatus } from "../../../stores/ExecutionRecord.ts"
import { fenceKey, tenantConfigKey } from "../../../stores/Fence.ts"
import { executionKey, writeTimerKey } from "../../../checkpoint/internal/configKeys.ts"
import { IdGenerator } from "../../../stores/Ids.ts"
import { type ActivePass, type CompiledGraph, Instance, type InstanceShape } from "../Instance.ts"
import { type PassHandle, passKey } from "./pass.ts"
import * as History from "../observe/History.ts"
import * as Pseudonyms from "./Pseudonyms.ts"
import * as QuotaPermit from "../limits/QuotaPermit.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"
import { Observer, type ResumeReason } from "../../Observer.ts"
import type { Pause } from "../../../stores/Pause.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore, type RecordStoreShape } from "../../../stores/RecordStore.ts"
import * as Metering from "../observe/Metering.ts"
import * as Metrics from "../../Metrics.ts"
import * as DeclaredBudgets from "../limits/DeclaredBudgets.ts"
import type { Budget } from "../../limits/Budget.ts"
import * as TreeRoot from "../children/TreeRoot.ts"
import * as StepSlots from "../limits/StepSlots.ts"
import * as Undo from "../undo/Undo.ts"
import * as Unwind from "../undo/Unwind.ts"
import * as Tracing from "../observe/Tracing.ts"
import * as EventWriter from "../stream/EventWriter.ts"
import { reservedPrefix, TreeStore, type TreeStoreShape } from "../../../stores/TreeStore.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import * as Passes from "./Passes.ts"

/**
 * A pending pause as a caller sees it: answer it with `resume({ pauseId, decision })`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PendingPause {
  readonly pauseId: string
  readonly payload: unknown
  /**
   * Present when the pause is a child's, forwarded to its parent (see
   * `Children.ChildPauseOrigin`); answer it by its `pauseId` like any.
   *
   * @since 0.1.0
   */
  readonly child?: ChildPauseOrigin | undefined
}

/**
 * What `execute` and `resume` answer once the tree rests: its final state, or its pending pauses.
 *
 * @category models
 * @since 0.1.0
 */
export type ExecutionOutput<Output = unknown> =
  | {
    readonly _tag: "Finished"
    readonly tenantId: string
    readonly threadId: string
    readonly executionId: string
    /** The graph's final state (decoded by the workflow's output schema, when it has one). */
    readonly output: Output
  }
  | {
    readonly _tag: "Paused"
    readonly tenantId: string
    readonly threadId: string
    readonly executionId: string
    readonly pauses: ReadonlyArray<PendingPause>
  }

/**
 * The reserved tree key (under `@baton/`) that keeps a root's input until the tree ends.
 *
 * @category internal
 * @since 0.1.0
 */
export const inputKeyName = "input"

/**
 * How a pass may fail.
 *
 * @category models
 * @since 0.1.0
 */
export type PassError =
  | LeaseLostError
  | ExecutionFailedError
  | ExecutionCancelledError
  | InstanceStoppingError
  | StoreError
  | InvalidInputError

/**
 * How a pass begins: with the root's input, or by continuing from the last checkpoint.
 *
 * @category models
 * @since 0.1.0
 */
export type PassStart =
  | { readonly _tag: "Input"; readonly input: unknown }
  | { readonly _tag: "Continue"; readonly reason: ResumeReason }

interface Interrupt {
  readonly id: string
  readonly value: unknown
}

const graphConfig = (record: ExecutionRecord) => ({
  configurable: { thread_id: record.threadId, [tenantConfigKey]: record.tenantId }
})

/** The pauses a caller answers (a children wait is the runtime's: left out). */
const pendingOf = (pauses: ReadonlyArray<Pause>): ReadonlyArray<PendingPause> =>
  ChildLaunch.answerable(pauses).map((p) => ({ pauseId: p.pauseId, payload: p.payload }))

/**
 * The tree's output as it rests now (no pass needed): its pending pauses, or its final state.
 *
 * @category internal
 * @since 0.1.0
 */
export const currentOutput = Effect.fnUntraced(function*(workflow: AnyWorkflow, record: ExecutionRecord) {
  const instance = yield* Instance
  const pauses = yield* PauseStore
  const base = { tenantId: record.tenantId, threadId: record.threadId, executionId: record.executionId }
  // A cancelled tree is ExecutionCancelledError, as await reports it (a resume that found it ended, say).
  if (record.status === "Cancelled") return yield* new ExecutionCancelledError({ tenantId: record.tenantId, executionId: record.executionId })
  if (record.status === "Failed") return yield* new ExecutionFailedError({ ...base, error: record.error ?? record.status })
  if (record.status === "Finished") {
    const state = yield* Effect.promise(() => instance.compiled(workflow).getState(graphConfig(record)))
    return { _tag: "Finished", ...base, output: state.values } satisfies ExecutionOutput as ExecutionOutput
  }
  const pending = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending"])
  return { _tag: "Paused", ...base, pauses: pendingOf(pending) } satisfies ExecutionOutput as ExecutionOutput
})

interface PassOptions {
  readonly workflow: AnyWorkflow
  readonly record: ExecutionRecord
  readonly holder: LeaseHolder
  readonly pass: ActivePass
  readonly start: PassStart
  /**
   * True when the caller read the tree's cancel request after taking this
   * lease and found none (with only reads since): the pass start does not
   * read it again.
   */
  readonly cancelChecked?: boolean | undefined
  /** A fork's first-run keys (read with the tree's stops), for its steps to reuse. */
  readonly reusedKeys?: ReusedKeys | undefined
}

/** Fails with the lease loss (or the abort reason) once the holder may not write any more. */
/** A fenced write the store refused: the holder stops as on any loss of its lease. */
const lostBy = (holder: LeaseHolder) => (error: { readonly _tag: string }) =>
  Effect.sync(() => {
    if (error instanceof LeaseLostError) holder.fence.lost(error)
  })

const guardOf = (holder: LeaseHolder) =>
  Effect.suspend(() => {
    const refused = holder.fence.refusal()
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/** The execution at the top of the record's tree (a child's pseudonyms are its top's); its own when the chain is gone. */
const treeTop = (record: ExecutionRecord, records: RecordStoreShape) =>
  record.parentExecutionId === null
    ? Effect.succeed(record.rootExecutionId)
    : TreeRoot.topOf(record).pipe(
      Effect.provideService(RecordStore, records),
      Effect.map((top) => Option.isSome(top) ? top.value.executionId : record.rootExecutionId)
    )

/**
 * The pass handle its nodes reach through LangGraph's config: step bodies
 * tracked until they settle, run in a step slot when the instance caps steps,
 * Effect bodies on a clock that counts their waits as parked.
 */
const makeHandle = (
  instance: InstanceShape,
  options: PassOptions,
  clock: Clock.Clock,
  tree: TreeStoreShape,
  recorder: History.StepRecorder | undefined,
  steps: Effect.Success<ReturnType<typeof Tracing.stepRunner>>,
  continuation: { value: boolean },
  tookSlot: (() => void) | undefined,
  budgets: ReadonlyArray<Budget>,
  records: RecordStoreShape
): PassHandle => {
  const { holder, pass, record, start, workflow } = options
  const touch = () => {
    instance.passes.progressed()
  }
  // With a cap on steps, each body runs in a step slot; waiting for one counts as parked.
  const inSlot = StepSlots.passGate(instance, {
    graph: workflow.graph,
    depth: record.depth,
    newRoot: start._tag === "Input",
    continuation,
    tookSlot,
    signal: holder.signal,
    park: (delta) => {
      pass.parkedBodies += delta
      touch()
    }
  })
  const gated = <A>(node: string, step: () => Promise<A>, key?: string, graphStep?: number): Promise<A> => {
    const body = recorder === undefined || key === undefined ? step : () => recorder.around(node, key, step, graphStep)
    const p = inSlot === undefined ? body() : inSlot(node, body)
    Passes.nameBody(p, node, key)
    pass.bodies.add(p)
    touch()
    const done = () => {
      pass.bodies.delete(p)
      touch()
    }
    p.then(done, done)
    return p
  }
  const parked = (delta: number) =>
    Effect.sync(() => {
      pass.parkedBodies += delta
      touch()
    })
  let pseudonymKey: Promise<Uint8Array> | undefined
  // The order steps of this pass finished in (with the lease epoch: the order of the tree's undos).
  let undoSeq = 0
  const replay = Context.getOption(instance.services, ModelCalls.ReplaySource)
  const modelCalls = Option.isSome(replay)
    ? ModelCalls.replayer(replay.value, record)
    : ModelCalls.recorder({ services: instance.services, tree, record, holder, now: () => clock.currentTimeMillisUnsafe() })
  const bodyClock = StepClock.withSleep(clock, (d) => Effect.acquireUseRelease(parked(1), () => clock.sleep(d), () => parked(-1)))
  return {
    tenantId: record.tenantId,
    threadId: record.threadId,
    executionId: record.executionId,
    rootExecutionId: record.rootExecutionId,
    depth: record.depth,
    instanceId: instance.instanceId,
    signal: holder.signal,
    leaseHeld: () => !holder.signal.aborted && holder.fence.refusal() === undefined,
    budgets,
    reusedKeys: options.reusedKeys,
    pseudonymKey: () =>
      pseudonymKey ??= (instance.config.pseudonymKey !== undefined
        ? Promise.resolve(Pseudonyms.tenantKey(Redacted.value(instance.config.pseudonymKey), record.tenantId))
        : Effect.runPromise(Effect.flatMap(treeTop(record, records), (top) => Pseudonyms.keyOf(tree, record.tenantId, top)))).catch((e) => {
        pseudonymKey = undefined
        throw e
      }),
    // Each body in its step span, under the pass's span (see Tracing).
    runBody: (node, step, key, graphStep) => gated(node, () => steps.promise(node, step), key, graphStep),
    registerUndo: (node, key, result) =>
      Effect.runPromiseExit(
        Undo.register(tree, holder, record, { node, key, result: result ?? null, seq: ++undoSeq, at: clock.currentTimeMillisUnsafe() })
      ).then((exit) => {
        if (Exit.isSuccess(exit)) return
        const error = Cause.squash(exit.cause)
        throw (error as { _tag?: string })?._tag === "InvalidInputError"
          ? new Error(`step "${node}" has an undo, so its result must be storable as JSON: ${(error as Error).message}`)
          : error
      }),
    launch: (stepKey, n, workflow, inputs, launchOptions) =>
      ChildLaunch.launch({
        instance,
        record,
        stepKey,
        registerLaunch: (launchId, child, children) =>
          Effect.runPromise(Undo.registerLaunch(tree, holder, record, { launchId, workflow: child, children, seq: ++undoSeq, at: clock.currentTimeMillisUnsafe() })),
        park: (delta) => {
          pass.parkedBodies += delta
          touch()
        },
        yieldSlot: StepSlots.yieldSlot,
        now: () => clock.currentTimeMillisUnsafe()
      }, n, workflow as AnyWorkflow, inputs, launchOptions),
    runEffect: (node, body, key, graphStep) => {
      // Its guarded model calls are recorded with the history, or answered from the record under a replay (see ModelCalls).
      const calls = modelCalls?.(node, graphStep)
      const provided = calls === undefined ? body : Effect.provideService(body, ModelCalls.ModelCalls, calls)
      return gated(node, () => steps.effect(node, Effect.provideService(provided, Clock.Clock, bodyClock), holder.signal), key, graphStep)
    },
    now: () => clock.currentTimeMillisUnsafe(),
    timers: Timers.available(instance)
  }
}

/** What every phase of one pass works with. */
const makePass = Effect.fnUntraced(function*(options: PassOptions) {
  const { holder, record, workflow } = options
  const instance = yield* Instance
  const records = yield* RecordStore
  const pauses = yield* PauseStore
  const tree = yield* TreeStore
  const ids = yield* IdGenerator
  const observer = yield* Observer
  const clock = yield* Clock.Clock
  const graph: CompiledGraph = instance.compiled(workflow)
  const base = { tenantId: record.tenantId, threadId: record.threadId, executionId: record.executionId }
  const event = { ...base, rootExecutionId: record.rootExecutionId, instanceId: instance.instanceId, workflowName: workflow.name }
  const guard = guardOf(holder)
  /** The pass's holder as the undos run under it (see `Undo`). */
  const unwinder = yield* Undo.unwinderOf({ record, workflow, holder, pass: options.pass })
  // With an ExecutionHistoryStore, every visit (the undos' tries too) is noted in the tree (see History).
  const recorder = unwinder.recorder
  yield* Effect.annotateCurrentSpan("baton.instance", instance.instanceId)
  const steps = yield* Tracing.stepRunner(instance.services, Tracing.passAttributes(record, workflow.name, instance.instanceId, holder.lease.epoch))
  // Set when the pass continues a parent whose children ended: its first step closes that branch (slot priority).
  const continuation = { value: false }
  const budgets = yield* DeclaredBudgets.ofPass(instance, record, workflow)
  const handle = makeHandle(instance, options, clock, tree, recorder, steps, continuation, yield* StepSlots.FirstSlot, budgets, records)
  const metricsContext = yield* Effect.context<never>()
  /** Counts `metric` for this instance. */
  const count = (metric: Metric.Metric<number, unknown>, attributes?: Record<string, string>, by = 1) =>
    Metering.addUnsafe(metricsContext, metric, instance.instanceId, attributes, by)
  const graphOptions = {
    configurable: {
      ...graphConfig(record).configurable,
      [fenceKey]: holder.fence,
      [passKey]: handle,
      [writeTimerKey]: Metering.writeTimer(metricsContext, clock, instance.instanceId),
      [executionKey]: record.executionId
    },
    signal: holder.signal,
    durability: "sync" as const,
    ...(workflow.recursionLimit === undefined ? {} : { recursionLimit: workflow.recursionLimit })
  }
  const touch = () => {
    instance.passes.progressed()
  }
  // With live output on (the workflow's, else the app's option) and an EventStore, the graph runs as a stream and
  // its chunks are appended under this lease (see EventWriter).
  const live = workflow.liveOutput ?? instance.config.liveOutput ?? false
  const events = live
    ? yield* EventWriter.forPass(instance.services, { holder, record, instanceId: instance.instanceId, now: () => clock.currentTimeMillisUnsafe() })
    : undefined
  /** Ends the tree as cancelled (under this lease), its open undos run first. */
  const cancelled = Cancel.endTree(record, holder.lease, guard, unwinder).pipe(Effect.tapError(lostBy(holder)))
  return {
    ...options,
    cancelChecked: options.cancelChecked === true,
    instance,
    records,
    pauses,
    tree,
    ids,
    observer,
    graph,
    graphOptions,
    events,
    recorder,
    continuation,
    /** The root's input once this pass has it in hand (its start, or the kept one it read): the snapshot reads it no more. */
    input: { known: Option.none<Option.Option<unknown>>() },
    base,
    event,
    guard,
    unwinder,
    cancelled,
    now: () => clock.currentTimeMillisUnsafe(),
    count,
    touch,
    /** The tree ended: its keys go. */
    dropTreeKeys: Effect.andThen(
      Effect.andThen(tree.deleteRoot(record.tenantId, record.rootExecutionId), ChildLaunch.dropRows(instance, record)),
      // A root of a concurrency key frees its slot: the next one of its key is admitted.
      Effect.andThen(Timers.dropRows(instance, record), Gate.ended(instance, record))
    ),
    failure: (error: unknown) =>
      new ExecutionFailedError({ ...base, error: error instanceof Error ? error.message : String(error), cause: error }),
    /** A cancel request written by any instance ends the tree here. */
    honourCancelRequest: Effect.gen(function*() {
      if (yield* Cancel.isRequested(record.tenantId, record.rootExecutionId)) return yield* Effect.flatMap(cancelled, Effect.fail)
    })
  }
})

type Pass = Effect.Success<ReturnType<typeof makePass>>

/** What the graph is invoked with next, and the resolved pauses it feeds (taken once the invoke returns). */
interface Next {
  readonly input: unknown
  readonly sent: ReadonlyArray<Pause>
}

/** Moves the record from one of `from` to `to`; a record in none of them changed under this pass: it lost the tree. A final `to` tells the holder its tree ended. */
const setStatus = (p: Pass, from: ReadonlyArray<ExecutionStatus>, to: ExecutionStatus, error?: string) =>
  Effect.gen(function*() {
    const { holder, record } = p
    yield* p.guard
    for (const f of from) {
      const moved = yield* p.records.setStatusFenced({
        tenantId: record.tenantId,
        executionId: record.executionId,
        from: f,
        to,
        now: p.now(),
        error,
        lease: holder.lease
      }).pipe(Effect.tapError(lostBy(holder)))
      if (moved) {
        if (to === "Finished" || to === "Failed" || to === "Cancelled") holder.treeEnded()
        return
      }
    }
    return yield* Effect.fail(holder.fence.refusal() ?? new LeaseLostError({
      tenantId: record.tenantId,
      rootExecutionId: record.rootExecutionId,
      holder: holder.lease.holder,
      epoch: holder.lease.epoch,
      reason: `the record left ${from.join(" or ")} under this pass (another holder moved it)`
    }))
  })

/** Resolved pauses of the tree whose interrupts are still waiting: the decisions to feed them. */
const answersFor = (p: Pass, waiting: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const resolved = yield* p.pauses.listByRoot(p.record.tenantId, p.record.rootExecutionId, ["Resolved"])
    // Who answered, from the pause, before it is fed or taken: the resumer saves it after resolving, and may have
    // died between the two. `savePauseAnswer` keeps the first answer of a pause, so this writes it once.
    yield* Effect.forEach(resolved, (a) =>
      a.resolvedBy === null || a.resolvedAt === null ? Effect.void : p.records.savePauseAnswer({
        tenantId: a.tenantId,
        executionId: a.executionId,
        pauseId: a.pauseId,
        answeredBy: a.resolvedBy,
        answeredAt: a.resolvedAt
      }), { discard: true })
    const answered = resolved.filter((a) => waiting.has(a.interruptId))
    // A resolved pause whose interrupt is no longer waiting was fed by an earlier pass that stopped before taking it.
    for (const a of resolved) {
      if (waiting.has(a.interruptId)) continue
      yield* p.pauses.take(p.record.tenantId, a.pauseId)
      p.count(Metrics.pausesPending, undefined, -1)
    }
    return answered
  })

/** The decisions a pass takes, as `onResume` tells them (the runtime's own children waits left out). */
const decisionsOf = (sent: ReadonlyArray<Pause>) =>
  ChildLaunch.answerable(sent).map((a) => ({ pauseId: a.pauseId, decision: a.decision }))

/** The `Command` that feeds every answered pause. */
const answering = (answered: ReadonlyArray<Pause>): Next => ({
  input: new Command({ resume: Object.fromEntries(answered.map((a) => [a.interruptId, a.decision])) }),
  sent: answered
})

/**
 * Start: the root's input, or — continuing — every decision waiting for the
 * tree (a continue with none re-runs the interrupted steps, or, before any
 * checkpoint, starts again from the kept input).
 */
const startPass = Effect.fnUntraced(function*(p: Pass) {
  const { record, start } = p
  if (start._tag === "Input") {
    p.input.known = Option.some(Option.some(start.input))
    yield* p.observer.onStart(p.event)
    return { input: start.input, sent: [] } satisfies Next as Next
  }
  // The cancel request was read once the lease was taken (see `PassOptions.cancelChecked`); one written since is
  // seen at the next renewal's confirmation and before the tree may rest, as for any running pass.
  if (!p.cancelChecked) yield* p.honourCancelRequest
  const state = yield* Effect.promise(() => p.graph.getState(graphConfig(record)))
  const waiting = new Set(state.tasks.flatMap((t) => (t.interrupts ?? []).flatMap((i) => (i.id === undefined ? [] : [i.id]))))
  const sent = yield* answersFor(p, waiting)
  if (sent.some(ChildLaunch.isChildrenWait)) p.continuation.value = true
  let next: Next = sent.length > 0 ? answering(sent) : { input: null, sent: [] }
  // No checkpoint at all: the first holder died before LangGraph wrote one; start again from the kept input.
  // (getState read the checkpoint already: its snapshot has no `createdAt` exactly when the saver had none.)
  if (next.input === null && state.createdAt === undefined) {
    const kept = yield* p.tree.get(record.tenantId, record.rootExecutionId, `${reservedPrefix}${inputKeyName}`)
    p.input.known = Option.some(kept)
    if (Option.isSome(kept)) next = { input: kept.value, sent: [] }
  }
  // A record read Running under this lease stays Running: only this holder may move it, and every later write is
  // fenced — so Running→Running (a fenced transaction that changes only `updatedAt`) is skipped. Paused moves.
  if (record.status !== "Running") yield* setStatus(p, ["Paused", "Running"], "Running")
  yield* p.observer.onResume({ ...p.event, reason: start.reason, decisions: decisionsOf(sent) })
  return next
})

/** LangGraph's invoke, raced with the lease loss; what it threw, sorted into the pass's errors. */
const invoke = (p: Pass, input: unknown) =>
  Effect.raceFirst(
    Effect.callback<unknown, unknown>((resume) => {
      p.pass.phase = "invoking"
      p.touch()
      const run = p.events === undefined ? p.graph.invoke(input, p.graphOptions) : p.events.invoke(p.graph as unknown as EventWriter.StreamingGraph, input, p.graphOptions)
      run.then(
        (value) => resume(Effect.succeed(value)),
        (error) => resume(Effect.fail(error))
      )
    }).pipe(Effect.ensuring(Effect.sync(() => {
      p.pass.phase = "running"
      p.touch()
    }))),
    Deferred.await(p.holder.lost)
  ).pipe(
    Effect.catch((error): Effect.Effect<never, PassError, RecordStore | PauseStore | TreeStore | Instance> => {
      if (error instanceof LeaseLostError) return Effect.fail(error)
      // A store that failed under a write is not the execution failing: it stays Running for a retry or a recovery.
      if (error instanceof StoreError) return Effect.fail(error)
      if (p.holder.signal.aborted) {
        const reason = p.holder.signal.reason
        if (reason instanceof LeaseLostError || reason instanceof InstanceStoppingError) return Effect.fail(reason)
        if (reason instanceof ExecutionCancelledError) return Effect.flatMap(p.cancelled, Effect.fail)
        return Effect.die(reason)
      }
      return Effect.fail(p.failure(error))
    })
  )

/** Run: one invoke of the graph; a failed execution is recorded and its keys dropped, a lost lease reported. */
const runGraph = (p: Pass, next: Next) =>
  invoke(p, next.input).pipe(
    // A failed step: the open undos run (last finished first), then the tree ends Failed.
    Effect.catchTag("ExecutionFailedError", (e) =>
      // (One with an `UndoFailedError` cause is a cancel's end, already unwound.)
      e.cause instanceof UndoFailedError ? Effect.fail(e) : Effect.flatMap(
        Unwind.finish(p.unwinder, Undo.failedWhy(e, p.now()), { original: e }).pipe(Effect.tapError(lostBy(p.holder))),
        Effect.fail
      )),
    Effect.tapError((e) => e._tag === "LeaseLostError" ? p.observer.onLeaseLost({ ...p.event, reason: e.reason }) : Effect.void),
    Effect.tap(() =>
      Effect.forEach(next.sent, (a) => Effect.andThen(p.pauses.take(p.record.tenantId, a.pauseId), Effect.sync(() => p.count(Metrics.pausesPending, undefined, -1))), {
        discard: true
      })
    )
  )

/** The graph returned without an interrupt: the tree is finished. */
const finish = Effect.fnUntraced(function*(p: Pass, output: unknown) {
  yield* p.guard
  // A cancel another instance answered `cancelled: true` since the last renewal: the tree ends Cancelled, as at a rest.
  yield* p.honourCancelRequest
  // A child hands its undos to its parent first; one whose parent ended or unwinds undoes itself (see `Undo.handOff`).
  if (!(yield* Undo.handOff(p.unwinder))) return yield* Effect.flatMap(p.cancelled, Effect.fail)
  yield* History.save(p.record, "Finished", null, p.holder.lease, p.recorder, p.input.known, Option.some(output))
  yield* setStatus(p, ["Running"], "Finished")
  yield* p.dropTreeKeys
  p.count(Metrics.executionsEnded, { workflow: p.workflow.name, status: "Finished" })
  yield* p.observer.onEnd({ ...p.event, output })
  return { _tag: "Finished", ...p.base, output } as const
})

/**
 * Saves a pending pause for every new interrupt, fenced in the store by the
 * holder's lease (`PauseStore.saveFenced`: a holder that lost the tree while
 * its save was on its way is refused and stops; then drops twins, see
 * `dropTwins`), and withdraws those whose interrupt no longer waits.
 */
const savePauses = Effect.fnUntraced(function*(p: Pass, interrupts: ReadonlyArray<Interrupt>, waiting: ReadonlySet<string>) {
  const { record } = p
  const known = yield* p.pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending", "Resolved"])
  const byInterrupt = new Map(known.map((k) => [k.interruptId, k]))
  const saved = new Map<string, string>()
  for (const i of interrupts) {
    if (byInterrupt.has(i.id)) continue
    const pauseId = yield* p.ids.make("pause")
    saved.set(pauseId, i.id)
    yield* p.pauses.saveFenced({
      tenantId: record.tenantId,
      threadId: record.threadId,
      pauseId,
      rootExecutionId: record.rootExecutionId,
      executionId: record.executionId,
      interruptId: i.id,
      payload: i.value ?? null,
      status: "Pending",
      decision: null,
      createdAt: p.now(),
      resolvedAt: null,
      resolvedBy: null
    }, p.holder.lease, p.now()).pipe(
      Effect.tapError(lostBy(p.holder)),
      Effect.catchTag("InvalidInputError", (e) => Effect.fail(p.failure(new Error(`interrupt payload: ${e.message}`))))
    )
    p.count(Metrics.pausesPending)
  }
  yield* dropTwins(p, saved)
  // A pending pause whose interrupt no longer waits cannot be answered any more.
  for (const k of known) {
    if (k.status !== "Pending" || waiting.has(k.interruptId)) continue
    yield* p.pauses.withdraw(record.tenantId, k.pauseId, p.now())
    p.count(Metrics.pausesPending, undefined, -1)
  }
})

/**
 * A pause save is fenced only on a store that fences it (`PauseStore.fenced`;
 * and not by an instance of a version before fenced saves, during a rolling
 * deploy): otherwise a holder frozen before its save and thawed after a
 * takeover saves a twin of the new holder's pause of the same interrupt.
 * Each pass that saved pauses looks for another pass's pause of the same
 * interrupts: still holding the tree, it withdraws the other's (Pending
 * ones); having lost it, its own. Of two racing passes, one at least sees
 * both, so one pause is left — the one a takeover adopted, if it found the
 * stale pause saved first.
 */
const dropTwins = Effect.fnUntraced(function*(p: Pass, saved: ReadonlyMap<string, string>) {
  if (saved.size === 0) return
  const { record } = p
  const now = yield* p.pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending", "Resolved"])
  const interrupts = new Set(saved.values())
  const twins = now.filter((t) => interrupts.has(t.interruptId) && !saved.has(t.pauseId))
  if (twins.length === 0) return
  const holding = p.holder.fence.refusal() === undefined
  const twinned = new Set(twins.map((t) => t.interruptId))
  const drop = holding
    ? twins.filter((t) => t.status === "Pending").map((t) => t.pauseId)
    : [...saved].filter(([, interruptId]) => twinned.has(interruptId)).map(([pauseId]) => pauseId)
  for (const pauseId of drop) {
    if (yield* p.pauses.withdraw(record.tenantId, pauseId, p.now())) p.count(Metrics.pausesPending, undefined, -1)
  }
})

/**
 * Rest: the tree's pauses saved, it rests Paused — unless a decision landed
 * between the drain and the pauses being saved (then it goes on with it).
 */
const rest = Effect.fnUntraced(function*(p: Pass, interrupts: ReadonlyArray<Interrupt>, waiting: ReadonlySet<string>) {
  yield* p.guard
  yield* savePauses(p, interrupts, waiting)
  // Children that all ended before their wait was saved: their finisher found no pause to answer.
  yield* ChildLaunch.answerEndedWaits(p.instance, p.pauses, p.record, p.now())
  // Sleeps and signal waits: each gets its timer; one due already (a signal sent before it) is answered here.
  yield* Timers.armWaits(p.instance, p.pauses, p.record, p.now())
  const late = yield* answersFor(p, waiting)
  if (late.length > 0) return answering(late)
  yield* p.honourCancelRequest
  if (p.recorder !== undefined) yield* p.recorder.flush
  yield* setStatus(p, ["Running"], "Paused")
  const pending = yield* p.pauses.listByRoot(p.record.tenantId, p.record.rootExecutionId, ["Pending"])
  yield* p.observer.onPause({ ...p.event, pauseIds: pending.map((a) => a.pauseId) })
  return { _tag: "Paused", ...p.base, pauses: pendingOf(pending) } as const
})

/**
 * Runs the tree's graph under `holder` until it finishes, fails or rests
 * paused, in phases: start, run, drain (decisions resolved while it ran are
 * taken before it may rest), rest. Loses no decision. On a lost lease it
 * fails with `LeaseLostError` and writes nothing more (the record stays
 * Running for the new holder).
 *
 * @category internal
 * @since 0.1.0
 */
export const runPass = Effect.fnUntraced(function*(
  options: PassOptions
): Effect.fn.Return<ExecutionOutput, PassError, Instance | RecordStore | PauseStore | TreeStore | IdGenerator> {
  const p = yield* makePass(options)
  // With a tenant quota, the pass runs holding one of its tenant's permits (waiting for one first).
  return yield* QuotaPermit.during(p, p.events === undefined ? phases(p) : streamed(p, p.events))
}, (effect, options) =>
  Effect.annotateLogs(effect, {
    executionId: options.record.executionId,
    tenantId: options.record.tenantId,
    holder: options.holder.lease.holder
  }).pipe(
    Effect.withSpan("baton.pass", {
      attributes: {
        ...Tracing.passAttributes(options.record, options.workflow.name, "", options.holder.lease.epoch),
        "baton.start": options.start._tag === "Input" ? "Input" : options.start.reason
      }
    })
  ))

/** The phases with the pass's status events around them; every event appended before the pass ends (and its lease goes). */
const streamed = (p: Pass, events: EventWriter.EventWriter) =>
  Effect.sync(() => events.status("Running")).pipe(
    Effect.andThen(phases(p)),
    Effect.tap((out) =>
      Effect.sync(() =>
        out._tag === "Finished" ? events.status("Finished") : events.status("Paused", { pauseIds: out.pauses.map((x) => x.pauseId) })
      )
    ),
    Effect.tapError((e) =>
      Effect.sync(() => {
        if (e._tag === "ExecutionFailedError") events.status("Failed", { error: e.error })
        if (e._tag === "ExecutionCancelledError") events.status("Cancelled")
      })
    ),
    // An interrupted pass (close, a lost instance) does not wait for its appends: its store calls may never answer.
    Effect.onExit((exit) => Exit.hasInterrupts(exit) ? events.abandon : events.close)
  )

/** The phases of one pass: start, then run / drain / rest until it finishes or rests. */
const phases = Effect.fnUntraced(function*(p: Pass) {
  let next = yield* startPass(p)
  while (true) {
    const result = yield* runGraph(p, next)
    if (!isInterrupted(result)) return yield* finish(p, result)
    const interrupts = (result as { __interrupt__: ReadonlyArray<Interrupt> }).__interrupt__
    const waiting = new Set(interrupts.map((i) => i.id))
    // The drain: decisions resolved while this pass ran are taken before the tree may rest.
    const answered = yield* answersFor(p, waiting)
    if (answered.length > 0) {
      next = answering(answered)
      yield* p.observer.onResume({ ...p.event, reason: "Answered", decisions: decisionsOf(answered) })
      continue
    }
    const rested = yield* rest(p, interrupts, waiting)
    if ("_tag" in rested) return rested
    next = rested
  }
})
