/**
 * One pass over an execution tree: run its graph under a held lease until it
 * finishes, fails or rests paused — taking every decision resolved meanwhile.
 *
 * @since 0.1.0
 */
import { Command, isInterrupted } from "@langchain/langgraph"
import { Cause, Clock, Deferred, Effect, Exit, Option } from "effect"
import * as Cancel from "./Cancel.ts"
import {
  ExecutionCancelledError,
  ExecutionFailedError,
  InstanceStoppingError,
  type InvalidInputError,
  LeaseLostError,
  StoreError
} from "../../stores/Errors.ts"
import type { ExecutionRecord, ExecutionStatus } from "../../stores/ExecutionRecord.ts"
import { fenceKey, tenantKey } from "../../stores/Fence.ts"
import { IdGenerator } from "../../stores/Ids.ts"
import { type ActivePass, type CompiledGraph, Instance } from "./Instance.ts"
import { type PassHandle, passKey } from "./pass.ts"
import type { LeaseHolder } from "./LeaseHolder.ts"
import { Observer, type ResumeReason } from "../Observer.ts"
import type { Pause } from "../../stores/Pause.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import * as StepSlots from "./StepSlots.ts"
import { reservedPrefix, TreeStore } from "../../stores/TreeStore.ts"
import type { AnyWorkflow } from "../Workflow.ts"

/** A pending pause as a caller sees it: answer it with `resume({ pauseId, decision })`. */
export interface PendingPause {
  readonly pauseId: string
  readonly payload: unknown
}

export type ExecutionOutput =
  | {
    readonly _tag: "Finished"
    readonly tenantId: string
    readonly threadId: string
    readonly executionId: string
    /** The graph's final state. */
    readonly output: unknown
  }
  | {
    readonly _tag: "Paused"
    readonly tenantId: string
    readonly threadId: string
    readonly executionId: string
    readonly pauses: ReadonlyArray<PendingPause>
  }

/** The reserved tree key (under `@baton/`) that keeps a root's input until the tree ends. */
export const inputKeyName = "input"

export type PassError =
  | LeaseLostError
  | ExecutionFailedError
  | ExecutionCancelledError
  | InstanceStoppingError
  | StoreError
  | InvalidInputError

/** How a pass begins: with the root's input, or by continuing from the last checkpoint. */
export type PassStart =
  | { readonly _tag: "Input"; readonly input: unknown }
  | { readonly _tag: "Continue"; readonly reason: ResumeReason }

interface Interrupt {
  readonly id: string
  readonly value: unknown
}

const graphConfig = (record: ExecutionRecord) => ({
  configurable: { thread_id: record.threadId, [tenantKey]: record.tenantId }
})

const pendingOf = (pauses: ReadonlyArray<Pause>): ReadonlyArray<PendingPause> =>
  pauses.map((p) => ({ pauseId: p.pauseId, payload: p.payload }))

/** The tree's output as it rests now (no pass needed): its pending pauses, or its final state. */
export const currentOutput = Effect.fnUntraced(function*(workflow: AnyWorkflow, record: ExecutionRecord) {
  const instance = yield* Instance
  const pauses = yield* PauseStore
  const base = { tenantId: record.tenantId, threadId: record.threadId, executionId: record.executionId }
  if (record.status === "Failed" || record.status === "Cancelled") {
    return yield* new ExecutionFailedError({ ...base, error: record.error ?? record.status })
  }
  if (record.status === "Finished") {
    const state = yield* Effect.promise(() => instance.compiled(workflow).getState(graphConfig(record)))
    return { _tag: "Finished", ...base, output: state.values } satisfies ExecutionOutput as ExecutionOutput
  }
  const pending = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending"])
  return { _tag: "Paused", ...base, pauses: pendingOf(pending) } satisfies ExecutionOutput as ExecutionOutput
})

/**
 * Runs the tree's graph under `holder` until it finishes, fails or rests
 * paused. Loses no decision: before resting it takes every pause resolved
 * meanwhile. On a lost lease it fails with `LeaseLostError` and writes
 * nothing more (the record stays Running for the new holder).
 */
