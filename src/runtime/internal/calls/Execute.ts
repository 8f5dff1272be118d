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
 * With a request key (see `Requests`), the ids are made before the key is
 * claimed and kept with the claim, so every call of the key starts or
 * follows that one execution: the lease and `startRoot` let exactly one of
 * them record it.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Deferred, Duration, Effect, Exit, Fiber, FiberSet, Option } from "effect"
import { afterRecorded, InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import { type ExecuteError, InstanceStoppingError } from "../../Errors.ts"
import { type ExecutionRecord, newRunning } from "../../../stores/ExecutionRecord.ts"
import { defaultTenant, IdGenerator, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import * as V from "../../../stores/internal/validate.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as Workflow from "../../Workflow.ts"
import { awaitExecution, decodedOutput, type ExecutionHandle } from "./Await.ts"
import type { ExecutionOutput } from "../pass/Executor.ts"
import { Instance, notStopping, registeredWorkflow } from "../Instance.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as InputSize from "./InputSize.ts"
import * as Requests from "./Requests.ts"
import { checkThread } from "./Threads.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as Gate from "../keyed/Gate.ts"
import * as KeyedOptions from "../keyed/KeyedOptions.ts"
import * as Debounce from "../keyed/Debounce.ts"
import type { DebounceWindow } from "../../../stores/DebounceStore.ts"
import { UnknownWorkflowError } from "../../Errors.ts"

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
  /**
   * A request idempotency key (1–200 characters, per tenant; needs a
   * `RequestStore`): every call with it — retried, duplicated, on any
   * instance, also after the first caller died — starts or follows one
   * execution: exactly one starts it, the others get its handle (`start`) or
   * its output (`execute`: the output the first call answered, else the
   * execution awaited). Kept for `requestRetention`. The same key with
   * another workflow, config, input or thread is `RequestConflictError`.
   */
  readonly requestKey?: string | undefined
  /**
   * At most `limit` executions of one `key` (per tenant) run at once,
   * fleet-wide (needs a `ConcurrencyKeyStore`; the bundles provide one).
   * Over the limit the execution is recorded at once and rests waiting —
   * Paused with no pause, no lease held — and starts, on any instance, when
   * an earlier one of its key ends (Finished, Failed or Cancelled), in
   * arrival order. A paused execution keeps its slot. `start` answers the
   * handle at once either way; `execute` waits for the output. Not with
   * `requestKey`.
   */
  readonly concurrencyKey?: KeyedOptions.ConcurrencyKey | undefined
  /**
   * A burst of starts with one `key` (per tenant), each within `window` of
   * the one before, becomes one execution (needs a `DebounceStore`; the
   * bundles provide one). It runs with the last start's input once `window`
   * passed on the Clock after the last start, on any instance. Every start of
   * the burst answers that one execution: `start` its handle (the first
   * start's ids, its thread and owner; a later start's `threadId` and
   * `ownerId` are not used), `execute` its output. Until it fires it rests
   * Paused with no pause and no lease. Not with `requestKey` or
   * `concurrencyKey`.
   */
  readonly debounce?: KeyedOptions.Debounce | undefined
}

/**
 * A started execution: its handle, and — when this call started it here —
 * the run going on in the instance's scope (its output, as `execute`
 * answers it). A call of a request key that follows another call's
 * execution has no run, and the answer that call kept, if any.
 *
 * @category internal
 * @since 0.1.0
 */
export interface Started {
  readonly handle: ExecutionHandle
  readonly run: Fiber.Fiber<ExecutionOutput, ExecuteError> | undefined
  readonly answer: Option.Option<unknown>
  readonly key: Requests.Keyed | undefined
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
    (decoded) =>
      // LangGraph reads no input as "continue the thread's checkpoint": a new execution would fail after being recorded.
      // Nor a string, a number or an array: LangGraph fails such a run after it was recorded.
      typeof decoded !== "object" || decoded === null || Array.isArray(decoded)
        ? Effect.fail(new InvalidInputError({ operation: "Baton.start", field: "input", reason: `must be the graph's first state update (an object such as {}), not ${Array.isArray(decoded) ? "an array" : decoded === null ? "null" : typeof decoded}` }))
        : Effect.as(
          Effect.andThen(
            V.json("Baton.start", "input", decoded),
            Effect.flatMap(Instance, (instance) => InputSize.check("Baton.start", "input", decoded, instance.config.maxInputBytes))
          ),
          decoded
        )
  )

/** The record of the new root: Running, created now; its ids made here unless a request key's claim made them. */
const rootRecord = Effect.fnUntraced(function*(
  workflow: Workflow.AnyWorkflow,
  tenantId: TenantId,
  options: ExecuteOptions | undefined,
  claimed?: ExecutionHandle | undefined
) {
  const now = yield* Clock.currentTimeMillis
  const threadId = yield* threadFor(tenantId, claimed === undefined ? options : { ...options, threadId: claimed.threadId }, now)
  const executionId = claimed?.executionId ?? (yield* (yield* IdGenerator).make("exec"))
  return newRunning({ tenantId, executionId, threadId, workflow, now })
})

/** What the run of a started execution answers. */
type Run = Fiber.Fiber<ExecutionOutput, ExecuteError>

/**
 * Runs the new root in `runs` (the instance's scope) and answers once it is
 * recorded and leased — or fails as the start failed before that (with
 * `shared`, `StartTaken` when another call of its request key has it).
 */
const launch = (
  runs: FiberSet.FiberSet<unknown, unknown>,
  workflow: Workflow.AnyWorkflow,
  record: ExecutionRecord,
  input: unknown,
  shared: boolean,
  keyed?: Gate.Marker | undefined,
  debounced?: { readonly key: string } | undefined
) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const recorded = yield* Deferred.make<void, ExecuteError | TreeDriver.StartTaken>()
    const run = yield* FiberSet.run(runs)(
      TreeDriver.start(workflow, record, input, Deferred.succeed(recorded, undefined), { shared, keyed, debounced }).pipe(
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
    return run as Run
  })

const handleOf = (record: ExecutionRecord): ExecutionHandle => ({
  executionId: record.executionId,
  rootExecutionId: record.rootExecutionId,
  threadId: record.threadId,
  tenantId: record.tenantId
})

/**
 * A start under a request key: claims it, then starts the claimed execution
 * or follows it. Every call of the key runs this loop over the same ids:
 * the execution recorded → its handle (the thread owner-checked); else the
 * start is tried with the ids shared — of the calls trying at once exactly
 * one holds the new root's lease and records it; a call that finds the
 * lease held waits for it on the Clock (a live starter records it soon, a
 * dead one's lease expires) and looks again.
 */
const keyedStart = Effect.fnUntraced(function*(
  runs: FiberSet.FiberSet<unknown, unknown>,
  workflow: Workflow.AnyWorkflow,
  input: unknown,
  tenantId: TenantId,
  options: ExecuteOptions & { readonly requestKey: string }
) {
  if (options.threadId !== undefined) yield* V.nonEmpty("Baton.start", "threadId", options.threadId)
  if (options.ownerId !== undefined) yield* V.nonEmpty("Baton.start", "ownerId", options.ownerId)
  const key = yield* Requests.keyed("Baton.start", tenantId, options.requestKey)
  const claimed = yield* Requests.claimStart(key, workflow, input, options.threadId)
  const records = yield* RecordStore
  const { executionId, threadId } = claimed.handle
  while (true) {
    // Looked at again on every turn: a closing instance starts nothing new while it follows.
    yield* notStopping
    if (Option.isSome(yield* records.getRecord(tenantId, executionId))) {
      // Recorded (by a call of the key): a store failure from here says so.
      yield* Effect.mapError(checkThread(tenantId, threadId, options.ownerId), afterRecorded({ tenantId, executionId, threadId }))
      return { handle: claimed.handle, run: undefined, answer: claimed.answer, key } satisfies Started as Started
    }
    const record = yield* rootRecord(workflow, tenantId, options, claimed.handle)
    const started = yield* Effect.map(launch(runs, workflow, record, input, true), Option.some).pipe(
      Effect.catchTag("StartTaken", (taken) =>
        taken.why === "Recorded" ? Effect.succeedNone : Effect.as(TreeDriver.untilLeaseFree(tenantId, executionId), Option.none()))
    )
    if (Option.isSome(started)) return { handle: handleOf(record), run: started.value, answer: Option.none(), key } satisfies Started as Started
  }
})

/**
 * Records the root of a debounce window (its first start's ids and thread),
 * resting until the window fires: `Some` with its run when recorded here,
 * `None` when another call recorded it. A busy thread drops the window (its
 * followers open another) and fails with `ThreadBusyError`.
 */
const recordWindowWith = (runs: FiberSet.FiberSet<unknown, unknown>, workflow: Workflow.AnyWorkflow, window: DebounceWindow, ownerId: string | undefined) =>
  Effect.gen(function*() {
    const handle = handleOfWindow(window)
    const record = yield* rootRecord(workflow, window.tenantId, { threadId: window.threadId, ownerId }, handle)
    return yield* launch(runs, workflow, record, null, true, undefined, { key: window.key }).pipe(
      Effect.map(Option.some),
      Effect.catchTag("StartTaken", () => Effect.succeedNone),
      Effect.tapError((e) =>
        e._tag === "ThreadBusyError"
          ? Effect.flatMap(Instance, (instance) => Debounce.storeOf(instance)?.delete(window.tenantId, window.executionId) ?? Effect.void).pipe(Effect.ignore)
          : Effect.void
      )
    )
  })

const handleOfWindow = (window: DebounceWindow): ExecutionHandle => ({
  executionId: window.executionId,
  rootExecutionId: window.executionId,
  threadId: window.threadId,
  tenantId: window.tenantId
})

/**
 * Records the root of a window whose starter died before recording it (the
 * debouncer's fallback): its workflow as the window names it, if registered here.
 *
 * @category internal
 * @since 0.1.0
 */
export const recordWindow = (runs: FiberSet.FiberSet<unknown, unknown>) => (window: DebounceWindow) =>
  Effect.gen(function*() {
    const definition = window.definition as Debounce.Definition
    const workflow = yield* registeredWorkflow({ name: definition.workflowName, configHash: definition.configHash })
    yield* recordWindowWith(runs, workflow, window, definition.ownerId ?? undefined)
  }).pipe(Effect.catchTag("UnknownWorkflowError", (e: UnknownWorkflowError) => Effect.logDebug(`debounce window of ${e.workflowName} left to an instance that registers it`)))

/**
 * A debounced start (see `ExecuteOptions.debounce`): offers the input to its
 * key's window. The call that opens the window records the root (resting
 * until the window fires) and holds its run; the others answer the
 * window's execution once it is recorded — waiting for it on the Clock, and
 * offering again if the window went without a record (its thread was busy).
 */
const debouncedStart = Effect.fnUntraced(function*(
  runs: FiberSet.FiberSet<unknown, unknown>,
  workflow: Workflow.AnyWorkflow,
  input: unknown,
  tenantId: TenantId,
  options: ExecuteOptions,
  debounce: { readonly key: string; readonly windowMillis: number; readonly maxWaitMillis: number | undefined }
) {
  const instance = yield* Instance
  const store = Debounce.storeOf(instance)!
  const records = yield* RecordStore
  const ids = yield* IdGenerator
  const definition: Debounce.Definition = { workflowName: workflow.name, configHash: workflow.configHash, ownerId: options.ownerId ?? null }
  while (true) {
    yield* notStopping
    const executionId = yield* ids.make("exec")
    const threadId = options.threadId ?? (yield* ids.make("thread"))
    const now = yield* Clock.currentTimeMillis
    const fireAt = now + debounce.windowMillis
    const offered = yield* store.offer({ tenantId, key: debounce.key, executionId, threadId, definition, input, fireAt, now, maxWaitMillis: debounce.maxWaitMillis })
    Debounce.poke(instance)
    const window = offered.window
    const handle = handleOfWindow(window)
    if (offered.opened) {
      const run = yield* recordWindowWith(runs, workflow, window, options.ownerId)
      if (Option.isSome(run)) return { handle, run: run.value, answer: Option.none(), key: undefined } satisfies Started as Started
    }
    // Another call opened the window: its execution is recorded soon (by that call, or the debouncer at fireAt).
    while (true) {
      if (Option.isSome(yield* records.getRecord(tenantId, window.executionId))) {
        return { handle, run: undefined, answer: Option.none(), key: undefined } satisfies Started as Started
      }
      if (Option.isNone(yield* store.get(tenantId, window.executionId))) break
      yield* Effect.sleep(Duration.millis(instance.config.waitPollMillis))
    }
  }
})

/**
 * Starts `workflow` on `input` as a new root execution (see `Baton.start`):
 * answers once the root is recorded and leased; the run goes on in `runs`
 * (the instance's scope), whoever waits for it. With a `requestKey`, a
 * repeated call answers the first call's execution instead.
 *
 * @category internal
 * @since 0.1.0
 */
export const start = (runs: FiberSet.FiberSet<unknown, unknown>) => <I>(workflow: Workflow.Workflow<I, any, any, any>, input: I, options?: ExecuteOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const tenantId = options?.tenantId ?? defaultTenant
    // Matched by name and config hash: the graph run is the registered one, never the caller's object.
    const registered = (yield* registeredWorkflow(workflow)) as typeof workflow
    const decoded = yield* checkedInput(registered, input)
    const requestKey = options?.requestKey
    const keyed = options?.concurrencyKey === undefined
      ? undefined
      : yield* KeyedOptions.check("Baton.start", yield* Instance, options.concurrencyKey, { requestKey })
    if (options?.debounce !== undefined) {
      const debounce = yield* KeyedOptions.checkDebounce("Baton.start", yield* Instance, options.debounce, { requestKey, concurrencyKey: options.concurrencyKey })
      return yield* debouncedStart(runs, registered, decoded, tenantId, options, debounce)
    }
    if (requestKey !== undefined) return yield* keyedStart(runs, registered, decoded, tenantId, { ...options, requestKey })
    const record = yield* rootRecord(registered, tenantId, options)
    const run = yield* launch(runs, registered, record, decoded, false, keyed).pipe(
      // Not shared: a start never tells another call's start.
      Effect.catchTag("StartTaken", (e) => Effect.die(e))
    )
    return { handle: handleOf(record), run, answer: Option.none(), key: undefined } satisfies Started as Started
  }).pipe(Effect.withSpan("Baton.start"))

