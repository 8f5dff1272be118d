/**
 * The `execute` program: a new root execution of a workflow on a thread (new
 * or continued), run until it finishes or pauses.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { ThreadBusyError, UnknownWorkflowError } from "../../stores/Errors.ts"
import type { ExecutionRecord } from "../../stores/ExecutionRecord.ts"
import { defaultTenant, IdGenerator, type TenantId, type ThreadId } from "../../stores/Ids.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import { TreeStore } from "../../stores/TreeStore.ts"
import type { Workflow } from "../Workflow.ts"
import * as Executor from "./Executor.ts"
import { Instance, notStopping } from "./Instance.ts"
import { checkThread } from "./Threads.ts"
import * as TreeDriver from "./TreeDriver.ts"

/**
 * Where and for whom `Baton.execute` runs.
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

/** An existing thread may take a new root when its owner asks and no root of it is Running or Paused. */
const continueThread = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId, ownerId: string | undefined) {
  const records = yield* RecordStore
  yield* checkThread(tenantId, threadId, ownerId)
  const busy = (yield* records.listByThread(tenantId, threadId)).find((r) =>
    r.rootExecutionId === r.executionId && (r.status === "Running" || r.status === "Paused")
  )
  if (busy !== undefined) return yield* new ThreadBusyError({ tenantId, threadId, executionId: busy.executionId, status: busy.status })
  return threadId
})

/** The thread the execution runs on: the one asked for (created when new), or a new one. */
const threadFor = Effect.fnUntraced(function*(tenantId: TenantId, options: ExecuteOptions | undefined, now: number) {
  const records = yield* RecordStore
  const threadId = options?.threadId
  if (threadId === undefined) return (yield* records.createThread({ tenantId, ownerId: options?.ownerId, now })).thread.threadId
  if (Option.isSome(yield* records.getThread(tenantId, threadId))) return yield* continueThread(tenantId, threadId, options?.ownerId)
  const made = yield* records.createThread({ tenantId, threadId, ownerId: options?.ownerId, now })
  // Another call may have created it first: its owner decides.
  if (!made.created) yield* checkThread(tenantId, threadId, options?.ownerId)
  return made.thread.threadId
})

/**
 * Runs `workflow` on `input` as a new root execution (see `Baton.execute`).
 *
 * @category internal
 * @since 0.1.0
 */
export const execute = <I>(workflow: Workflow<I>, input: I, options?: ExecuteOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const { config } = yield* Instance
    const records = yield* RecordStore
    const tenantId = options?.tenantId ?? defaultTenant
    if (!config.workflows.has(workflow.name)) return yield* new UnknownWorkflowError({ workflowName: workflow.name })
    const now = yield* Clock.currentTimeMillis
    const threadId = yield* threadFor(tenantId, options, now)
    const executionId = yield* (yield* IdGenerator).make("exec")
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
  }).pipe(Effect.withSpan("Baton.execute"))