export const runPass = Effect.fnUntraced(function*(options: {
  readonly workflow: AnyWorkflow
  readonly record: ExecutionRecord
  readonly holder: LeaseHolder
  readonly pass: ActivePass
  readonly start: PassStart
}): Effect.fn.Return<ExecutionOutput, PassError, Instance | RecordStore | PauseStore | TreeStore | IdGenerator> {
  const { holder, pass, record, start, workflow } = options
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
  const now = () => clock.currentTimeMillisUnsafe()
  const touch = () => {
    instance.activity.count++
  }

  /** Fails with the lease loss (or the abort reason) once the holder may not write any more. */
  const guard = Effect.suspend(() => {
    const refused = holder.fence.refusal()
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

  // With a cap on steps, each body runs in a step slot; waiting for one counts as parked.
  const inSlot = StepSlots.passGate(instance, {
    graph: workflow.graph,
    depth: record.depth,
    newRoot: start._tag === "Input",
    signal: holder.signal,
    park: (delta) => {
      pass.parkedBodies += delta
      touch()
    }
  })
  const runBody = <A>(node: string, body: () => Promise<A>): Promise<A> => {
    const p = inSlot === undefined ? body() : inSlot(node, body)
    pass.bodies.add(p)
    touch()
    const done = () => {
      pass.bodies.delete(p)
      touch()
    }
    p.then(done, done)
    return p
  }
  const bodyClock: Clock.Clock = {
    ...clock,
    sleep: (d) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          pass.parkedBodies++
          touch()
        }),
        () => clock.sleep(d),
        () =>
          Effect.sync(() => {
            pass.parkedBodies--
            touch()
          })
      )
  }
  const handle: PassHandle = {
    tenantId: record.tenantId,
    threadId: record.threadId,
    executionId: record.executionId,
    rootExecutionId: record.rootExecutionId,
    depth: record.depth,
    instanceId: instance.instanceId,
    signal: holder.signal,
    leaseHeld: () => !holder.signal.aborted && holder.fence.refusal() === undefined,
    runBody,
    runEffect: (node, body) =>
      runBody(node, () =>
        Effect.runPromiseExitWith(instance.services)(
          Effect.provideService(body, Clock.Clock, bodyClock),
          { signal: holder.signal }
        ).then((exit) => {
          if (Exit.isSuccess(exit)) return exit.value
          if (Cause.hasInterruptsOnly(exit.cause) && holder.signal.aborted) throw holder.signal.reason
          throw Cause.squash(exit.cause)
        }))
  }
  const config = {
    configurable: {
      ...graphConfig(record).configurable,
      [fenceKey]: holder.fence,
      [passKey]: handle
    },
    signal: holder.signal,
    durability: "sync" as const
  }

  const invoke = (input: unknown) =>
    Effect.raceFirst(
      Effect.callback<unknown, unknown>((resume) => {
        pass.phase = "invoking"
        touch()
        graph.invoke(input, config).then(
          (value) => resume(Effect.succeed(value)),
          (error) => resume(Effect.fail(error))
        )
      }).pipe(Effect.ensuring(Effect.sync(() => {
        pass.phase = "running"
        touch()
      }))),
      Deferred.await(holder.lost)
    ).pipe(
      Effect.catch((error): Effect.Effect<never, PassError, RecordStore | PauseStore | TreeStore | Instance> => {
        if (error instanceof LeaseLostError) return Effect.fail(error)
        // A store that failed under a write is not the execution failing: it stays Running for a retry or a recovery.
        if (error instanceof StoreError) return Effect.fail(error)
        if (holder.signal.aborted) {
          const reason = holder.signal.reason
          if (reason instanceof LeaseLostError || reason instanceof InstanceStoppingError) return Effect.fail(reason)
          if (reason instanceof ExecutionCancelledError) return Effect.flatMap(cancelled, Effect.fail)
          return Effect.die(reason)
        }
        return Effect.fail(failure(error))
      })
    )

  /** Ends the tree as cancelled (under this lease). */
  const cancelled = Cancel.endTree(record, guard)

  /** A cancel request written by any instance ends the tree here. */
  const honourCancelRequest = Effect.gen(function*() {
    if (yield* Cancel.isRequested(record.tenantId, record.rootExecutionId)) return yield* Effect.flatMap(cancelled, Effect.fail)
  })

  /** The tree ended: its keys go. */
  const dropTreeKeys = tree.deleteRoot(record.tenantId, record.rootExecutionId)

  const failure = (error: unknown) =>
    new ExecutionFailedError({ ...base, error: error instanceof Error ? error.message : String(error), cause: error })

  /** Moves the record from one of `from` to `to`; a record in none of them changed under this pass: it lost the tree. */
  const setStatus = (from: ReadonlyArray<ExecutionStatus>, to: ExecutionStatus, error?: string) =>
    Effect.gen(function*() {
      yield* guard
      for (const f of from) {
        if (yield* records.setStatus({ tenantId: record.tenantId, executionId: record.executionId, from: f, to, now: now(), error })) return
      }
      return yield* Effect.fail(holder.fence.refusal() ?? new LeaseLostError({
        tenantId: record.tenantId,
        rootExecutionId: record.rootExecutionId,
        holder: holder.lease.holder,
        epoch: holder.lease.epoch,
        reason: `the record left ${from.join(" or ")} under this pass (another holder moved it)`
      }))
    })

  /** Resolved pauses of the tree whose interrupts are still waiting: the `Command` that feeds them all. */
  const answersFor = (waiting: ReadonlySet<string>) =>
    Effect.gen(function*() {
      const resolved = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Resolved"])
      const answered = resolved.filter((p) => waiting.has(p.interruptId))
      // A resolved pause whose interrupt is no longer waiting was fed by an earlier pass that stopped before taking it.
      for (const p of resolved) if (!waiting.has(p.interruptId)) yield* pauses.take(record.tenantId, p.pauseId)
      return answered
    })

  const command = (answered: ReadonlyArray<Pause>) =>
    new Command({ resume: Object.fromEntries(answered.map((p) => [p.interruptId, p.decision])) })

  const takeAll = (answered: ReadonlyArray<Pause>) =>
    Effect.forEach(answered, (p) => pauses.take(record.tenantId, p.pauseId), { discard: true })

  // First input: the root's input, or every decision waiting for the tree (a continue with none re-runs the interrupted steps).
  let input: unknown
  let sent: ReadonlyArray<Pause> = []
  if (start._tag === "Input") {
    input = start.input
    yield* observer.onStart(event)
  } else {
    yield* honourCancelRequest
    const state = yield* Effect.promise(() => graph.getState(graphConfig(record)))
    const waiting = new Set(state.tasks.flatMap((t) => (t.interrupts ?? []).flatMap((i) => (i.id === undefined ? [] : [i.id]))))
    sent = yield* answersFor(waiting)
    input = sent.length > 0 ? command(sent) : null
    // No checkpoint at all: the first holder died before LangGraph wrote one; start again from the kept input.
    if (input === null && (yield* Effect.promise(() => instance.saver.getTuple(graphConfig(record)))) === undefined) {
      const kept = yield* tree.get(record.tenantId, record.rootExecutionId, `${reservedPrefix}${inputKeyName}`)
      if (Option.isSome(kept)) input = kept.value
    }
    yield* setStatus(["Paused", "Running"], "Running")
    yield* observer.onResume({ ...event, reason: start.reason })
  }

  while (true) {
    const result = yield* invoke(input).pipe(
      Effect.tapError((e) =>
        e._tag === "ExecutionFailedError"
          ? setStatus(["Running"], "Failed", e.error).pipe(
            Effect.andThen(dropTreeKeys),
            Effect.andThen(observer.onError({ ...event, error: e.error })),
            Effect.ignore
          )
          : e._tag === "LeaseLostError"
          ? observer.onLeaseLost({ ...event, reason: e.reason })
          : Effect.void
      )
    )
    yield* takeAll(sent)
    sent = []
    if (!isInterrupted(result)) {
      yield* setStatus(["Running"], "Finished")
      yield* dropTreeKeys
      yield* observer.onEnd({ ...event, output: result })
      return { _tag: "Finished", ...base, output: result } as const
    }
    const interrupts = (result as { __interrupt__: ReadonlyArray<Interrupt> }).__interrupt__
    const waiting = new Set(interrupts.map((i) => i.id))
    // The drain: decisions resolved while this pass ran are taken before the tree may rest.
    const answered = yield* answersFor(waiting)
    if (answered.length > 0) {
      sent = answered
      input = command(answered)
      yield* observer.onResume({ ...event, reason: "Answered" })
      continue
    }
    yield* guard
    const known = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending", "Resolved"])
    const byInterrupt = new Map(known.map((p) => [p.interruptId, p]))
    for (const i of interrupts) {
      if (byInterrupt.has(i.id)) continue
      const pauseId = yield* ids.make("pause")
      yield* pauses.save({
        tenantId: record.tenantId,
        threadId: record.threadId,
        pauseId,
        rootExecutionId: record.rootExecutionId,
        executionId: record.executionId,
        interruptId: i.id,
        payload: i.value ?? null,
        status: "Pending",
        decision: null,
        createdAt: now(),
        resolvedAt: null,
        resolvedBy: null
      }).pipe(Effect.catchTag("InvalidInputError", (e) => Effect.fail(failure(new Error(`interrupt payload: ${e.message}`)))))
    }
    // A pending pause whose interrupt no longer waits cannot be answered any more.
    for (const p of known) if (p.status === "Pending" && !waiting.has(p.interruptId)) yield* pauses.withdraw(record.tenantId, p.pauseId, now())
    // A decision may have landed between the drain and the pauses being saved: look once more.
    const late = yield* answersFor(waiting)
    if (late.length > 0) {
      sent = late
      input = command(late)
      continue
    }
    yield* honourCancelRequest
    yield* setStatus(["Running"], "Paused")
    const pending = yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending"])
    yield* observer.onPause({ ...event, pauseIds: pending.map((p) => p.pauseId) })
    return { _tag: "Paused", ...base, pauses: pendingOf(pending) } as const
  }
}, (effect, options) =>
  Effect.annotateLogs(effect, {
    executionId: options.record.executionId,
    tenantId: options.record.tenantId,
    holder: options.holder.lease.holder
  }))
