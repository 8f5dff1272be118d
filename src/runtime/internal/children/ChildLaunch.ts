/**
 * Launching child executions from a step, the step's side.
 *
 * A step launches a batch of children of a declared child workflow. Each
 * child is an execution of its own: its own record (a root of its own tree,
 * with `parentExecutionId` and `depth` saying where it sits), its own thread,
 * its own lease and fenced checkpoints. Their ids come from the launching
 * step's idempotency key, so the step run again (after a takeover, or when
 * the parent wakes) finds the same children and launches nothing twice.
 *
 * - Placement `"any"`: the children are queued in the `ChildQueueStore`; any
 *   instance with free step slots claims them (see `ChildWorker`). Unless
 *   they have all ended already, the step calls LangGraph's `interrupt` with
 *   a children marker: the parent checkpoints, releases its lease and its
 *   slot, and rests Paused with a pause only the runtime answers. Whoever
 *   ends the last child resolves that pause and continues the parent, which
 *   runs the step again: now every child has ended, and the step gets their
 *   outputs in launch order (or `ChildExecutionsFailedError`).
 * - Placement `"parent"` (default): the children run on this instance,
 *   concurrently, inside the step, which gives back its step slot while it
 *   waits (and takes one again first among waiters, as a step closing a
 *   branch). A child that rests at a pause makes the step rest too, on a
 *   paused-children wait (see `ChildWaits`, `ChildPauses`).
 *
 * @since 0.1.0
 */
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons"
import { interrupt } from "@langchain/langgraph"
import { Clock, Context, Effect, Option } from "effect"
import type { ChildOutcome, ChildQueueStoreShape, QueuedChild } from "../../../stores/ChildQueueStore.ts"
import { ChildQueueStore } from "../../../stores/ChildQueueStore.ts"
import { InvalidInputError, type StoreError } from "../../../stores/Errors.ts"
import { type AwaitTimeoutError, type UnknownExecutionError, UnknownWorkflowError } from "../../Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { Pause } from "../../../stores/Pause.ts"
import { PauseStore, type PauseStoreShape } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as V from "../../../stores/internal/validate.ts"
import { type ChildFailure, ChildExecutionsFailedError, type ChildrenWait, type LaunchOptions, launchIdOf } from "../../Children.ts"

export type { ChildrenWait } from "../../Children.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import * as Workflow from "../../Workflow.ts"
import * as ChildConfig from "./ChildConfig.ts"
import * as Waits from "../timers/Waits.ts"
import * as ChildWaits from "./ChildWaits.ts"
import { pausedMarker, waitMarker, waitOf } from "./ChildWaits.ts"
import type { InstanceShape } from "../Instance.ts"

export { waitMarker, waitOf } from "./ChildWaits.ts"

/**
 * True for a pause only the runtime answers: a children wait of either placement.
 *
 * @category internal
 * @since 0.1.0
 */
export const isChildrenWait = (pause: { readonly payload: unknown }): boolean => ChildWaits.isRuntimeWait(pause)

/**
 * What runs one child to its end (its record made if new, else continued
 * from its last checkpoint under its own lease). Bound by the runtime.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildSpec {
  readonly tenantId: string
  readonly executionId: string
  readonly threadId: string
  readonly parentExecutionId: string
  readonly depth: number
  readonly workflowName: string
  readonly input: unknown
}

/**
 * A child's end: its outcome and the value kept with it (the output, or the error's tag and message).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildEnd {
  readonly outcome: ChildOutcome
  readonly result: unknown
}

/**
 * The instance's child machinery, as the step side reaches it (through the
 * instance's services): running a child here, and telling the claim loop
 * that children were queued.
 *
 * @category services
 * @since 0.1.0
 */
