/**
 * The check every options object of the public Layers shares (`Baton.layer`,
 * the store bundles of every backend, the limiter Layers): an object, and
 * no field outside the ones the Layer reads — a misspelt option (`pth`,
 * `synchronus`) would otherwise be ignored and its default used. A refusal
 * is a `BatonConfigError` naming the field and, when one known field is
 * close to it, the field it probably meant.
 *
 * And the checks of the options' values, one for each kind (a duration, a
 * whole number, a boolean, a text, a choice, a lease), so that every Layer
 * and every limit call refuses a value in the same words: the field, what
 * it was, and the range it may take.
 */
import { Duration, Effect, Layer, Option } from "effect"
import { BatonConfigError, InvalidInputError } from "../Errors.ts"

/**
 * The names of an options type, listed once as the keys of a record: the
 * compiler then refuses a list that misses a field the type has.
 *
 * @category internal
 * @since 0.1.0
 */
export const fieldsOf = <O>(fields: { readonly [K in keyof Required<O>]: true }): ReadonlyArray<string> => Object.keys(fields)

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive. */
const distance = (a: string, b: string): number => {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  const d: Array<Array<number>> = Array.from({ length: x.length + 1 }, (_, i) => Array.from({ length: y.length + 1 }, (_, j) => i === 0 ? j : j === 0 ? i : 0))
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[x.length][y.length]
}

/**
 * The known field closest to `name`, when it is close enough to be a misspelling of it.
 *
 * @category internal
 * @since 0.1.0
 */
export const closest = (name: string, known: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Infinity
  for (const k of known) {
    const dist = distance(name, k)
    if (dist < bestDistance) {
      best = k
      bestDistance = dist
    }
  }
  return bestDistance <= Math.max(1, Math.floor(Math.max(name.length, best?.length ?? 0) / 3)) ? best : undefined
}

const isOptionsObject = (options: unknown): options is object =>
  typeof options === "object" && options !== null && !Array.isArray(options)

/**
 * The refusal of `options` (read at `prefix`, e.g. `"wakeups."`), or
 * `undefined` when it is an object holding only `known` fields.
 *
 * @category internal
 * @since 0.1.0
 */
