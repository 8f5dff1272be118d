/**
 * The `start` and `execute` programs: a new root execution of a workflow on a
 * thread (new or continued). `start` answers a handle once the root is
 * durably recorded and leased, and leaves the run to the instance;
 * `execute` is `start` and then the run's output.
 *
 * A root is born leased: its id is made here, its tree's lease taken first
 * (nobody else knows the id yet, so the take cannot fail for a live
 * holder), and only then is the record written — by `RecordStore.startRoot`,
 * which records it only if the thread has no active root, atomically. A
 * recovery sweep lists Running records, so it can never see this root
 * without its starter's lease; a thread that is busy releases the lease and
 * fails with `ThreadBusyError`, nothing recorded. (One transaction over the
 * lease and the record would need every backend to keep both in one
 * database; lease-first keeps the contracts apart and is as safe.)
 *
 * @since 0.1.0
 */
import { Cause, Clock, Deferred, Effect, Exit, type Fiber, FiberSet, Option } from "effect"
import { type ExecuteError, InstanceStoppingError } from "../../stores/Errors.ts"
import type { ExecutionRecord } from "../../stores/ExecutionRecord.ts"
import { defaultTenant, IdGenerator, type TenantId, type ThreadId } from "../../stores/Ids.ts"
import * as V from "../../stores/internal/validate.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import * as Workflow from "../Workflow.ts"
import type { ExecutionHandle } from "./Await.ts"
import type { ExecutionOutput } from "./Executor.ts"
import { Instance, notStopping, registeredWorkflow } from "./Instance.ts"
import { checkThread } from "./Threads.ts"
import * as TreeDriver from "./TreeDriver.ts"

/**
 * Where and for whom `Baton.start` / `Baton.execute` runs.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecuteOptions {
  readonly tenantId?: TenantId | undefined
  /** Continue this thread (created if new); a new thread otherwise. */
  readonly threadId?: ThreadId | undefined
  /** The thread's owner: set on a new thread, checked on an existing one. */
  readonly ownerId?: string | undefined
}

/**
 * A started execution on this instance: its handle, and the run going on in
 * the instance's scope (its output, as `execute` answers it).
 *
 * @category internal
 * @since 0.1.0
 */
export interface Started {
  readonly handle: ExecutionHandle
  readonly run: Fiber.Fiber<ExecutionOutput, ExecuteError>
}

/**
 * The thread the execution runs on: the one asked for (created when new,
 * owner-checked when it exists), or a new one. Whether it is busy is decided
 * by the atomic start.
 */
const threadFor = Effect.fnUntraced(function*(tenantId: TenantId, options: ExecuteOptions | undefined, now: number) {
  const records = yield* RecordStore
  const threadId = options?.threadId
  if (threadId === undefined) return (yield* records.createThread({ tenantId, ownerId: options?.ownerId, now })).thread.threadId
  if (Option.isSome(yield* records.getThread(tenantId, threadId))) {
    yield* checkThread(tenantId, threadId, options?.ownerId)
    return threadId
  }
  const made = yield* records.createThread({ tenantId, threadId, ownerId: options?.ownerId, now })
  // Another call may have created it first: its owner decides.
  if (!made.created) yield* checkThread(tenantId, threadId, options?.ownerId)
  return made.thread.threadId
})

/** The input as the graph gets it: decoded by the workflow's schema, and storable as JSON — checked before any write. */
const checkedInput = (workflow: Workflow.AnyWorkflow, input: unknown) =>
  Effect.flatMap(
    Workflow.decode(workflow, "input", input, "Baton.start"),
    (decoded) => Effect.as(V.json("Baton.start", "input", decoded ?? null), decoded ?? null)
  )

/** The record of the new root: Running, created now. */
const rootRecord = Effect.fnUntraced(function*(workflow: Workflow.AnyWorkflow, tenantId: TenantId, options: ExecuteOptions | undefined) {
  const now = yield* Clock.currentTimeMillis
  const threadId = yield* threadFor(tenantId, options, now)
  const executionId = yield* (yield* IdGenerator).make("exec")
  return {
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
  } satisfies ExecutionRecord as ExecutionRecord
})

/**
 * Starts `workflow` on `input` as a new root execution (see `Baton.start`):
 * answers once the root is recorded and leased; the run goes on in `runs`
 * (the instance's scope), whoever waits for it.
 *
 * @category internal
 * @since 0.1.0
 */
export const start = (runs: FiberSet.FiberSet<unknown, unknown>) => <I>(workflow: Workflow.Workflow<I, any, any, any>, input: I, options?: ExecuteOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const instance = yield* Instance
    const tenantId = options?.tenantId ?? defaultTenant
    // Matched by name and config hash: the graph run is the registered one, never the caller's object.
    const registered = (yield* registeredWorkflow(workflow)) as typeof workflow
    const decoded = yield* checkedInput(registered, input)
    const record = yield* rootRecord(registered, tenantId, options)
    const recorded = yield* Deferred.make<void, ExecuteError>()
    const run = yield* FiberSet.run(runs)(
      TreeDriver.start(registered, record, decoded, Deferred.succeed(recorded, undefined)).pipe(
        // Failed before the root was recorded: `start` fails with it (a no-op once recorded).
        Effect.onExit((exit) =>
          Exit.isSuccess(exit) ? Effect.void : Deferred.failCause(
            recorded,
            Cause.hasInterruptsOnly(exit.cause) ? Cause.fail(new InstanceStoppingError({ instanceId: instance.instanceId })) : exit.cause
          )
        )
      )
    )
    yield* Deferred.await(recorded)
    const handle: ExecutionHandle = { executionId: record.executionId, rootExecutionId: record.rootExecutionId, threadId: record.threadId, tenantId }
    return { handle, run: run as Fiber.Fiber<ExecutionOutput, ExecuteError> } satisfies Started
  }).pipe(Effect.withSpan("Baton.start"))
