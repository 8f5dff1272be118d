/**
 * Every error baton raises. Each has a stable `_tag` and a message that says
 * what to do about it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * What was durably recorded before a call failed: the execution it started
 * or continues (and, for `resume`, the pause whose decision was written).
 * An error carrying it means the work goes on: the caller should `await`
 * the execution or read its `status`, never repeat the call.
 *
 * @category errors
 * @since 0.1.0
 */
export const RecordedWork = Schema.Struct({
  tenantId: Schema.String,
  executionId: Schema.String,
  threadId: Schema.String,
  pauseId: Schema.optional(Schema.String)
})

/**
 * See `RecordedWork`.
 *
 * @category errors
 * @since 0.1.0
 */
export type RecordedWork = typeof RecordedWork.Type

/** What to do after a failure that came once the work was recorded. */
const recordedAdvice = (r: RecordedWork): string =>
  r.pauseId === undefined
    ? `The execution was recorded before this failure (execution ${r.executionId}, thread ${r.threadId}, tenant ${r.tenantId}): do not retry the call — it would start a second execution or find the thread busy; await it (Baton.await) or read its status.`
    : `The decision for pause ${r.pauseId} was recorded before this failure (execution ${r.executionId}, thread ${r.threadId}, tenant ${r.tenantId}): do not resume it again — the pause is answered; await the execution (Baton.await) or read its status.`

/**
 * What kind of failure a `StoreError` is:
 * - `"Busy"` — the database was locked or busy (lock timeout, deadlock,
 *   serialization failure, statement timeout). Transient.
 * - `"Connection"` — the database could not be reached or the connection
 *   broke. Transient.
 * - `"Constraint"` — a uniqueness or other constraint refused the write.
 *   Permanent: the same call fails the same way.
 * - `"Data"` — a value the database cannot hold (a NUL byte, numeric
 *   overflow, invalid text, a value too long to index). Permanent.
 * - `"Config"` — the database cannot work as configured (not a database, a
 *   read-only file, a missing schema or table, a refused login, a SQLite file
 *   deleted or replaced while open). Permanent until an operator fixes it.
 * - `"Other"` — not classified. Not known to be transient.
 *
 * @category errors
 * @since 0.1.0
 */
export const StoreErrorKind = Schema.Literals(["Busy", "Connection", "Constraint", "Data", "Config", "Other"])

/**
 * The kinds of `StoreError`; see `StoreErrorKind`.
 *
 * @category errors
 * @since 0.1.0
 */
export type StoreErrorKind = typeof StoreErrorKind.Type

/**
 * Whether a failure of this kind can go away by itself, so that retrying the
 * call can succeed (`"Busy"`, `"Connection"`).
 *
 * @category errors
 * @since 0.1.0
 */
export const isTransientKind = (kind: StoreErrorKind): boolean => kind === "Busy" || kind === "Connection"

/**
 * What `new StoreError(...)` takes: `kind` defaults to `"Other"`, and
 * `transient` to what the kind implies (`isTransientKind`).
 *
 * @category errors
 * @since 0.1.0
 */
export interface StoreErrorInput {
  readonly store: string
  readonly operation: string
  /** What went wrong, in words (the database's own message included). */
  readonly reason: string
  readonly kind?: StoreErrorKind | undefined
  readonly transient?: boolean | undefined
  readonly cause?: unknown
  /** Set when the failing call had already durably recorded its work (see `RecordedWork`). */
  readonly recorded?: RecordedWork | undefined
}

