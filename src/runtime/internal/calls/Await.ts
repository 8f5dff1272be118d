/**
 * The `await` program: the output of an execution once it rests (finished or
 * paused) or ends (failed, cancelled), on any instance. An instance that is
 * not moving it waits for its record to settle: woken when its tree's lease
 * is released (in this process by the wake-up hub, across processes by
 * Postgres NOTIFY), else by polling on the Clock.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Fiber } from "effect"
import { AwaitTimeoutError, ExecutionCancelledError, ExecutionFailedError, UnknownWorkflowError } from "../../Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { defaultTenant, type ExecutionId, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import * as Workflow from "../../Workflow.ts"
import { currentOutput, type ExecutionOutput } from "../pass/Executor.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as ChildWaits from "../children/ChildWaits.ts"
import * as V from "../../../stores/internal/validate.ts"
import { Instance } from "../Instance.ts"
import * as Gate from "../keyed/Gate.ts"
import { type ReadOptions, readableRecord } from "./Reads.ts"

/**
 * What `start` hands back once the root is durably recorded and leased:
 * enough to `await` it, read its `status` or answer its pauses from any
 * instance.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionHandle<Output = unknown> {
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  readonly threadId: ThreadId
  readonly tenantId: TenantId
  /** Phantom: the workflow's output type, what `await` hands back. */
  readonly _Output?: () => Output
}

/**
 * How `await` waits: who asks (a handle carries its tenant) and for how long
 * at most (unset: until the execution rests).
 *
 * @category models
 * @since 0.1.0
 */
export interface AwaitOptions extends ReadOptions {
  readonly timeout?: Duration.Input | undefined
}

/** The output of a record that rests or ended; decoded with the workflow's output schema. */
const settled = Effect.fnUntraced(function*(record: ExecutionRecord) {
  const base = { tenantId: record.tenantId, executionId: record.executionId }
  if (record.status === "Cancelled") return yield* new ExecutionCancelledError(base)
  if (record.status === "Failed") return yield* new ExecutionFailedError({ ...base, error: record.error ?? "failed" })
  const { config } = yield* Instance
  const workflow = config.workflows.get(record.workflowName)
  if (workflow === undefined) return yield* new UnknownWorkflowError({ workflowName: record.workflowName })
  // A paused tree lists the pauses of its children resting below it too.
  return yield* decodedOutput(workflow, yield* ChildWaits.withForwarded(yield* currentOutput(workflow, record), record), "Baton.await")
})

/**
 * A finished execution's output decoded by the workflow's output schema (a
 * paused one as it is): what `execute` and `await` hand back.
 *
 * @category internal
 * @since 0.1.0
 */
export const decodedOutput = (workflow: Workflow.AnyWorkflow, out: ExecutionOutput, operation: string) =>
  out._tag !== "Finished"
    ? Effect.succeed(out)
    : Effect.map(Workflow.decode(workflow, "output", out.output, operation), (output): ExecutionOutput => ({ ...out, output }))

/** Reads the record until it is not Running, waiting between reads for a release of its tree or the poll. */
const untilSettled = (executionId: ExecutionId, options: ReadOptions) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const { config } = instance
    const wakeups = yield* LeaseWakeups
    let record = yield* readableRecord(executionId, options)
    // A tree resting only on its children is still under way: the runtime continues it when they end. So is one
    // waiting for its concurrency key to admit it.
    const moving = (r: ExecutionRecord) =>
      r.status === "Running"
        ? Effect.succeed(true)
        : Effect.flatMap(ChildLaunch.restsOnChildren(r), (onChildren) => onChildren ? Effect.succeed(true) : Gate.restsWaiting(instance, r))
    while (yield* moving(record)) {
      // Listen before reading again: a release between the read and the wait is not missed.
      const released = yield* Effect.forkChild(wakeups.next(record.tenantId, record.rootExecutionId), { startImmediately: true })
      record = yield* readableRecord(executionId, options)
      if (!(yield* moving(record))) {
        yield* Fiber.interrupt(released)
        break
      }
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(config.waitPollMillis)), Fiber.join(released)).pipe(
        Effect.ensuring(Fiber.interrupt(released))
      )
      record = yield* readableRecord(executionId, options)
    }
    return record
  })

/**
 * `Baton.await`: the execution's output once it rests, like `execute`'s —
 * `Finished` (its output) or `Paused` (its pending pauses) — or its end as
 * `ExecutionFailedError` / `ExecutionCancelledError`. With `timeout`, gives
 * up after it (on the Clock) with `AwaitTimeoutError`; the execution goes on.
 *
 * @category internal
 * @since 0.1.0
 */
export const awaitExecution = (target: ExecutionHandle | ExecutionId, options?: AwaitOptions) =>
  Effect.gen(function*() {
    const handle = typeof target === "string" ? undefined : target
    const executionId = typeof target === "string" ? target : target.executionId
    const read: ReadOptions = { tenantId: handle?.tenantId ?? options?.tenantId ?? defaultTenant, ownerId: options?.ownerId }
    const wait = Effect.flatMap(untilSettled(executionId, read), settled)
    if (options?.timeout === undefined) return yield* wait
    const timeoutMillis = yield* V.durationMillis("Baton.await", "timeout", options.timeout)
    return yield* wait.pipe(
      Effect.timeoutOrElse({
        duration: Duration.millis(timeoutMillis),
        orElse: () => Effect.fail(new AwaitTimeoutError({ tenantId: read.tenantId!, executionId, timeoutMillis }))
      })
    )
  }).pipe(Effect.withSpan("Baton.await"))
