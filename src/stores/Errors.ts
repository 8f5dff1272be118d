/**
 * Every error baton raises. Each has a stable `_tag` and a message that says
 * what to do about it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** A store could not do what was asked (unreachable, failed query, …). Retryable. */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  store: Schema.String,
  operation: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  override get message() {
    return `${this.store}.${this.operation} failed: ${this.reason}. The store may be unreachable; the call can be retried.`
  }
}

/** An argument given to a store or to the runtime is not acceptable; nothing was written. */
export class InvalidInputError extends Schema.TaggedError<InvalidInputError>()("InvalidInputError", {
  operation: Schema.String,
  field: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.operation}: \`${this.field}\` ${this.reason}. Nothing was written; fix the argument and call again.`
  }
}

/** A configuration value is missing or invalid; raised when a Layer is built. */
export class BatonConfigError extends Schema.TaggedError<BatonConfigError>()("BatonConfigError", {
  field: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Invalid baton configuration: \`${this.field}\` ${this.reason}.`
  }
}

/** The caller no longer holds the lease of the execution tree (taken over, expired or unconfirmed). */
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

/** The thread does not exist for this tenant (another tenant's thread is reported the same way). */
export class UnknownThreadError extends Schema.TaggedError<UnknownThreadError>()("UnknownThreadError", {
  tenantId: Schema.String,
  threadId: Schema.String
}) {
  override get message() {
    return `No thread ${this.threadId} exists for tenant ${this.tenantId}. Check the thread id and the tenant it was created under.`
  }
}

/** The thread belongs to another owner. */
export class ThreadOwnerError extends Schema.TaggedError<ThreadOwnerError>()("ThreadOwnerError", {
  tenantId: Schema.String,
  threadId: Schema.String,
  ownerId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} (tenant ${this.tenantId}) belongs to another owner than ${this.ownerId}. Call with the owner the thread was created with.`
  }
}

/** The pause exists but is no longer pending (already answered, taken or withdrawn). */
export class NotPausedError extends Schema.TaggedError<NotPausedError>()("NotPausedError", {
  tenantId: Schema.String,
  pauseId: Schema.String,
  status: Schema.String
}) {
  override get message() {
    return `Pause ${this.pauseId} (tenant ${this.tenantId}) is ${this.status}, not Pending: it was already answered or withdrawn. Read the thread's current pauses and answer one of those.`
  }
}

/** No pause with this id exists for this tenant. */
export class UnknownPauseError extends Schema.TaggedError<UnknownPauseError>()("UnknownPauseError", {
  tenantId: Schema.String,
  pauseId: Schema.String
}) {
  override get message() {
    return `No pause ${this.pauseId} exists for tenant ${this.tenantId}. Use a pause id returned by execute or resume.`
  }
}

/** User code tried to write a tree key under the runtime's reserved `@baton/` prefix. */
export class ReservedKeyError extends Schema.TaggedError<ReservedKeyError>()("ReservedKeyError", {
  key: Schema.String
}) {
  override get message() {
    return `Tree key "${this.key}" starts with the reserved prefix "@baton/", which only the runtime may write. Choose another key.`
  }
}

/** The execution was cancelled (by `cancel` on any instance). */
export class ExecutionCancelledError extends Schema.TaggedError<ExecutionCancelledError>()("ExecutionCancelledError", {
  tenantId: Schema.String,
  executionId: Schema.String
}) {
  override get message() {
    return `Execution ${this.executionId} (tenant ${this.tenantId}) was cancelled.`
  }
}

/** A step of the execution failed; the execution is recorded Failed. */
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

/** The thread already has an execution running or paused; resume or cancel it before starting another. */
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

/** No workflow of this name is registered with the instance. */
export class UnknownWorkflowError extends Schema.TaggedError<UnknownWorkflowError>()("UnknownWorkflowError", {
  workflowName: Schema.String
}) {
  override get message() {
    return `No workflow named "${this.workflowName}" is registered with this instance. Add it to the workflows given to Baton.layer.`
  }
}

/** The instance is closing: the call was not started, or its pass was interrupted (the execution stays running for another instance). */
export class InstanceStoppingError extends Schema.TaggedError<InstanceStoppingError>()("InstanceStoppingError", {
  instanceId: Schema.String
}) {
  override get message() {
    return `Instance ${this.instanceId} is stopping. Its running executions stay running and another instance continues them; send new calls elsewhere.`
  }
}

/** A request idempotency key was used again for another request (another workflow or input): refused, never mapped to the first. */
export class RequestConflictError extends Schema.TaggedError<RequestConflictError>()("RequestConflictError", {
  tenantId: Schema.String,
  requestKey: Schema.String
}) {
  override get message() {
    return `Request key "${this.requestKey}" (tenant ${this.tenantId}) was already used for a different request (another workflow or input). Use a new key for a new request.`
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