export class ChildRunner extends Context.Service<ChildRunner, {
  /** Runs a child here to its end; `undefined` when it was left to another holder (lease lost, instance stopping). */
  readonly run: (spec: ChildSpec) => Effect.Effect<ChildEnd | undefined>
  /** Children of `launchId` were queued in this process: claim now, and tell the other instances (NOTIFY on Postgres). */
  readonly queued: (tenantId: string, launchId: string) => void
}>()("baton/ChildRunner") {}

/** What the pass tells a launch about the step that launches. */
export interface LaunchSite {
  readonly instance: InstanceShape
  readonly record: ExecutionRecord
  /** The step's idempotency key: the same on every run of the step. */
  readonly stepKey: string
  /** Records the launch among the parent's undos (once per launch id, under the parent's fence; see `Undo.registerLaunch`). */
  readonly registerLaunch: (launchId: string, workflow: AnyWorkflow, children: ReadonlyArray<string>) => Promise<void>
  /** Counts the step as parked while it waits (a harness sees it idle). */
  readonly park: (delta: number) => void
  /** Gives the step's slot back while `wait` runs; takes one again (first among waiters) after. */
  readonly yieldSlot: <A>(wait: () => Promise<A>) => Promise<A>
  readonly now: () => number
}

/** The execution (and thread) id of the child at `position` of a launch. */
export const childIdOf = (launchId: string, position: number): string => `${launchId}.${position}`

/** The registered workflow a step of `parent` launches; refused, saying to declare it in the parent's `children`, when there is none. */
const registeredChild = (instance: InstanceShape, parent: string, workflow: AnyWorkflow) => {
  const registered = instance.config.workflows.get(workflow?.name)
  if (registered === undefined) throw new UnknownWorkflowError({ workflowName: String(workflow?.name), launchedBy: parent })
  if (registered.configHash !== workflow.configHash) {
    throw new UnknownWorkflowError({ workflowName: workflow.name, configHash: workflow.configHash, registeredHash: registered.configHash, launchedBy: parent })
  }
  return registered
}

/** Each input decoded by the child's input schema and checked storable, before anything is queued. */
const checkedInputs = (workflow: AnyWorkflow, inputs: ReadonlyArray<unknown>) =>
  Effect.forEach(inputs, (input, i) =>
    Workflow.decode(workflow, "input", input, "launch").pipe(
      Effect.flatMap((decoded) => Effect.as(V.json("launch", `inputs[${i}]`, decoded ?? null), decoded ?? null))
    ))

/** What a step is told of a child that paused: why it failed, and what to do. */
const pausedMessage = (executionId: string) =>
  `the child rests at a pause (interrupt()), and a launched child may not pause: its parent does not wait for an answer. ` +
  `Ask the question in the parent before launching (pass the answer in the child's input), or let the child's step decide without interrupt(). ` +
  `The child stays Paused on thread ${executionId}: cancel that thread, or resume it if its result still matters elsewhere.`

/** The children's outputs in launch order, or the typed failure naming each child that did not finish. */
const collect = (launchId: string, workflow: AnyWorkflow, ends: ReadonlyArray<{ readonly executionId: string; readonly end: ChildEnd }>) => {
  const failures: Array<ChildFailure> = []
  const outputs: Array<unknown> = []
  ends.forEach(({ end, executionId }, position) => {
    if (end.outcome === "Answered") outputs.push(end.result)
    else {
      const r = (end.result ?? {}) as { tag?: unknown; message?: unknown }
      failures.push({
        executionId,
        position,
        tag: typeof r.tag === "string" ? r.tag : end.outcome === "Paused" ? "ChildPausedError" : "Error",
        message: typeof r.message === "string" ? r.message : end.outcome === "Paused" ? pausedMessage(executionId) : String(end.result)
      })
    }
  })
  if (failures.length > 0) throw new ChildExecutionsFailedError({ launchId, workflowName: workflow.name, failures })
  return outputs
}

