/**
 * The errors of the store contracts: what a store call (and the argument
 * checks at every boundary) fails with. Each has a stable `_tag` and a
 * message that says what to do about it. The runtime's own errors are in
 * `runtime/Errors.ts`.
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

const reasonFields = {
  /** What went wrong, in words (the database's own message included). */
  description: Schema.String
}

/**
 * The database was locked or busy (lock timeout, deadlock, serialization
 * failure, statement timeout). Retryable.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreBusy extends Schema.TaggedError<StoreBusy>()("Busy", reasonFields) {
  get isRetryable(): boolean { return true }
}

/**
 * The database could not be reached or the connection broke. Retryable.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreConnection extends Schema.TaggedError<StoreConnection>()("Connection", reasonFields) {
  get isRetryable(): boolean { return true }
}

/**
 * A uniqueness or other constraint refused the write. Not retryable: the
 * same call fails the same way.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreConstraint extends Schema.TaggedError<StoreConstraint>()("Constraint", reasonFields) {
  get isRetryable(): boolean { return false }
}

/**
 * A value the database cannot hold (a NUL byte, numeric overflow, invalid
 * text, a value too long to index). Not retryable.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreData extends Schema.TaggedError<StoreData>()("Data", reasonFields) {
  get isRetryable(): boolean { return false }
}

/**
 * The database cannot work as configured (not a database, a read-only file,
 * a missing schema or table, a refused login, a SQLite file deleted or
 * replaced while open). Not retryable until an operator fixes it.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreConfig extends Schema.TaggedError<StoreConfig>()("Config", reasonFields) {
  get isRetryable(): boolean { return false }
}

/**
 * A failure nobody classified. Not known to be retryable.
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreOther extends Schema.TaggedError<StoreOther>()("Other", reasonFields) {
  get isRetryable(): boolean { return false }
}

/**
 * Why a `StoreError` happened: one of the kinds of `StoreErrorKind`, each
 * saying whether a retry can fix it (`isRetryable`), as effect's `SqlError`
 * says of its reasons.
 *
 * @category errors
 * @since 0.1.0
 */
export const StoreErrorReason = Schema.Union([StoreBusy, StoreConnection, StoreConstraint, StoreData, StoreConfig, StoreOther])

/**
 * See `StoreErrorReason`.
 *
 * @category errors
 * @since 0.1.0
 */
export type StoreErrorReason = typeof StoreErrorReason.Type

const reasonClasses = { Busy: StoreBusy, Connection: StoreConnection, Constraint: StoreConstraint, Data: StoreData, Config: StoreConfig, Other: StoreOther }

/**
 * The reason of kind `kind` described by `description`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const storeErrorReason = (kind: StoreErrorKind, description: string): StoreErrorReason => new reasonClasses[kind]({ description })

/**
 * What `new StoreError(...)` takes: `reason` is the reason itself, or its
 * description in words with `kind` (default `"Other"`).
 *
 * @category errors
 * @since 0.1.0
 */
export interface StoreErrorInput {
  readonly store: string
  readonly operation: string
  /** Why it failed: a `StoreErrorReason`, or what went wrong in words (the database's own message included). */
  readonly reason: StoreErrorReason | string
  /** The kind of a reason given in words (default `"Other"`). */
  readonly kind?: StoreErrorKind | undefined
  readonly cause?: unknown
  /** Set when the failing call had already durably recorded its work (see `RecordedWork`). */
  readonly recorded?: RecordedWork | undefined
}

/**
 * A store could not do what was asked. `reason` says what kind of failure
 * it is and whether a retry can fix it (`isRetryable`; `kind` and
 * `transient` read the same); the message says both. When a runtime call
 * (`start`, `execute`, `resume`) fails with it after its work was durably
 * recorded, `recorded` names that work and the message says to await it
 * instead of retrying (whatever the reason says of the store itself).
 *
 * @category errors
 * @since 0.1.0
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  store: Schema.String,
  operation: Schema.String,
  reason: StoreErrorReason,
  cause: Schema.optional(Schema.Defect()),
  recorded: Schema.optional(RecordedWork)
}) {
  constructor(input: StoreErrorInput) {
    const { kind, reason, ...rest } = input
    super({ ...rest, reason: typeof reason === "string" ? storeErrorReason(kind ?? "Other", reason) : reason })
  }

  /** The reason's kind (`reason._tag`). */
  get kind(): StoreErrorKind {
    return this.reason._tag
  }

  /** Whether retrying the call can succeed (`reason.isRetryable`). */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }

  /** The same as `isRetryable`. */
  get transient(): boolean {
    return this.reason.isRetryable
  }

  override get message() {
    const head = `${this.store}.${this.operation} failed (${this.kind}): ${this.reason.description}.`
    return this.recorded === undefined
      ? `${head} ${advice(this.kind, this.transient)}`
      : `${head} ${this.transient ? "The store fault is transient, yet retrying this call is wrong" : "The store fault is not transient"}. ${recordedAdvice(this.recorded)}`
  }
}

const advice = (kind: StoreErrorKind, transient: boolean): string => {
  if (transient) {
    return kind === "Busy"
      ? "Transient: the database was busy, or other calls raced this one; the call can be retried."
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
    const { cause, operation, reason, store } = error
    return new StoreError({ store, operation, reason, cause, recorded }) as E
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
