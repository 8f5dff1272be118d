/**
 * Argument checks shared by every store contract's `make`, so that every
 * backend — ours or a user's — rejects the same bad input the same way,
 * before anything is written.
 */
import type { Duration, SchemaIssue } from "effect"
import { Cause, Effect, Schema } from "effect"
import { InvalidInputError } from "../Errors.ts"
import { millisOf } from "./options.ts"
import { Id, maxIdLength, Text } from "../Ids.ts"
import type { Lease } from "../Lease.ts"

type Check = Effect.Effect<void, InvalidInputError>

const fail = (operation: string, field: string, reason: string): Check =>
  Effect.fail(new InvalidInputError({ operation, field, reason }))

/** Re-exported for the checks outside the contracts (config, workflow names). */
export { illFormedReason, isWellFormed } from "../Ids.ts"

/**
 * The first message a schema gives for a value it refuses (the texts the
 * `Text` and `Id` schemas carry: what the value must be, and what it held).
 */
const reasonOf = (schema: Schema.Decoder<unknown>, value: unknown, otherwise: string): string => {
  const exit = Schema.decodeUnknownExit(schema)(value)
  if (exit._tag === "Success") return otherwise
  const error = Cause.findErrorOption(exit.cause)
  const issue = error._tag === "Some" && Schema.isSchemaError(error.value) ? error.value.issue : undefined
  const message = issue === undefined ? undefined : firstMessage(issue)
  return message ?? otherwise
}

const firstMessage = (issue: SchemaIssue.Issue): string | undefined => {
  switch (issue._tag) {
    case "Filter":
      return issue.issue._tag === "InvalidValue" && typeof issue.issue.annotations?.message === "string"
        ? issue.issue.annotations.message
        : firstMessage(issue.issue)
    case "Composite":
      return issue.issues.length > 0 ? firstMessage(issue.issues[0]) : undefined
    case "Pointer":
      return firstMessage(issue.issue)
    case "InvalidValue":
      return typeof issue.annotations?.message === "string" ? issue.annotations.message : undefined
    default:
      return undefined
  }
}

const isText = Schema.is(Text)
const isId = Schema.is(Id)

/**
 * A key or id, checked by the `Id` schema: every string a store contract
 * checks with this is one it keys or indexes, so it must be non-empty, at
 * most {@link maxIdLength} characters, hold no NUL and be well-formed
 * Unicode — what every backend can index and compare the same way.
 */
export const nonEmpty = (operation: string, field: string, value: unknown): Check =>
  isId(value)
    ? Effect.void
    : fail(operation, field, typeof value !== "string" ? "must be a non-empty string" : reasonOf(Id, value, "must be a non-empty string"))

/**
 * A text a store compares by that may be empty (a key prefix), checked by
 * the `Text` schema: a string, with no NUL, well-formed Unicode.
 */
export const text = (operation: string, field: string, value: unknown): Check =>
  isText(value) ? Effect.void : fail(operation, field, typeof value !== "string" ? "must be a string" : reasonOf(Text, value, "must be a string"))

export const positiveMillis = (operation: string, field: string, value: unknown): Check =>
  typeof value === "number" && Number.isFinite(value) && value > 0
    ? Effect.void
    : fail(operation, field, "must be a finite number of milliseconds greater than 0")

export const time = (operation: string, field: string, value: unknown): Check =>
  typeof value === "number" && Number.isFinite(value) && value >= 0
    ? Effect.void
    : fail(operation, field, "must be a finite epoch-milliseconds time (from the Clock) ≥ 0")

export const wholeAtLeast = (operation: string, field: string, value: unknown, min: number): Check =>
  typeof value === "number" && Number.isInteger(value) && value >= min
    ? Effect.void
    : fail(operation, field, `must be a whole number ≥ ${min}`)

export const nonNegative = (operation: string, field: string, value: unknown): Check =>
  typeof value === "number" && Number.isFinite(value) && value >= 0
    ? Effect.void
    : fail(operation, field, "must be a finite number ≥ 0")

export const oneOf = <A extends string>(operation: string, field: string, value: unknown, allowed: ReadonlyArray<A>): Check =>
  allowed.includes(value as A) ? Effect.void : fail(operation, field, `must be one of ${allowed.join(", ")}`)