const queueOf = (instance: InstanceShape): ChildQueueStoreShape => {
  const queue = Option.getOrUndefined(Context.getOption(instance.services, ChildQueueStore))
  if (queue === undefined) {
    throw new InvalidInputError({
      operation: "launch",
      field: "placement",
      reason: "\"any\" needs a ChildQueueStore shared by the instances: provide one (MemoryStores, SqliteStores or PgStores bundle it)"
    })
  }
  return queue
}

const runnerOf = (instance: InstanceShape) => Context.get(instance.services, ChildRunner)

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

/** Queues the launch's children not queued yet (a re-run finds them all queued) and answers every row, by position. */
const enqueue = (site: LaunchSite, queue: ChildQueueStoreShape, launchId: string, workflow: AnyWorkflow, inputs: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const { record } = site
    const known = yield* queue.listLaunch(record.tenantId, launchId)
    if (known.length === inputs.length) return known
    const have = new Set(known.map((k) => k.position ?? 0))
    const queuedAt = site.now()
    for (let position = 0; position < inputs.length; position++) {
      if (have.has(position)) continue
      const executionId = childIdOf(launchId, position)
      yield* queue.saveIfAbsent({
        tenantId: record.tenantId,
        executionId,
        rootExecutionId: record.rootExecutionId,
        parentExecutionId: record.executionId,
        threadId: executionId,
        depth: record.depth + 1,
        workflowName: workflow.name,
        configHash: workflow.configHash,
        input: inputs[position],
        status: "Queued",
        claimedBy: null,
        queuedAt,
        claimExpiresAt: null,
        result: null,
        launchId,
        position
      } satisfies QueuedChild)
    }
    runnerOf(site.instance).queued(record.tenantId, launchId)
    return yield* queue.listLaunch(record.tenantId, launchId)
  })

/**
 * A child row that will not move again: it finished or failed (one resting
 * Paused goes on once its pause is answered; its parent waits for it).
 *
 * @category internal
 * @since 0.1.0
 */
export const settled = (row: QueuedChild) => row.status === "Answered" || row.status === "Failed"

/** Placement "any": queue, then answer the outputs if every child ended, else rest the parent until they have. */
const launchAnywhere = async (site: LaunchSite, launchId: string, workflow: AnyWorkflow, inputs: ReadonlyArray<unknown>) => {
  const queue = queueOf(site.instance)
  let rows = await run(enqueue(site, queue, launchId, workflow, inputs))
  const wait: ChildrenWait = { launchId, workflowName: workflow.name, children: inputs.length }
  while (!rows.every(settled)) {
    // Rest: LangGraph checkpoints the parent and the pass lets the tree rest paused on this marker (see
    // `Executor`). The runtime answers it once every child ended; the step then runs again from its start.
    interrupt({ [waitMarker]: wait })
    rows = await run(queue.listLaunch(site.record.tenantId, launchId))
  }
  return collect(launchId, workflow, rows.map((r) => ({ executionId: r.executionId, end: { outcome: r.status as ChildOutcome, result: r.result } })))
}

/**
 * Runs `f` with the step's LangGraph context kept but for its `configurable`
 * (the parent graph's task, checkpoint namespace and reads): a child's graph
 * invoked inside the step is then a graph of its own, not the parent's
 * subgraph — it checkpoints on its own thread and rests at an `interrupt()`
 * like any tree, instead of throwing it into the parent's step. The rest of
 * the context (the step's abort signal, callbacks) is shared as before.
 */
const outsideParentGraph = <A>(f: (signal: AbortSignal | undefined) => Promise<A>): Promise<A> => {
  const implicit = AsyncLocalStorageProviderSingleton.getRunnableConfig() as Record<string, unknown> | undefined
  if (implicit === undefined) return f(undefined)
  const { configurable: _, ...rest } = implicit
  return AsyncLocalStorageProviderSingleton.runWithConfig(rest, () => f(stopSignal(implicit.signal)))
}

