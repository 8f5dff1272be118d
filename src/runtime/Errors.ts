/**
 * The runtime's errors: what `Baton`'s calls fail with beyond the store
 * errors (`stores/Errors.ts`), and the unions each call answers. Each has a
 * stable `_tag` and a message that says what to do about it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type {
  InvalidInputError,
  LeaseLostError,
  NotPausedError,
  RequestConflictError,
  StoreError,
  UnknownPauseError
} from "../stores/Errors.ts"
/**
 * A free-text reply to a pause that the workflow's interpreter could not
 * map to a decision. Nothing was written: the pause is still pending.
 *
 * @category errors
 * @since 0.1.0
 */
export class ReplyNotUnderstoodError extends Schema.TaggedError<ReplyNotUnderstoodError>()("ReplyNotUnderstoodError", {
  tenantId: Schema.String,
  pauseId: Schema.String,
  /** What the interpreter says it could not read (shown to whoever replied). */
  reason: Schema.String
}) {
  override get message() {
    return `The reply to pause ${this.pauseId} (tenant ${this.tenantId}) could not be read as a decision: ${this.reason}. Nothing was written and the pause is still pending: reply again more plainly, or give a decision.`
  }
}

/**
 * The workflow's interpreter failed while reading a free-text reply (its
 * model call failed, a budget or limit refused it). Nothing was written: the
 * pause is still pending.
 *
 * @category errors
 * @since 0.1.0
 */
export class ReplyInterpretationFailedError extends Schema.TaggedError<ReplyInterpretationFailedError>()("ReplyInterpretationFailedError", {
  tenantId: Schema.String,
  pauseId: Schema.String,
  /** The interpreter's failure: its tag and message. */
  cause: Schema.String
}) {
  override get message() {
    return `Reading the reply to pause ${this.pauseId} (tenant ${this.tenantId}) failed: ${this.cause}. Nothing was written and the pause is still pending: retry once what failed (a provider, a budget) allows it, or give a decision.`
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
 * `deleteThread` was refused: a tree of the thread is held (a pass moves it
 * on some instance, or a resume took it). Nothing was deleted. Wait for it
 * to rest, cancel it, or call `deleteThread` with `cancelFirst: true`.
 *
 * @category errors
 * @since 0.1.0
 */
export class ThreadHeldError extends Schema.TaggedError<ThreadHeldError>()("ThreadHeldError", {
  tenantId: Schema.String,
  threadId: Schema.String,
  executionId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} (tenant ${this.tenantId}) was not deleted: its execution ${this.executionId} is held by a pass. Wait for it to rest, cancel it, or call deleteThread with cancelFirst: true.`
  }
}

/**
 * `fork` named a checkpoint the thread does not hold (never written, pruned
 * by retention, or another tenant's). Nothing was started; list the
 * thread's checkpoints with `Baton.checkpoints`.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownCheckpointError extends Schema.TaggedError<UnknownCheckpointError>()("UnknownCheckpointError", {
  tenantId: Schema.String,
  threadId: Schema.String,
  checkpointNs: Schema.String,
  checkpointId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} (tenant ${this.tenantId}) holds no checkpoint ${this.checkpointId}${this.checkpointNs === "" ? "" : ` in namespace ${this.checkpointNs}`}: it was never written or retention deleted it. Nothing was started; list the thread's checkpoints with Baton.checkpoints.`
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
export type ResumeError =
  | ExecuteError
  | NotPausedError
  | UnknownPauseError
  | UnknownExecutionError
  | ReplyNotUnderstoodError
  | ReplyInterpretationFailedError

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

/**
 * A signal to a thread with no Running or Paused execution: it finished,
 * failed or was cancelled (or never ran). Nothing was written.
 *
 * @category errors
 * @since 0.1.0
 */
export class ThreadNotRunningError extends Schema.TaggedError<ThreadNotRunningError>()("ThreadNotRunningError", {
  tenantId: Schema.String,
  threadId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} (tenant ${this.tenantId}) has no running or paused execution to take a signal: it ended. Nothing was written; start a new execution on the thread to signal it.`
  }
}

/**
 * A signal whose name the thread's workflow does not declare in `signals`. Nothing was written.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownSignalError extends Schema.TaggedError<UnknownSignalError>()("UnknownSignalError", {
  workflowName: Schema.String,
  name: Schema.String,
  declared: Schema.Array(Schema.String)
}) {
  override get message() {
    return this.declared.length === 0
      ? `Workflow "${this.workflowName}" declares no signals, so "${this.name}" cannot be sent to it. Declare it in Workflow.make({ …, signals: { ${JSON.stringify(this.name)}: schema } }). Nothing was written.`
      : `Workflow "${this.workflowName}" declares no signal "${this.name}" (it declares ${this.declared.map((d) => JSON.stringify(d)).join(", ")}). Send one of those, or declare it in the workflow's \`signals\`. Nothing was written.`
  }
}

/**
 * What `Baton.signal` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type SignalError =
  | StoreError
  | InvalidInputError
  | UnknownThreadError
  | ThreadOwnerError
  | ThreadNotRunningError
  | UnknownSignalError
  | UnknownWorkflowError
  | InstanceStoppingError

/**
 * No schedule with this id exists for the tenant (another tenant's schedule is reported the same way).
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownScheduleError extends Schema.TaggedError<UnknownScheduleError>()("UnknownScheduleError", {
  tenantId: Schema.String,
  scheduleId: Schema.String
}) {
  override get message() {
    return `No schedule ${this.scheduleId} exists for tenant ${this.tenantId}. Check the id and the tenant it was created under (Schedules.list shows them).`
  }
}

/**
 * The schedule belongs to another owner than the caller's `ownerId` (undefined: the caller gave none, and the schedule has an owner).
 *
 * @category errors
 * @since 0.1.0
 */
export class ScheduleOwnerError extends Schema.TaggedError<ScheduleOwnerError>()("ScheduleOwnerError", {
  tenantId: Schema.String,
  scheduleId: Schema.String,
  ownerId: Schema.optional(Schema.String)
}) {
  override get message() {
    return `Schedule ${this.scheduleId} (tenant ${this.tenantId}) belongs to another owner than ${this.ownerId ?? "the caller (who gave no ownerId)"}. Call with the owner it was created with.`
  }
}

/**
 * A schedule with this id already exists for the tenant with another definition (a create of the same definition answers the kept one).
 *
 * @category errors
 * @since 0.1.0
 */
export class ScheduleExistsError extends Schema.TaggedError<ScheduleExistsError>()("ScheduleExistsError", {
  tenantId: Schema.String,
  scheduleId: Schema.String
}) {
  override get message() {
    return `Schedule ${this.scheduleId} (tenant ${this.tenantId}) already exists with another definition. Delete it first to replace it, or pick another id.`
  }
}

/**
 * What the calls of `Schedules` (create, get, list, pause, resume, delete) fail with.
 *
 * @category errors
 * @since 0.1.0
 */
export type ScheduleError = StoreError | InvalidInputError | UnknownScheduleError | ScheduleOwnerError | ScheduleExistsError

/**
 * What `Baton.deleteThread` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type DeleteThreadError = CancelError | ThreadHeldError

/**
 * What `Baton.fork` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type ForkError = ResumeError | UnknownCheckpointError

/**
 * What `Baton.copyThread` fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type CopyThreadError = DeleteThreadError
