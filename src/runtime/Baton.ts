/**
 * The baton runtime of one instance: `execute` and `resume` workflow
 * executions over the store Layers the app provides.
 *
 * @since 0.1.0
 */
import { Clock, Context, Deferred, Duration, Effect, Fiber, FiberSet, Layer, Option } from "effect"
import * as BatonConfig from "./BatonConfig.ts"
import { CheckpointStore } from "../stores/CheckpointStore.ts"
import {
  type BatonConfigError,
  ExecutionCancelledError,
  InstanceStoppingError,
  ThreadBusyError,
  ThreadOwnerError,
  UnknownPauseError,
  UnknownThreadError,
  UnknownWorkflowError,
  type CancelError,
  type ExecuteError,
  type ResumeError
} from "../stores/Errors.ts"
import type { ExecutionRecord } from "../stores/ExecutionRecord.ts"
import * as Executor from "./internal/Executor.ts"
import type { ExecutionOutput } from "./internal/Executor.ts"
import { defaultTenant, IdGenerator, type InstanceId, type TenantId, type ThreadId } from "../stores/Ids.ts"
import { type CompiledGraph, Instance, type InstanceShape } from "./internal/Instance.ts"
import { PauseStore } from "../stores/PauseStore.ts"
import { RecordStore } from "../stores/RecordStore.ts"
import * as Cancel from "./internal/Cancel.ts"
import * as Health from "./Health.ts"
import * as RecoverySweep from "./internal/RecoverySweep.ts"
import * as StepSlots from "./internal/StepSlots.ts"
import * as TreeDriver from "./internal/TreeDriver.ts"
import type { Stores } from "./internal/TreeDriver.ts"
import { TreeStore } from "../stores/TreeStore.ts"
import type { Workflow } from "./Workflow.ts"

export type { ExecutionOutput, PendingPause } from "./internal/Executor.ts"
export type { CancelError, ExecuteError, ResumeError } from "../stores/Errors.ts"

export interface ExecuteOptions {
  readonly tenantId?: TenantId | undefined
  /** Continue this thread (created if new); a new thread otherwise. */
  readonly threadId?: ThreadId | undefined
  /** The thread's owner: set on a new thread, checked on an existing one. */
  readonly ownerId?: string | undefined
}

export interface ResumeInput {
  readonly pauseId: string
  /** The answer, JSON: what the node's `interrupt()` returns. */
  readonly decision: unknown
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
}


export interface BatonShape {
  readonly instanceId: InstanceId
  /**
   * Starts an execution of `workflow` on a thread and runs it until it
   * finishes (its final state) or pauses (its pending pauses). Fails with
   * `LeaseLostError` if this instance lost the tree meanwhile — the execution
   * goes on elsewhere.
   */
  readonly execute: <I>(workflow: Workflow<I>, input: I, options?: ExecuteOptions) => Effect.Effect<ExecutionOutput, ExecuteError>
  /**
   * Records a decision for a pending pause (exactly once: a second answer
   * fails with `NotPausedError`), then takes the tree's lease — waiting while
   * another call or instance holds it — and continues the tree with every
   * decision recorded for it. Answers the tree's output once it rests.
   */
  readonly resume: (input: ResumeInput) => Effect.Effect<ExecutionOutput, ResumeError>
  /**
   * Cancels the thread's running or paused execution, wherever it runs:
   * aborted at once here, ended under its lease when paused, or asked to stop
   * through a durable request its holder reads within one renewal.
   * `cancelled` is false when nothing was left to cancel.
   */
  readonly cancel: (
    threadId: ThreadId,
    options?: { readonly tenantId?: TenantId | undefined; readonly ownerId?: string | undefined }
  ) => Effect.Effect<{ readonly cancelled: boolean }, CancelError>
  /**
   * Graceful stop: stops the sweep, waits for running passes, and a grace
   * before `timeout` (min(5 s, 20 %)) interrupts what is left — each pass
   * releases its lease once its step bodies returned and stays Running, so
   * another instance takes it at once. Ends within `timeout` (default 25 s;
   * 0 stops at once). New calls fail with `InstanceStoppingError`.
   */
  readonly close: (options?: { readonly timeout?: Duration.Input | undefined }) => Effect.Effect<void>
  /** No I/O: Unhealthy while stopping or when the recovery sweep is stuck. */
  readonly checkLiveness: Effect.Effect<Health.HealthReport>
  /** Liveness plus every store's ping under 2 s. */
  readonly checkReadiness: Effect.Effect<Health.HealthReport>
}


