/**
 * The HTTP status of every error a call of `Baton` can fail with, in one
 * table over the calls' error unions: an error added to a union without a
 * status here fails the typecheck, so none falls through to 500 unseen.
 *
 * @since 0.1.0
 */
import type {
  AwaitError,
  CancelError,
  DeleteThreadError,
  ExecuteError,
  ForkError,
  ReadError,
  ResumeError,
  ScheduleError,
  SignalError
} from "../../runtime/Errors.ts"

/** Every error a call answers. */
type CallError = ExecuteError | ResumeError | CancelError | ReadError | AwaitError | SignalError | ScheduleError | DeleteThreadError | ForkError

/** An error's status: a number, or one read from the error itself. */
type Status<E> = number | ((error: E) => number)

const table: { readonly [T in CallError["_tag"]]: Status<Extract<CallError, { readonly _tag: T }>> } = {
  InvalidInputError: 400,
  UnknownWorkflowError: 400,
  ThreadOwnerError: 403,
  UnknownThreadError: 404,
  UnknownExecutionError: 404,
  UnknownPauseError: 404,
  UnknownCheckpointError: 404,
  ThreadBusyError: 409,
  NotPausedError: 409,
  RequestConflictError: 409,
  ThreadHeldError: 409,
  ExecutionFailedError: 422,
  ExecutionCancelledError: 422,
  ReplyNotUnderstoodError: 422,
  // The interpreter's model or limits failed: a retry later may read it.
  ReplyInterpretationFailedError: 503,
  TenantQuotaExceededError: 429,
  InstanceStoppingError: 503,
  LeaseLostError: 503,
  // No route awaits; a call that did reports an execution still running as the server's failure to answer in time.
  AwaitTimeoutError: 500,
  // A store fault a retry can fix is the service being unavailable; any other is the server's own failure.
  StoreError: (e) => e.isRetryable ? 503 : 500,
  UnknownSignalError: 400,
  ThreadNotRunningError: 409,
  UnknownScheduleError: 404,
  ScheduleOwnerError: 403,
  ScheduleExistsError: 409
}

/**
 * The status `error` answers with: its tag's entry in the table, 500 for
 * anything else (a defect, an error no call declares).
 *
 * @category errors
 * @since 0.1.0
 */
export const statusOf = (error: { readonly _tag: string; readonly isRetryable?: boolean }): number => {
  const status = (table as Record<string, Status<never> | undefined>)[error._tag]
  if (status === undefined) return 500
  return typeof status === "number" ? status : status(error as never)
}
