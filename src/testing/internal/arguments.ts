/**
 * The Harness's checks of what a test passes it, for a test written in
 * JavaScript (or past the types): a typed error naming the argument and
 * what it must be, never a TypeError from deep inside.
 */
import { Effect } from "effect"
import { BatonConfigError, InvalidInputError } from "../../stores/Errors.ts"
import { refuseUnknown } from "../../stores/internal/options.ts"
import * as V from "../../stores/internal/validate.ts"

/** The options `Harness.make` reads. */
const makeFields = ["instances", "baton", "instanceOptions", "beforeStoreCall"]

/** A value as a message shows it. */
const show = (value: unknown): string =>
  typeof value === "string" ? JSON.stringify(value) : typeof value === "function" ? "a function" : String(value)

/**
 * The options of `Harness.make`: an object of known fields, `instances` a whole number ≥ 1, `baton` an object.
 *
 * @category internal
 * @since 0.1.0
 */
export const makeOptions = (options: unknown): Effect.Effect<void, BatonConfigError> =>
  Effect.gen(function*() {
    if (typeof options !== "object" || options === null) {
      return yield* new BatonConfigError({ field: "options", reason: "must be an object: { instances, baton: { workflows } }" })
    }
    yield* refuseUnknown(options, makeFields)
    const { baton, instances } = options as { readonly instances?: unknown; readonly baton?: unknown }
    if (typeof instances !== "number" || !Number.isSafeInteger(instances) || instances < 1) {
      return yield* new BatonConfigError({ field: "instances", reason: `must be a whole number ≥ 1: how many instances to build (got ${show(instances)})` })
    }
    if (typeof baton !== "object" || baton === null) {
      return yield* new BatonConfigError({ field: "baton", reason: `must be the instances' Baton options, e.g. { workflows: [...] } (got ${show(baton)})` })
    }
  })

/** The indexes there are, as a reader wants them. */
const indexes = (count: number) => count === 1 ? "0" : count === 2 ? "0 or 1" : `a whole number from 0 to ${count - 1}`

/**
 * `index` names one of the `count` instances.
 *
 * @category internal
 * @since 0.1.0
 */
export const index = (operation: string, value: unknown, count: number): Effect.Effect<number, InvalidInputError> =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 && value < count
    ? Effect.succeed(value)
    : Effect.fail(new InvalidInputError({ operation, field: "index", reason: `must be the index of an instance: ${indexes(count)} (got ${show(value)})` }))

/**
 * `value` is an Effect.
 *
 * @category internal
 * @since 0.1.0
 */
export const effect = <A, E, R>(operation: string, field: string, value: unknown, what: string): Effect.Effect<Effect.Effect<A, E, R>, InvalidInputError> =>
  Effect.isEffect(value)
    ? Effect.succeed(value as Effect.Effect<A, E, R>)
    : Effect.fail(new InvalidInputError({ operation, field, reason: `must be ${what} (got ${show(value)})` }))

/**
 * `f` is a function; what it answers for `arg` is an Effect.
 *
 * @category internal
 * @since 0.1.0
 */
export const effectOf = <T, A, E>(operation: string, f: unknown, arg: T): Effect.Effect<Effect.Effect<A, E>, InvalidInputError> =>
  typeof f === "function"
    ? Effect.flatMap(Effect.sync(() => f(arg) as unknown), (result) => effect<A, E, never>(operation, "f", result, "a function that returns an Effect"))
    : Effect.fail(new InvalidInputError({ operation, field: "f", reason: `must be a function from the instance's Baton to an Effect (got ${show(f)})` }))

/**
 * How far `advance` moves the clock: a finite duration ≥ 0.
 *
 * @category internal
 * @since 0.1.0
 */
export const advanceMillis = (duration: unknown): Effect.Effect<number, InvalidInputError> =>
  Effect.flatMap(
    V.durationMillis("Harness.advance", "duration", duration as never),
    (millis) =>
      Number.isFinite(millis)
        ? Effect.succeed(millis)
        : Effect.fail(new InvalidInputError({ operation: "Harness.advance", field: "duration", reason: "must be a finite duration: the clock cannot move to infinity" }))
  )