/**
 * What stops the children a step runs inline: the step's pass ending
 * without a cancel (its caller went away, the instance stops, the lease was
 * lost) interrupts them — they stay Running for whoever continues the
 * parent. A cancel is left to the children themselves: they share the
 * step's abort signal through LangGraph's context and unwind.
 */
const stopSignal = (signal: unknown): AbortSignal | undefined => {
  if (!(signal instanceof AbortSignal)) return undefined
  const stop = new AbortController()
  const onAbort = () => {
    if ((signal.reason as { _tag?: unknown } | undefined)?._tag !== "ExecutionCancelledError") stop.abort(signal.reason)
  }
  if (signal.aborted) onAbort()
  else signal.addEventListener("abort", onAbort, { once: true })
  return stop.signal
}

/** Placement "parent": the children run here, concurrently, while the step waits without its slot. */
const launchHere = async (site: LaunchSite, launchId: string, workflow: AnyWorkflow, inputs: ReadonlyArray<unknown>) => {
  const runner = runnerOf(site.instance)
  const { record } = site
  const specs = inputs.map((input, position): ChildSpec => ({
    tenantId: record.tenantId,
    executionId: childIdOf(launchId, position),
    threadId: childIdOf(launchId, position),
    parentExecutionId: record.executionId,
    depth: record.depth + 1,
    workflowName: workflow.name,
    input
  }))
  const runAll = async (): Promise<ReadonlyArray<ChildEnd>> => {
    site.park(1)
    let ends: ReadonlyArray<ChildEnd | undefined>
    try {
      // The children run in the instance's own set (see Runtime): a closing or killed instance stops them.
      ends = await site.yieldSlot(() =>
        outsideParentGraph((signal) =>
          Effect.runPromise(Effect.forEach(specs, runner.run, { concurrency: ChildConfig.inlineChildren(site.instance.config) }), { signal })
        )
      )
    } finally {
      site.park(-1)
    }
    const lost = ends.findIndex((e) => e === undefined)
    if (lost >= 0) throw new Error(`child ${specs[lost].executionId} was left to another holder; the step runs again when the parent continues`)
    return ends as ReadonlyArray<ChildEnd>
  }
  let ends = await runAll()
  while (ends.some((e) => e.outcome === "Paused")) {
    // A child rests at a pause: the parent rests too (checkpointed, its lease released) on a wait the runtime
    // answers once a resting child may go on; the step then runs again and its children continue here.
    const children = specs.filter((_, i) => ends[i].outcome === "Paused").map((s) => s.executionId)
    interrupt({ [pausedMarker]: { launchId, workflowName: workflow.name, children } satisfies ChildWaits.PausedChildrenWait })
    ends = await runAll()
  }
  return collect(launchId, workflow, ends.map((end, i) => ({ executionId: specs[i].executionId, end })))
}

/**
 * Launches `inputs.length` children of `workflow` from the step at `site`
 * (its `n`th launch) and answers their outputs in launch order.
 *
 * @category internal
 * @since 0.1.0
 */
export const launch = async (
  site: LaunchSite,
  n: number,
  workflow: AnyWorkflow,
  inputs: ReadonlyArray<unknown>,
  options?: LaunchOptions
): Promise<ReadonlyArray<unknown>> => {
  const registered = registeredChild(site.instance, site.record.workflowName, workflow)
  if (!Array.isArray(inputs)) throw new InvalidInputError({ operation: "launch", field: "inputs", reason: "must be an array of child inputs" })
  const placement = options?.placement ?? "parent"
  if (placement !== "parent" && placement !== "any") {
    throw new InvalidInputError({ operation: "launch", field: "placement", reason: `must be "parent" or "any" (got ${String(placement)})` })
  }
  const decoded = await Effect.runPromise(checkedInputs(registered, inputs))
  const launchId = launchIdOf(site.record.tenantId, site.record.executionId, site.stepKey, n)
  if (decoded.length === 0) return []
  // Before any child exists: a parent that unwinds undoes the children that finished at this place.
  await site.registerLaunch(launchId, registered, decoded.map((_, position) => childIdOf(launchId, position)))
  return placement === "any"
    ? launchAnywhere(site, launchId, registered, decoded)
    : launchHere(site, launchId, registered, decoded)
}