/**
 * A store could not do what was asked. `kind` says what kind of failure it is
 * and `transient` whether a retry can fix it; the message says both. When a
 * runtime call (`start`, `execute`, `resume`) fails with it after its work was
 * durably recorded, `recorded` names that work and the message says to await
 * it instead of retrying (whatever `transient` says of the store itself).
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  store: Schema.String,
  operation: Schema.String,
  reason: Schema.String,
  kind: StoreErrorKind,
  transient: Schema.Boolean,
  cause: Schema.optional(Schema.Defect()),
  recorded: Schema.optional(RecordedWork)
}) {
  constructor(input: StoreErrorInput) {
    const kind = input.kind ?? "Other"
    super({ ...input, kind, transient: input.transient ?? isTransientKind(kind) })
  }

  override get message() {
    const head = `${this.store}.${this.operation} failed (${this.kind}): ${this.reason}.`
    return this.recorded === undefined
      ? `${head} ${advice(this.kind, this.transient)}`
      : `${head} ${this.transient ? "The store fault is transient, yet retrying this call is wrong" : "The store fault is not transient"}. ${recordedAdvice(this.recorded)}`
  }
}

const advice = (kind: StoreErrorKind, transient: boolean): string => {
  if (transient) {
    return kind === "Busy"
      ? "Transient: the database was busy; the call can be retried."
      : "Transient: the store may be unreachable; the call can be retried."
  }
  switch (kind) {
    case "Constraint":
      return "Permanent: the database refused the write; retrying the same call fails the same way."
    case "Data":
      return "Permanent: the database cannot hold a value of this call; retrying it fails the same way — change the value."
    case "Config":
      return "Permanent: the database cannot work as configured; retrying does not help until it is fixed."
    default:
      return "Not known to be transient: look at the cause before retrying."
  }
}

/**
 * An argument given to a store or to the runtime is not acceptable; nothing
 * was written — unless `recorded` is set: then the runtime call had already
 * durably recorded its work (e.g. the execution started, and its output is
 * what the workflow's schema refused), and the message says to await it.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidInputError extends Schema.TaggedError<InvalidInputError>()("InvalidInputError", {
  operation: Schema.String,
  field: Schema.String,
  reason: Schema.String,
  recorded: Schema.optional(RecordedWork)
}) {
  override get message() {
    const head = `${this.operation}: \`${this.field}\` ${this.reason}.`
    return this.recorded === undefined
      ? `${head} Nothing was written; fix the argument and call again.`
      : `${head} ${recordedAdvice(this.recorded)}`
  }
}

/**
 * The same error, saying that `recorded` was durably written before it: a
 * `StoreError` or `InvalidInputError` gets the field (and its message says
 * to await, not retry); any other error is answered unchanged — its own
 * message already tells the truth (e.g. `LeaseLostError`: the execution goes
 * on elsewhere).
 *
 * @category errors
 * @since 0.1.0
 */
export const afterRecorded = (recorded: RecordedWork) => <E>(error: E): E => {
  if (error instanceof StoreError && error.recorded === undefined) {
    const { cause, kind, operation, reason, store, transient } = error
    return new StoreError({ store, operation, reason, kind, transient, cause, recorded }) as E
  }
  if (error instanceof InvalidInputError && error.recorded === undefined) {
    return new InvalidInputError({ operation: error.operation, field: error.field, reason: error.reason, recorded }) as E
  }
  return error
}

/**
 * A configuration value is missing or invalid; raised when a Layer is built.
 *
 * @category errors
 * @since 0.1.0
 */
export class BatonConfigError extends Schema.TaggedError<BatonConfigError>()("BatonConfigError", {
  field: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Invalid baton configuration: \`${this.field}\` ${this.reason}.`
  }
}

/**
 * The caller no longer holds the lease of the execution tree (taken over, expired or unconfirmed).
 *
 * @category errors
 * @since 0.1.0
 */
export class LeaseLostError extends Schema.TaggedError<LeaseLostError>()("LeaseLostError", {
  tenantId: Schema.String,
  rootExecutionId: Schema.String,
  holder: Schema.String,
  epoch: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `Instance ${this.holder} lost the lease of execution tree ${this.rootExecutionId} (tenant ${this.tenantId}, epoch ${this.epoch}): ${this.reason}. The execution is not failed; the instance holding the lease now moves it.`
  }
}