export const unknownField = (options: unknown, known: ReadonlyArray<string>, prefix = ""): BatonConfigError | undefined => {
  if (options === undefined) return undefined
  if (!isOptionsObject(options)) {
    return new BatonConfigError({
      field: prefix === "" ? "options" : prefix.slice(0, -1),
      reason: `must be an object of options (got ${Array.isArray(options) ? "an array" : options === null ? "null" : typeof options})`
    })
  }
  const unknown = Object.keys(options).find((k) => !known.includes(k))
  if (unknown === undefined) return undefined
  const meant = closest(unknown, known)
  return new BatonConfigError({
    field: `${prefix}${unknown}`,
    reason: `is not an option${meant === undefined ? "" : ` — did you mean \`${meant}\`?`} (the options are ${known.join(", ")}): check its spelling`
  })
}

/**
 * Fails with the refusal of {@link unknownField}, if any.
 *
 * @category internal
 * @since 0.1.0
 */
export const refuseUnknown = (options: unknown, known: ReadonlyArray<string>, prefix = ""): Effect.Effect<void, BatonConfigError> => {
  const refusal = unknownField(options, known, prefix)
  return refusal === undefined ? Effect.void : Effect.fail(refusal)
}

/**
 * `make()` once `options` passed {@link refuseUnknown} (checked when the
 * Layer is built, before anything opens).
 *
 * @category internal
 * @since 0.1.0
 */
export const checkedLayer = <A, E, R>(
  options: unknown,
  known: ReadonlyArray<string>,
  make: () => Layer.Layer<A, E, R>
): Layer.Layer<A, E | BatonConfigError, R> => Layer.unwrap(Effect.andThen(refuseUnknown(options, known), Effect.sync(make)))

// ---------------------------------------------------------------------------
// Option values: the one parser of durations, whole numbers, booleans, texts
// and choices every Layer and every limit call checks its options with. A
// check answers the value or a `Refusal` (why, in words a reader can act
// on); `setting` turns a refusal into a `BatonConfigError` naming the field
// (a Layer's options), `argument` into an `InvalidInputError` (a call's).
// ---------------------------------------------------------------------------

/**
 * Why a value was refused: the text after the field's name, e.g.
 * `is 0.000001 ms: it must be at least 10 ms`.
 *
 * @category internal
 * @since 0.1.0
 */
export class Refusal {
  readonly refused: string
  constructor(refused: string) {
    this.refused = refused
  }
}

/**
 * A check of one option's value: the value it stands for, or a `Refusal`.
 *
 * @category internal
 * @since 0.1.0
 */
export type Check<A> = (value: unknown) => A | Refusal

const refusal = (refused: string): Refusal => new Refusal(refused)

/**
 * A value as a message shows it: NaN, Infinity and bigints as themselves
 * (JSON would say null or throw), texts and objects as JSON.
 *
 * @category internal
 * @since 0.1.0
 */
export const show = (value: unknown): string => {
  if (typeof value === "number") return String(value)
  if (typeof value === "bigint") return `${value}n`
  if (value === undefined) return "undefined"
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * The longest timer a JavaScript runtime keeps (2^31 − 1 ms, about 24.8
 * days): effect's Clock chains longer sleeps, but a period that long is a
 * mistake (a sweep that never comes).
 *
 * @category internal
 * @since 0.1.0
 */
export const maxTimerMillis = 2 ** 31 - 1

/**
 * A `Duration.Input` in milliseconds — the one reading of durations of the
 * package: `undefined` when it is not one (a text such as `"soon"`, a negative
 * bigint, a malformed tuple), NaN for a NaN number (effect reads it as 0),
 * ±Infinity for the infinite durations.
 *
 * @category internal
 * @since 0.1.0
 */
export const millisOf = (input: unknown): number | undefined => {
  if (typeof input === "number") return input
  if (typeof input === "bigint") return input < 0n ? undefined : Number(input) / 1e6
  const decoded = Duration.fromInput(input as Duration.Input)
  return Option.isSome(decoded) ? Duration.toMillis(decoded.value) : undefined
}

/**
 * The range of a duration option, in milliseconds, with the reason of each
 * bound (shown with a refusal).
 *
 * @category internal
 * @since 0.1.0
 */
export interface DurationRange {
  readonly min: number
  readonly max: number
  readonly minWhy?: string | undefined
  readonly maxWhy?: string | undefined
  /** A value that works, shown with every refusal (e.g. `"25 seconds"`). */
  readonly example?: string | undefined
}

const ms = (millis: number) => `${millis} ms`

/**
 * A duration option within `range` (milliseconds out). Refused: what is not
 * a duration, NaN, an infinity (unless `range.max` is Infinity), a negative
 * one, one below the floor or above the ceiling — each saying what it was
 * and the range it may take.
 *
 * @category internal
 * @since 0.1.0
 */
export const duration = (range: DurationRange): Check<number> => (input) => {
  const span = `from ${ms(range.min)} to ${range.max === Infinity ? "Infinity" : ms(range.max)}`
  const eg = range.example === undefined ? "" : `, e.g. ${JSON.stringify(range.example)}`
  const millis = millisOf(input)
  if (millis === undefined) {
    return refusal(`is ${show(input)}, which is not a duration (e.g. ${JSON.stringify(range.example ?? "30 seconds")} or a number of milliseconds): it must be a duration ${span}`)
  }
  if (Number.isNaN(millis)) return refusal(`is NaN: it must be a duration ${span}${eg}`)
  if (millis === Infinity && range.max === Infinity) return millis
  if (!Number.isFinite(millis)) return refusal(`is ${millis > 0 ? "" : "-"}Infinity: it must be a finite duration ${span}${eg}`)
  if (millis < range.min) return refusal(`is ${ms(millis)}: it must be at least ${ms(range.min)}${range.minWhy === undefined ? "" : ` (${range.minWhy})`}${eg}`)
  if (millis > range.max) return refusal(`is ${ms(millis)}: it must be at most ${ms(range.max)}${range.maxWhy === undefined ? "" : ` (${range.maxWhy})`}${eg}`)
  return millis
}

/**
 * The range of a whole-number option; `unset` says what leaving it out
 * means, when that is not just the default (e.g. `"unset for no cap"`).
 *
 * @category internal
 * @since 0.1.0
 */
export interface WholeRange {
  readonly min: number
  readonly max: number
  readonly why?: string | undefined
  readonly unset?: string | undefined
}

/**
 * A whole number within `range`; NaN, Infinity, fractions, texts refused, saying what they were.
 *
 * @category internal
 * @since 0.1.0
 */
export const whole = (range: WholeRange): Check<number> => (value) =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= range.min && value <= range.max
    ? value
    : refusal(
      `is ${show(value)}: it must be a whole number from ${range.min} to ${range.max}${range.why === undefined ? "" : ` (${range.why})`}${
        range.unset === undefined ? "" : `, or ${range.unset}`
      }`
    )

/**
 * `true` or `false`, nothing else (not `"no"`, not 0).
 *
 * @category internal
 * @since 0.1.0
 */
export const boolean: Check<boolean> = (value) =>
  typeof value === "boolean" ? value : refusal(`is ${show(value)}: it must be true or false`)

/**
 * A text of `minLength` (default 0) to `maxLength` characters.
 *
 * @category internal
 * @since 0.1.0
 */
export const text = (range: { readonly minLength?: number; readonly maxLength: number; readonly why?: string }): Check<string> => (value) => {
  if (typeof value !== "string") return refusal(`is ${show(value)}: it must be a text of at most ${range.maxLength} characters`)
  if (value.length < (range.minLength ?? 0)) return refusal(`is ${show(value)}: it must be at least ${range.minLength} characters long`)
  return value.length <= range.maxLength
    ? value
    : refusal(`is ${value.length} characters long: it must be at most ${range.maxLength}${range.why === undefined ? "" : ` (${range.why})`}`)
}

/**
 * One of `choices`.
 *
 * @category internal
 * @since 0.1.0
 */
export const oneOf = <const L extends ReadonlyArray<string>>(choices: L): Check<L[number]> => (value) =>
  choices.includes(value as string) ? value as L[number] : refusal(`is ${show(value)}: it must be ${choices.map((c) => JSON.stringify(c)).join(" or ")}`)

/**
 * A Layer's option checked: its value (`fallback` when unset), or a
 * `BatonConfigError` naming `field`.
 *
 * @category internal
 * @since 0.1.0
 */
export const setting = <A, D = A>(field: string, value: unknown, check: Check<A>, fallback: D): Effect.Effect<A | D, BatonConfigError> => {
  if (value === undefined) return Effect.succeed(fallback)
  const checked = check(value)
  return checked instanceof Refusal ? Effect.fail(new BatonConfigError({ field, reason: checked.refused })) : Effect.succeed(checked)
}

/**
 * A call's option checked: its value (`fallback` when unset), or an
 * `InvalidInputError` of `operation` naming `field`.
 *
 * @category internal
 * @since 0.1.0
 */
export const argument = <A, D = A>(operation: string, field: string, value: unknown, check: Check<A>, fallback: D): Effect.Effect<A | D, InvalidInputError> =>
  Effect.mapError(setting(field, value, check, fallback), asArgument(operation))

/**
 * A refused setting as the `InvalidInputError` of a call.
 *
 * @category internal
 * @since 0.1.0
 */
export const asArgument = (operation: string) => (e: BatonConfigError): InvalidInputError =>
  new InvalidInputError({ operation, field: e.field, reason: e.reason })

// --- the lease: one parser, one default, for every lease the runtime holds ---

/**
 * The lease length when none is given: 30 seconds.
 *
 * @category internal
 * @since 0.1.0
 */
export const defaultLeaseMillis = 30_000

/**
 * A lease length: 1 second (a renewal every third of it must get through a
 * store round trip and a GC pause) to 24 hours (a crashed holder blocks its
 * work that long).
 *
 * @category internal
 * @since 0.1.0
 */
export const leaseLength: Check<number> = duration({
  min: 1_000,
  max: 24 * 60 * 60 * 1000,
  minWhy: "renewals cannot keep a shorter lease",
  maxWhy: "a crashed holder blocks its work that long"
})

/** A renewal period: at least 100 ms (checked shorter than the lease by `leaseTiming`). */
const renewPeriod: Check<number> = duration({ min: 100, max: 24 * 60 * 60 * 1000, minWhy: "a store cannot be asked more often" })

/**
 * A lease option (`field`, default 30 s) in milliseconds.
 *
 * @category internal
 * @since 0.1.0
 */
export const lease = (value: unknown, field = "lease"): Effect.Effect<number, BatonConfigError> =>
  setting(field, value, leaseLength, defaultLeaseMillis)

/**
 * The lease length and renewal period of `lease` and `renewEvery`: the
 * lease as {@link lease}, the renewal at least 100 ms and shorter than the
 * lease, by default a third of it.
 *
 * @category internal
 * @since 0.1.0
 */
export const leaseTiming = Effect.fnUntraced(function*(leaseInput: unknown, renewInput: unknown) {
  const leaseMillis = yield* lease(leaseInput)
  const renewMillis = yield* setting("renewEvery", renewInput, renewPeriod, Math.floor(leaseMillis / 3))
  if (renewMillis >= leaseMillis) {
    return yield* new BatonConfigError({
      field: "renewEvery",
      reason: `is ${ms(renewMillis)}: it must be shorter than the lease (${ms(leaseMillis)}), or the lease expires between renewals`
    })
  }
  return { leaseMillis, renewMillis }
})

/**
 * How often a waiter looks again (for a lease, a permit, a slot) when no
 * wake-up came: 10 ms (more often only spins) up to the longest timer.
 *
 * @category internal
 * @since 0.1.0
 */
export const pollPeriod: Check<number> = duration({
  min: 10,
  max: maxTimerMillis,
  minWhy: "looking more often only spins",
  maxWhy: "the longest timer"
})

/**
 * How long an idle circuit breaker's entry is kept before it starts again
 * as Closed: 1 second to 366 days (every backend's `idleTimeToLive`).
 *
 * @category internal
 * @since 0.1.0
 */
export const idleTimeToLive: Check<number> = duration({ min: 1_000, max: 366 * 24 * 60 * 60 * 1000 })
