/**
 * The baton runtime of one instance: `execute` and `resume` workflow
 * executions over the store Layers the app provides.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import * as BatonConfig from "./BatonConfig.ts"
import { CheckpointStore } from "./CheckpointStore.ts"
import {
  type BatonConfigError,
  type ExecutionFailedError,
  type InvalidInputError,
  type LeaseLostError,
  type NotPausedError,
  type StoreError,
  ThreadBusyError,
  ThreadOwnerError,
  UnknownPauseError,
  UnknownThreadError,
  UnknownWorkflowError
} from "./Errors.ts"
import type { ExecutionRecord } from "./ExecutionRecord.ts"
import type { ExecutionOutput } from "./Executor.ts"
import { defaultTenant, IdGenerator, type InstanceId, type TenantId, type ThreadId } from "./Ids.ts"
import { type CompiledGraph, Instance, type InstanceShape } from "./Instance.ts"
import { PauseStore } from "./PauseStore.ts"
import { RecordStore } from "./RecordStore.ts"
import * as RecoverySweep from "./RecoverySweep.ts"
import * as TreeDriver from "./TreeDriver.ts"
import type { Stores } from "./TreeDriver.ts"
import type { Workflow } from "./Workflow.ts"

export type { ExecutionOutput, PendingPause } from "./Executor.ts"

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

export type ExecuteError =
  | LeaseLostError
  | ExecutionFailedError
  | StoreError
  | InvalidInputError
  | UnknownThreadError
  | ThreadOwnerError
  | ThreadBusyError
  | UnknownWorkflowError

export type ResumeError = ExecuteError | NotPausedError | UnknownPauseError

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
}

export class Baton extends Context.Service<Baton, BatonShape>()("baton/Baton") {}


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
    const services = yield* Effect.context<Stores>()
    const compiledGraphs = new Map<string, CompiledGraph>()
    let holderSeq = 0
    const instance: InstanceShape = {
      instanceId,
      config,
      saver: checkpoints.saver,
      passes: new Set(),
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
      health: { lastSweepEndedAt: undefined, stopping: false },
      services
    }
    const run = <A, E>(effect: Effect.Effect<A, E, Stores | Instance>): Effect.Effect<A, E> =>
      effect.pipe(Effect.provideService(Instance, instance), Effect.provide(services), Effect.annotateLogs({ instanceId }))

    const execute = <I>(workflow: Workflow<I>, input: I, options?: ExecuteOptions) =>
      run(Effect.gen(function*() {
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
            threadId = (yield* records.createThread({ tenantId, threadId: options.threadId, ownerId: options.ownerId, now })).thread.threadId
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
        yield* records.createRecord(record)
        return yield* TreeDriver.start(workflow, record, input)
      }).pipe(Effect.withSpan("Baton.execute")))

    const resume = (input: ResumeInput) =>
      run(Effect.gen(function*() {
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

    yield* Effect.forkScoped(run(RecoverySweep.run))

    return Context.make(Baton, { instanceId, execute, resume }).pipe(Context.add(Instance, instance))
  }))