/**
 * `start`, then the execution's output (see `Baton.execute`): the run's when
 * this call started it, else — for a call of a request key that follows
 * another call's execution — the output that call answered, or the
 * execution awaited. Any failure after the root was recorded carries its
 * ids (`recorded`) and says to await it, not retry.
 *
 * @category internal
 * @since 0.1.0
 */
/** Awaits an execution this call started or follows: no timeout was given, and its record was read before (only a deleted one is unknown now). */
const awaited = (handle: ExecutionHandle, options: ExecuteOptions | undefined) =>
  awaitExecution(handle, { ownerId: options?.ownerId }).pipe(
    Effect.catchTag("AwaitTimeoutError", Effect.die),
    Effect.catchTag("UnknownExecutionError", (e) =>
      Effect.fail(new StoreError({ store: "RecordStore", operation: "getRecord", kind: "Data", reason: `execution ${e.executionId}, started by this call, is gone` })))
  )

export const execute = (runs: FiberSet.FiberSet<unknown, unknown>) => <I, O>(workflow: Workflow.Workflow<I, O, any, any>, input: I, options?: ExecuteOptions) =>
  Effect.gen(function*() {
    const started = yield* start(runs)(workflow, input, options)
    const { executionId, tenantId, threadId } = started.handle
    const out = Effect.gen(function*() {
      if (started.run !== undefined) {
        // Resting on children launched anywhere is not an answer yet: it waits for the tree to move on.
        const ran = yield* Fiber.join(started.run)
        // Resting until its concurrency key admits it is not an answer either: it waits for the run, wherever it goes.
        const waiting = (options?.concurrencyKey !== undefined || options?.debounce !== undefined) && ran._tag === "Paused" && ran.pauses.length === 0
        const out = waiting ? yield* awaited(started.handle, options) : yield* ChildLaunch.untilNotOnChildren(ran, () => awaited(started.handle, options))
        if (started.key !== undefined) yield* Requests.recordAnswer(started.key, started.handle, out)
        return yield* decodedOutput(workflow, out, "Baton.execute")
      }
      if (Option.isSome(started.answer)) return yield* decodedOutput(workflow, started.answer.value as ExecutionOutput, "Baton.execute")
      return yield* awaited(started.handle, options)
    })
    return yield* Effect.mapError(out, afterRecorded({ tenantId, executionId, threadId }))
  }).pipe(Effect.map((out) => out as ExecutionOutput<O>), Effect.withSpan("Baton.execute"))