/**
 * The thread does not exist for this tenant (another tenant's thread is reported the same way).
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownThreadError extends Schema.TaggedError<UnknownThreadError>()("UnknownThreadError", {
  tenantId: Schema.String,
  threadId: Schema.String
}) {
  override get message() {
    return `No thread ${this.threadId} exists for tenant ${this.tenantId}. Check the thread id and the tenant it was created under.`
  }
}

/**
 * The thread belongs to another owner than the caller's `ownerId` (undefined:
 * the caller gave none, and the thread has an owner).
 *
 * @category errors
 * @since 0.1.0
 */
export class ThreadOwnerError extends Schema.TaggedError<ThreadOwnerError>()("ThreadOwnerError", {
  tenantId: Schema.String,
  threadId: Schema.String,
  ownerId: Schema.optional(Schema.String)
}) {
  override get message() {
    return this.ownerId === undefined
      ? `Thread ${this.threadId} (tenant ${this.tenantId}) has an owner and was asked for without an \`ownerId\`. Pass the ownerId the thread was started with.`
      : `Thread ${this.threadId} (tenant ${this.tenantId}) belongs to another owner than ${this.ownerId}. Call with the owner the thread was created with.`
  }
}

/**
 * The pause exists but is no longer pending (already answered, taken or withdrawn).
 *
 * @category errors
 * @since 0.1.0
 */
export class NotPausedError extends Schema.TaggedError<NotPausedError>()("NotPausedError", {
  tenantId: Schema.String,
  pauseId: Schema.String,
  status: Schema.String
}) {
  override get message() {
    return `Pause ${this.pauseId} (tenant ${this.tenantId}) is ${this.status}, not Pending: it was already answered or withdrawn. Read the thread's current pauses and answer one of those.`
  }
}

/**
 * No pause with this id exists for this tenant.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownPauseError extends Schema.TaggedError<UnknownPauseError>()("UnknownPauseError", {
  tenantId: Schema.String,
  pauseId: Schema.String
}) {
  override get message() {
    return `No pause ${this.pauseId} exists for tenant ${this.tenantId}. Use a pause id returned by execute or resume.`
  }
}

/**
 * User code tried to write a tree key under the runtime's reserved `@baton/` prefix.
 *
 * @category errors
 * @since 0.1.0
 */
export class ReservedKeyError extends Schema.TaggedError<ReservedKeyError>()("ReservedKeyError", {
  key: Schema.String
}) {
  override get message() {
    return `Tree key "${this.key}" starts with the reserved prefix "@baton/", which only the runtime may write. Choose another key.`
  }
}

/**
 * The execution was cancelled (by `cancel` on any instance).
 *
 * @category errors
 * @since 0.1.0
 */
export class ExecutionCancelledError extends Schema.TaggedError<ExecutionCancelledError>()("ExecutionCancelledError", {
  tenantId: Schema.String,
  executionId: Schema.String
}) {
  override get message() {
    return `Execution ${this.executionId} (tenant ${this.tenantId}) was cancelled.`
  }
}

/**
 * A step of the execution failed; the execution is recorded Failed.
 *
 * @category errors
 * @since 0.1.0
 */
export class ExecutionFailedError extends Schema.TaggedError<ExecutionFailedError>()("ExecutionFailedError", {
  tenantId: Schema.String,
  executionId: Schema.String,
  error: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `Execution ${this.executionId} (tenant ${this.tenantId}) failed: ${this.error}`
  }
}

/**
 * One undo that still failed after its last try (see `UndoFailedError`).
 *
 * @category models
 * @since 0.1.0
 */
export const FailedUndo = Schema.Struct({
  node: Schema.String,
  /** The idempotency key of the step it undoes. */
  stepIdempotencyKey: Schema.String,
  attempts: Schema.Number,
  error: Schema.String
})

/**
 * Undos of an execution failed after their last try (`BatonConfig.undoAttempts`):
 * the execution ended Failed with its original error and these; the other
 * undos still ran. Found as the `cause` of the `ExecutionFailedError`. What
 * the failed undos did must be put right by hand (their idempotency keys
 * are here).
 *
 * @category errors
 * @since 0.1.0
 */