export class Baton extends Context.Service<Baton, BatonShape>()("baton/Baton") {
  /** The runtime of one instance over the store Layers the app provides; bad options fail with `BatonConfigError`. */
  static layer(options: BatonConfig.BatonOptions): Layer.Layer<Baton | Instance, BatonConfigError, Stores> {
    return layer(options)
  }
}


const checkThread = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId, ownerId: string | undefined) {
  const records = yield* RecordStore
  const thread = yield* records.getThread(tenantId, threadId)
  if (Option.isNone(thread)) return yield* new UnknownThreadError({ tenantId, threadId })
  if (thread.value.ownerId !== null && thread.value.ownerId !== ownerId) {
    return yield* new ThreadOwnerError({ tenantId, threadId, ownerId: ownerId ?? "(none)" })
  }
  return thread.value
})

/** Builds the runtime of one instance over the stores in context. Bad options fail with `BatonConfigError`. */
export const layer = (options: BatonConfig.BatonOptions): Layer.Layer<Baton | Instance, BatonConfigError, Stores> =>
  Layer.effectContext(Effect.gen(function*() {
    const config = yield* BatonConfig.make(options)
    const ids = yield* IdGenerator
    const checkpoints = yield* CheckpointStore
    const instanceId = config.instanceId ?? (yield* ids.make("instance"))
    // The step slots travel with the services (steps, the sweep and readiness find them there); no cap, no slots.
    const slots = config.maxConcurrentSteps === undefined ? undefined : yield* StepSlots.make(config.maxConcurrentSteps)
    const services = slots === undefined ? yield* Effect.context<Stores>() : Context.add(yield* Effect.context<Stores>(), StepSlots.StepSlots, slots)
    const compiledGraphs = new Map<string, CompiledGraph>()
    let holderSeq = 0
    const passEndedWaiters = new Set<() => void>()
    const instance: InstanceShape = {
      instanceId,
      config,
      saver: checkpoints.saver,
      passes: new Set(),
      passEnded: Effect.callback<void>((resume) => {
        const f = () => resume(Effect.void)
        passEndedWaiters.add(f)
        return Effect.sync(() => passEndedWaiters.delete(f))
      }),
      notifyPassEnded: () => {
        // Cleared before waking: a woken waiter may wait again at once (inline), and must not be cleared with the rest.
        const waiters = [...passEndedWaiters]
        passEndedWaiters.clear()
        for (const f of waiters) f()
      },
      activity: { count: 0 },
      nextHolder: () => `${instanceId}#${++holderSeq}`,
      compiled: (workflow) => {
        let graph = compiledGraphs.get(workflow.name)
        if (graph === undefined) {
          graph = workflow.graph.compile({ checkpointer: checkpoints.saver }) as CompiledGraph
          compiledGraphs.set(workflow.name, graph)
        }
        return graph
      },
      health: { startedAt: yield* Clock.currentTimeMillis, lastSweepEndedAt: undefined, stopping: false },
      closeDeadline: yield* Deferred.make<void>(),
      services
    }
    const run = <A, E>(effect: Effect.Effect<A, E, Stores | Instance>): Effect.Effect<A, E> =>
      effect.pipe(Effect.provideService(Instance, instance), Effect.provide(services), Effect.annotateLogs({ instanceId }))

    /** New calls are refused once a close began. */
    const notStopping = Effect.suspend(() =>
      instance.health.stopping ? Effect.fail(new InstanceStoppingError({ instanceId })) : Effect.void
    )

    const execute = <I>(workflow: Workflow<I>, input: I, options?: ExecuteOptions) =>
      run(Effect.gen(function*() {
        yield* notStopping
        const records = yield* RecordStore
        const tenantId = options?.tenantId ?? defaultTenant
        const registered = config.workflows.get(workflow.name)
        if (registered === undefined) return yield* new UnknownWorkflowError({ workflowName: workflow.name })
        const now = yield* Clock.currentTimeMillis
        let threadId: string
        if (options?.threadId !== undefined) {
          const existing = yield* records.getThread(tenantId, options.threadId)
          if (Option.isSome(existing)) {
            yield* checkThread(tenantId, options.threadId, options.ownerId)
            threadId = options.threadId
            const busy = (yield* records.listByThread(tenantId, threadId)).find((r) =>
              r.rootExecutionId === r.executionId && (r.status === "Running" || r.status === "Paused")
            )
            if (busy !== undefined) {
              return yield* new ThreadBusyError({ tenantId, threadId, executionId: busy.executionId, status: busy.status })
            }
          } else {
            const made = yield* records.createThread({ tenantId, threadId: options.threadId, ownerId: options.ownerId, now })
            // Another call may have created it first: its owner decides.
            if (!made.created) yield* checkThread(tenantId, options.threadId, options.ownerId)
            threadId = made.thread.threadId
          }
        } else {
          threadId = (yield* records.createThread({ tenantId, ownerId: options?.ownerId, now })).thread.threadId
        }
        const executionId = yield* ids.make("exec")
        const record: ExecutionRecord = {
          tenantId,
          executionId,
          threadId,
          rootExecutionId: executionId,
          parentExecutionId: null,
          depth: 1,
          workflowName: workflow.name,
          workflowVersion: workflow.version,
          configHash: workflow.configHash,
          status: "Running",
          error: null,
          createdAt: now,
          updatedAt: now
        }
        // The input is kept with the tree until it ends: a holder that dies before LangGraph's first
        // checkpoint leaves a recovery nothing else to start from.
        yield* TreeStore.use((tree) => tree.saveReservedIfAbsent(tenantId, executionId, Executor.inputKeyName, input ?? null))
        yield* records.createRecord(record)
        return yield* TreeDriver.start(workflow, record, input)
      }).pipe(Effect.withSpan("Baton.execute")))

    const resume = (input: ResumeInput) =>
      run(Effect.gen(function*() {
        yield* notStopping
        const pauses = yield* PauseStore
        const records = yield* RecordStore
        const tenantId = input.tenantId ?? defaultTenant
        const pause = yield* pauses.get(tenantId, input.pauseId)
        if (Option.isNone(pause)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
        yield* checkThread(tenantId, pause.value.threadId, input.ownerId)
        const now = yield* Clock.currentTimeMillis
        yield* pauses.resolve({ tenantId, pauseId: input.pauseId, decision: input.decision, resolvedBy: instanceId, now })
        yield* records.savePauseAnswer({
          tenantId,
          executionId: pause.value.executionId,
          pauseId: input.pauseId,
          answeredBy: instanceId,
          answeredAt: now
        })
        const record = yield* records.getRecord(tenantId, pause.value.rootExecutionId)
        if (Option.isNone(record)) return yield* Effect.die(new Error(`pause ${input.pauseId} names a tree with no record`))
        const workflow = config.workflows.get(record.value.workflowName)
        if (workflow === undefined) return yield* new UnknownWorkflowError({ workflowName: record.value.workflowName })
        const out = yield* TreeDriver.drive(workflow, tenantId, record.value.rootExecutionId, { _tag: "Continue", reason: "Answered" }, {
          wait: true
        })
        return yield* Option.match(out, {
          onNone: () => Effect.die(new Error("a waiting resume gave up its wait")),
          onSome: Effect.succeed
        })
      }).pipe(Effect.withSpan("Baton.resume")))

    const cancel = (threadId: ThreadId, options?: { readonly tenantId?: TenantId | undefined; readonly ownerId?: string | undefined }) =>
      run(Effect.gen(function*() {
        yield* notStopping
        const records = yield* RecordStore
        const tenantId = options?.tenantId ?? defaultTenant
        yield* checkThread(tenantId, threadId, options?.ownerId)
        const roots = (yield* records.listByThread(tenantId, threadId)).filter((r) =>
          r.executionId === r.rootExecutionId && (r.status === "Running" || r.status === "Paused")
        )
        let cancelled = false
        const requested: Array<ExecutionRecord> = []
        for (const root of roots) {
          const here = [...instance.passes].find((p) =>
            p.tenantId === tenantId && p.rootExecutionId === root.rootExecutionId && p.signal() !== undefined
          )
          if (here !== undefined) {
            // The request too: a pass past its last step, about to rest or finish, reads it before it does.
            yield* Cancel.request(tenantId, root.rootExecutionId, { ownerId: options?.ownerId, instanceId })
            here.abort(new ExecutionCancelledError({ tenantId, executionId: root.executionId }))
            cancelled = true
            continue
          }
          if (root.status === "Paused" && (yield* TreeDriver.endIfFree(root))) {
            cancelled = true
            continue
          }
          yield* Cancel.request(tenantId, root.rootExecutionId, { ownerId: options?.ownerId, instanceId })
          requested.push(root)
        }
        // Read again: a request only helps a tree that is still moving.
        for (const root of requested) {
          const now = yield* records.getRecord(tenantId, root.executionId)
          const status = Option.map(now, (r) => r.status)
          if (Option.contains(status, "Running") || Option.contains(status, "Cancelled")) cancelled = true
          else if (Option.contains(status, "Paused")) {
            // Paused meanwhile: wait for its holder's lease and end it; the request is read first at the lease take.
            const workflow = config.workflows.get(root.workflowName)
            const ended = workflow === undefined
              ? Effect.as(Effect.void, false)
              : TreeDriver.drive(workflow, tenantId, root.rootExecutionId, { _tag: "Continue", reason: "Answered" }, { wait: true })
                .pipe(Effect.as(false), Effect.catchTag("ExecutionCancelledError", () => Effect.succeed(true)))
            if (yield* ended.pipe(Effect.catch(() => Effect.succeed(false)))) cancelled = true
          } else {
            // Ended meanwhile: the request goes with the tree's keys.
            yield* TreeStore.use((tree) => tree.deleteRoot(tenantId, root.rootExecutionId))
          }
        }
        return { cancelled }
      }).pipe(Effect.withSpan("Baton.cancel")))

    const closeScope = yield* Effect.scope
    const recoveries = yield* FiberSet.make()
    const sweep = yield* Effect.forkScoped(run(RecoverySweep.run(recoveries)))

    const close = (options?: { readonly timeout?: Duration.Input | undefined }) =>
      run(Effect.gen(function*() {
        const timeoutMillis = options?.timeout === undefined ? 25_000 : Duration.toMillis(Duration.fromInputUnsafe(options.timeout))
        const graceMillis = Math.min(5_000, timeoutMillis * 0.2)
        const startedAt = yield* Clock.currentTimeMillis
        instance.health.stopping = true
        // Whatever happens below, nothing waits for step bodies past the timeout.
        yield* Effect.forkIn(
          Effect.andThen(Effect.sleep(Duration.millis(timeoutMillis)), Deferred.succeed(instance.closeDeadline, undefined)),
          closeScope
        )
        // The loop stops; the recoveries it started are passes like the others, waited for below.
        yield* Fiber.interrupt(sweep)
        const passesGone: Effect.Effect<void> = Effect.suspend(() =>
          instance.passes.size === 0 ? Effect.void : Effect.andThen(instance.passEnded, passesGone)
        )
        const waitUntil = (at: number) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.raceFirst(passesGone, Effect.sleep(Duration.millis(Math.max(0, at - now)))))
        yield* waitUntil(startedAt + timeoutMillis - graceMillis)
        if (instance.passes.size > 0) {
          yield* Effect.logInfo(`closing: interrupting ${instance.passes.size} running passes; they stay running for another instance`)
          for (const pass of instance.passes) pass.abort(new InstanceStoppingError({ instanceId }))
          yield* waitUntil(startedAt + timeoutMillis)
        }
        yield* Deferred.succeed(instance.closeDeadline, undefined)
        for (const pass of instance.passes) {
          yield* Effect.logWarning(`closing: execution ${pass.rootExecutionId} still has ${pass.bodies.size} step bodies running`)
        }
      }).pipe(Effect.withSpan("Baton.close")))

    return Context.make(Baton, {
      instanceId,
      execute,
      resume,
      cancel,
      close,
      checkLiveness: run(Health.checkLiveness(instance)),
      checkReadiness: run(Health.checkReadiness(instance, StepSlots.readiness(slots)))
    }).pipe(Context.add(Instance, instance))
  }))