/**
 * Before a tree rests: a children-wait pause whose children all ended
 * meanwhile (the last one ended before the pause was saved, so its finisher
 * found nothing to answer) is answered here, and the pass goes on.
 *
 * @category internal
 * @since 0.1.0
 */
export const answerEndedWaits = Effect.fnUntraced(function*(instance: InstanceShape, pauses: PauseStoreShape, record: ExecutionRecord, now: number) {
  const pending = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending"])
  if (!pending.some(isChildrenWait)) return
  const queue = Option.getOrUndefined(Context.getOption(instance.services, ChildQueueStore))
  if (queue === undefined && pending.some((p) => waitOf(p.payload) !== undefined)) return
  for (const pause of pending) {
    const paused = ChildWaits.pausedWaitOf(pause.payload)
    // An inline child answered before this wait was saved: its resume found no wait to answer.
    if (paused !== undefined) {
      for (const id of paused.children) {
        if (!(yield* ChildWaits.mayGoOn(record.tenantId, id))) continue
        yield* answerWait(pauses, pause, instance.instanceId, now)
        break
      }
      continue
    }
    const wait = waitOf(pause.payload)
    if (wait === undefined) continue
    if (queue === undefined || !(yield* queue.listLaunch(record.tenantId, wait.launchId)).every(settled)) continue
    yield* answerWait(pauses, pause, instance.instanceId, now)
  }
})

/**
 * Answers a children-wait pause (once: a second answer is a no-op).
 *
 * @category internal
 * @since 0.1.0
 */
export const answerWait = (pauses: PauseStoreShape, pause: Pause, instanceId: string, now: number) =>
  pauses.resolve({ tenantId: pause.tenantId, pauseId: pause.pauseId, decision: { childrenEnded: true }, resolvedBy: instanceId, now }).pipe(
    Effect.asVoid,
    // Answered already (by another finisher, or the resting holder): nothing to do.
    Effect.catchTags({ NotPausedError: () => Effect.void, UnknownPauseError: () => Effect.void })
  )

/**
 * The pauses a caller may answer: children waits left out.
 *
 * @category internal
 * @since 0.1.0
 */
export const answerable = <P extends { readonly payload: unknown }>(pauses: ReadonlyArray<P>): ReadonlyArray<P> =>
  pauses.filter((p) => !isChildrenWait(p) && !Waits.isTimerWait(p))

/**
 * Clock time for a launch site.
 *
 * @category internal
 * @since 0.1.0
 */
export const nowOf = (clock: Clock.Clock) => () => clock.currentTimeMillisUnsafe()

/**
 * True when the record rests Paused with nothing but children waits
 * pending and no child below it resting at a pause a caller may answer:
 * the runtime continues it.
 *
 * @category internal
 * @since 0.1.0
 */
export const restsOnChildren = (record: ExecutionRecord) => ChildWaits.restsOnlyOnChildren(record)

/**
 * An output handed to a caller: a tree resting only on its children is not
 * handed back paused — the call waits (with `awaitOutput`) until it finishes,
 * fails or pauses for a caller. A paused output lists the pauses of its
 * resting children too (see `ChildWaits.withForwarded`).
 *
 * @category internal
 * @since 0.1.0
 */