export class UndoFailedError extends Schema.TaggedError<UndoFailedError>()("UndoFailedError", {
  tenantId: Schema.String,
  executionId: Schema.String,
  /** Why the execution unwound, and its original error. */
  reason: Schema.String,
  original: Schema.String,
  failed: Schema.Array(FailedUndo)
}) {
  override get message() {
    const list = this.failed.map((f) => `step "${f.node}" (key ${f.stepIdempotencyKey}) after ${f.attempts} tries: ${f.error}`).join("; ")
    return `Execution ${this.executionId} (tenant ${this.tenantId}) ended ${this.reason} (${this.original}) and ${this.failed.length} undo(s) failed: ${list}. Put them right by hand.`
  }
}

/**
 * The thread already has an execution running or paused; resume or cancel it before starting another.
 *
 * @category errors
 * @since 0.1.0
 */
export class ThreadBusyError extends Schema.TaggedError<ThreadBusyError>()("ThreadBusyError", {
  tenantId: Schema.String,
  threadId: Schema.String,
  executionId: Schema.String,
  status: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} (tenant ${this.tenantId}) has execution ${this.executionId} ${this.status}. Resume or cancel it before starting another on this thread.`
  }
}

/**
 * The tenant runs as many execution trees as its quota allows (fleet-wide),
 * and the call chose not to wait (`onOverQuota: "fail"`, `onFull: "fail"`)
 * or waited its `timeout`. Nothing was started.
 *
 * @category errors
 * @since 0.1.0
 */
export class TenantQuotaExceededError extends Schema.TaggedError<TenantQuotaExceededError>()("TenantQuotaExceededError", {
  tenantId: Schema.String,
  cap: Schema.Number,
  waitedMillis: Schema.Number
}) {
  override get message() {
    return `Tenant ${this.tenantId} already runs ${this.cap} execution trees (its quota) across the instances; nothing was started. Retry later, wait for a permit (onOverQuota / onFull: "wait"), or raise the quota.`
  }
}

/**
 * No workflow of this name is registered with the instance — or none with
 * this config hash: a graph is matched by name and config hash (`configHash`
 * the one asked for, `registeredHash` the one this instance runs).
 * `launchedBy` is the workflow whose step launched it as a child: a child is
 * registered by being declared in that workflow's `children`.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownWorkflowError extends Schema.TaggedError<UnknownWorkflowError>()("UnknownWorkflowError", {
  workflowName: Schema.String,
  configHash: Schema.optional(Schema.String),
  registeredHash: Schema.optional(Schema.String),
  launchedBy: Schema.optional(Schema.String)
}) {
  override get message() {
    if (this.launchedBy !== undefined) return this.childMessage(this.launchedBy)
    if (this.registeredHash === undefined) {
      return `No workflow named "${this.workflowName}" is registered with this instance. Add it to the workflows given to Baton.layer.`
    }
    return `Workflow "${this.workflowName}" with config hash ${this.configHash} is not registered with this instance, which runs "${this.workflowName}" with config hash ${this.registeredHash}: a graph is matched by name and config hash (name, version, graph shape, children). Nothing was written; send the call to an instance running that config, or deploy the same workflow everywhere (Workflow.make with resumeAnyway lets an instance continue executions started under another hash).`
  }

  private childMessage(parent: string) {
    const declare = `declare it in the \`children\` of workflow "${parent}" (Workflow.make({ name: "${parent}", …, children: [${this.workflowName}] })): a workflow's declared children are registered with it`
    if (this.registeredHash === undefined) {
      return `A step of workflow "${parent}" launched children of workflow "${this.workflowName}", which is not registered with this instance: ${declare}. No child was started.`
    }
    return `A step of workflow "${parent}" launched children of workflow "${this.workflowName}" with config hash ${this.configHash}, but this instance registers "${this.workflowName}" with config hash ${this.registeredHash}: launch the very workflow declared in the \`children\` of "${parent}" (the same Workflow.make result), or ${declare}. No child was started.`
  }
}