/** The value must survive a JSON round trip (what every durable store keeps). */
export const json = (operation: string, field: string, value: unknown): Check =>
  Effect.suspend(() => {
    try {
      return JSON.stringify(value) === undefined ? fail(operation, field, "must be a JSON value (got undefined or a function)") : Effect.void
    } catch (e) {
      return fail(operation, field, `must be a JSON value (${e instanceof Error ? e.message : String(e)})`)
    }
  })

/**
 * Runs every check in order, then the backend's effect — built only once the
 * checks passed, so a backend never sees (or chokes on) rejected input.
 */
export const checked = <A, E, R>(checks: ReadonlyArray<Check>, effect: () => Effect.Effect<A, E, R>) =>
  Effect.andThen(Effect.all(checks, { discard: true }), Effect.suspend(effect))

export const atLeast = (operation: string, field: string, value: unknown, min: number): Check =>
  typeof value === "number" && Number.isFinite(value) && value >= min
    ? Effect.void
    : fail(operation, field, `must be a finite number ≥ ${min}`)

/** A UTC calendar day, `YYYY-MM-DD`. */
export const day = (operation: string, field: string, value: unknown): Check =>
  typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value))
    ? Effect.void
    : fail(operation, field, "must be a UTC day written YYYY-MM-DD")

/** A list of UTC days (see `day`). */
export const days = (operation: string, field: string, value: unknown): Check =>
  !Array.isArray(value)
    ? fail(operation, field, "must be a list of UTC days written YYYY-MM-DD")
    : Effect.forEach(value, (d) => day(operation, field, d), { discard: true })

/** A list of at most `max` keys (see `nonEmpty`). */
export const keys = (operation: string, field: string, value: unknown, max: number): Check =>
  !Array.isArray(value)
    ? fail(operation, field, "must be a list of keys")
    : value.length > max
    ? fail(operation, field, `must hold at most ${max} keys (got ${value.length})`)
    : Effect.forEach(value, (k) => nonEmpty(operation, field, k), { discard: true })

/**
 * A value as an error text shows it: JSON, else its string form (a BigInt, a symbol, a function, a cycle).
 *
 * @category internal
 * @since 0.1.0
 */
export const shown = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return typeof value === "bigint" ? `${value}n` : String(value)
  }
}

/**
 * A duration argument (a timeout) in milliseconds: a `Duration.Input` of at
 * least 0 (not NaN), else `InvalidInputError` naming it with an example.
 *
 * @category internal
 * @since 0.1.0
 */
export const durationMillis = (operation: string, field: string, value: Duration.Input): Effect.Effect<number, InvalidInputError> => {
  // the package's one reading of durations (a NaN number stays NaN: refused, like every NaN option)
  const millis = millisOf(value) ?? Number.NaN
  return millis >= 0
    ? Effect.succeed(millis)
    : Effect.fail(new InvalidInputError({ operation, field, reason: `must be a duration ≥ 0, e.g. "25 seconds" or 25000 (got ${shown(value)})` }))
}

/**
 * The checks of several keys or ids of one call at once, each named by its
 * field: `ids("LeaseStore.get", { tenantId, rootExecutionId: root })` is
 * `nonEmpty` for each, in order.
 */
export const ids = (operation: string, fields: Readonly<Record<string, unknown>>): Array<Check> =>
  Object.entries(fields).map(([field, value]) => nonEmpty(operation, field, value))

/** A boolean. */
export const boolean = (operation: string, field: string, value: unknown): Check =>
  typeof value === "boolean" ? Effect.void : fail(operation, field, "must be true or false")

/** Checks of a lease passed back to a store (renew, release, fenced writes). */
export const lease = (operation: string, lease: Lease) => [
  nonEmpty(operation, "lease.tenantId", lease?.tenantId),
  nonEmpty(operation, "lease.rootExecutionId", lease?.rootExecutionId),
  nonEmpty(operation, "lease.holder", lease?.holder),
  wholeAtLeast(operation, "lease.epoch", lease?.epoch, 1)
]
