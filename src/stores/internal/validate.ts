/**
 * Argument checks shared by every store contract's `make`, so that every
 * backend — ours or a user's — rejects the same bad input the same way,
 * before anything is written.
 */
import type { Duration } from "effect"
import { Effect } from "effect"
import { InvalidInputError } from "../Errors.ts"
import { millisOf } from "./options.ts"
import { maxIdLength } from "../Ids.ts"

type Check = Effect.Effect<void, InvalidInputError>

const fail = (operation: string, field: string, reason: string): Check =>
  Effect.fail(new InvalidInputError({ operation, field, reason }))

/**
 * A key or id: every string a store contract checks with this is one it keys
 * or indexes, so it must be non-empty, at most {@link maxIdLength} characters
 * and hold no NUL — what every backend can index.
 */
export const nonEmpty = (operation: string, field: string, value: unknown): Check =>
  typeof value !== "string" || value.length === 0
    ? fail(operation, field, "must be a non-empty string")
    : value.length > maxIdLength
    ? fail(operation, field, `must be at most ${maxIdLength} characters (got ${value.length})`)
    : value.includes("\u0000")
    ? fail(operation, field, "must not contain a NUL character")
    : Effect.void

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