/**
 * The instance is closing: the call was not started, or its pass was interrupted (the execution stays running for another instance).
 *
 * @category errors
 * @since 0.1.0
 */
export class InstanceStoppingError extends Schema.TaggedError<InstanceStoppingError>()("InstanceStoppingError", {
  instanceId: Schema.String
}) {
  override get message() {
    return `Instance ${this.instanceId} is stopping. Its running executions stay running and another instance continues them; send new calls elsewhere.`
  }
}

/**
 * A request idempotency key was used again for another request (another
 * workflow, config, input or thread for `start`/`execute`; another pause or
 * decision for `resume`): refused, never mapped to the first. Nothing was
 * written.
 *
 * @category errors
 * @since 0.1.0
 */
export class RequestConflictError extends Schema.TaggedError<RequestConflictError>()("RequestConflictError", {
  tenantId: Schema.String,
  requestKey: Schema.String
}) {
  override get message() {
    return `Request key "${this.requestKey}" (tenant ${this.tenantId}) was already used for a different request (another workflow, input, thread, pause or decision). Nothing was written; use a new key for a new request.`
  }
}

/** A pseudonym token that the execution's key does not decode: made by another execution, or not a token. */
export class PseudonymError extends Schema.TaggedError<PseudonymError>()("PseudonymError", {
  executionId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `This token cannot be re-identified in execution ${this.executionId}: ${this.reason}. A token decodes only in the execution (tree) that made it.`
  }
}

/**
 * No execution with this id exists for this tenant (another tenant's execution is reported the same way).
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownExecutionError extends Schema.TaggedError<UnknownExecutionError>()("UnknownExecutionError", {
  tenantId: Schema.String,
  executionId: Schema.String
}) {
  override get message() {
    return `No execution ${this.executionId} exists for tenant ${this.tenantId}. Use an execution id returned by start, and the tenant it was started under.`
  }
}

/**
 * `await` gave up waiting: the execution is still running (nothing was changed).
 *
 * @category errors
 * @since 0.1.0
 */
export class AwaitTimeoutError extends Schema.TaggedError<AwaitTimeoutError>()("AwaitTimeoutError", {
  tenantId: Schema.String,
  executionId: Schema.String,
  timeoutMillis: Schema.Number
}) {
  override get message() {
    return `Execution ${this.executionId} (tenant ${this.tenantId}) was still running after ${this.timeoutMillis} ms. It goes on; await it again, or read its status.`
  }
}

/**
 * What `Baton.execute` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type ExecuteError =
  | LeaseLostError
  | ExecutionCancelledError
  | InstanceStoppingError
  | ExecutionFailedError
  | StoreError
  | InvalidInputError
  | UnknownThreadError
  | ThreadOwnerError
  | ThreadBusyError
  | UnknownWorkflowError
  | RequestConflictError
  | TenantQuotaExceededError

/**
 * What `Baton.resume` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type ResumeError = ExecuteError | NotPausedError | UnknownPauseError

/**
 * What `Baton.cancel` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type CancelError = StoreError | InvalidInputError | UnknownThreadError | ThreadOwnerError | InstanceStoppingError

/**
 * What the reads (`Baton.status`, `Baton.list`, `Baton.pendingPauses`) fail with.
 *
 * @category errors
 * @since 0.1.0
 */
export type ReadError = StoreError | InvalidInputError | UnknownExecutionError | UnknownThreadError | ThreadOwnerError

/**
 * What `Baton.await` fails with: the execution's own end (failed, cancelled)
 * or the wait's.
 *
 * @category errors
 * @since 0.1.0
 */
export type AwaitError =
  | ReadError
  | ExecutionFailedError
  | ExecutionCancelledError
  | AwaitTimeoutError
  | UnknownWorkflowError
  | InstanceStoppingError