export const untilNotOnChildren = <A extends { readonly _tag: string; readonly executionId: string; readonly tenantId: string }, E2, R2>(
  out: A,
  awaitOutput: () => Effect.Effect<A, E2, R2>
): Effect.Effect<A, Exclude<E2, UnknownExecutionError | AwaitTimeoutError> | StoreError | InvalidInputError, R2 | PauseStore | RecordStore> =>
  out._tag !== "Paused"
    ? Effect.succeed(out)
    : Effect.gen(function*() {
      const record = yield* (yield* RecordStore).getRecord(out.tenantId, out.executionId)
      if (Option.isNone(record)) return out
      if (!(yield* restsOnChildren(record.value))) return yield* ChildWaits.withForwarded(out, record.value)
      // The record was just read and no timeout is given: neither error can happen here.
      return yield* awaitOutput().pipe(
        Effect.catchIf(
          (e): e is Extract<E2, UnknownExecutionError | AwaitTimeoutError> =>
            (e as { _tag?: unknown })?._tag === "UnknownExecutionError" || (e as { _tag?: unknown })?._tag === "AwaitTimeoutError",
          Effect.die
        )
      ) as Effect.Effect<A, Exclude<E2, UnknownExecutionError | AwaitTimeoutError>, R2>
    })

/**
 * The result kept with a child that never started because its parent was cancelled.
 *
 * @category internal
 * @since 0.1.0
 */
export const cancelledBeforeStart = (parentExecutionId: string) => ({
  tag: "ExecutionCancelledError",
  message: `its parent ${parentExecutionId} was cancelled before it started`
})

/**
 * A tree ends cancelled: its children that have not started never will
 * (their rows end Failed), and each running child of a launch it waits on
 * gets a durable cancel request (`request`), which that child's holder reads
 * after its next confirmed renewal — the child ends cancelled and its row
 * Failed. A queued child resting at a pause gets one too and goes back to
 * the queue (its claimer ends it); an inline one resting at a pause gets one
 * (the recovery sweep ends it).
 *
 * @category internal
 * @since 0.1.0
 */
export const cancelChildren = Effect.fnUntraced(function*(
  instance: InstanceShape,
  pauses: PauseStoreShape,
  record: ExecutionRecord,
  request: (childExecutionId: string) => Effect.Effect<unknown, StoreError | InvalidInputError>
) {
  const queue = Option.getOrUndefined(Context.getOption(instance.services, ChildQueueStore))
  const { rootExecutionId, tenantId } = record
  if (queue !== undefined) yield* queue.failQueued(tenantId, rootExecutionId, cancelledBeforeStart(record.executionId))
  for (const pause of yield* pauses.listByRoot(tenantId, rootExecutionId, ["Pending", "Resolved"])) {
    // Inline children resting at a pause: each gets a request; the recovery sweep ends such a resting tree.
    const paused = ChildWaits.pausedWaitOf(pause.payload)
    for (const id of paused?.children ?? []) yield* request(id)
    const wait = waitOf(pause.payload)
    if (wait === undefined || queue === undefined) continue
    for (const row of yield* queue.listLaunch(tenantId, wait.launchId)) {
      if (row.status === "Running") yield* request(row.executionId)
      // A queued child resting at a pause: asked to stop, and handed back to the queue — its claimer ends it
      // cancelled (its own children with it) and its row Failed.
      if (row.status === "Paused") {
        yield* request(row.executionId)
        if (yield* queue.requeuePaused(tenantId, row.executionId)) runnerOf(instance).queued(tenantId, wait.launchId)
      }
    }
  }
})

/**
 * The tree finished or failed: the queue rows of the children it launched
 * (all ended by then) go with it (read `Children.launched` before then — an
 * undo of the tree runs before it ends). A cancelled tree keeps them: its
 * running children are still ended by whoever claims them.
 *
 * @category internal
 * @since 0.1.0
 */
export const dropRows = (instance: InstanceShape, record: ExecutionRecord) => {
  const queue = Option.getOrUndefined(Context.getOption(instance.services, ChildQueueStore))
  return queue === undefined ? Effect.void : Effect.asVoid(queue.deleteRoot(record.tenantId, record.rootExecutionId))
}
