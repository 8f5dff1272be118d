/**
 * Shared by the backends' `layerConfig`: optional settings read through
 * Effect `Config`, and a `ConfigError` turned into a `BatonConfigError` that
 * names the setting.
 */
import { Config, Duration, Effect, Layer, Option } from "effect"
import { BatonConfigError } from "../../../src/stores/Errors.ts"

/** A setting that may be absent (undefined then, so the option's default applies). */
export const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/** The setting a `ConfigError` is about (its path), or "config" when it names none. */
const settingOf = (error: Config.ConfigError): string => {
  const path = /at \[([^\]]*)\]/.exec(error.message)
  if (path === null) return "config"
  const names = path[1].split(",").map((part) => part.trim().replace(/^"|"$/g, "")).filter((part) => part !== "")
  return names.length === 0 ? "config" : names.join(".")
}

/** A `ConfigError` as a `BatonConfigError` naming the setting. */
export const configError = (error: Config.ConfigError): BatonConfigError =>
  new BatonConfigError({ field: settingOf(error), reason: `could not be read: ${error.message.split("\n")[0]}` })

/** The Layer `make(options)` with the options read from `config` (a failed read is a `BatonConfigError`). */
export const layerFromConfig = <O, A, E, R>(
  config: Config.Wrap<O>,
  make: (options: O) => Layer.Layer<A, E, R>
): Layer.Layer<A, E | BatonConfigError, R> =>
  Layer.unwrap(Effect.map(Effect.mapError(Config.unwrap(config), configError), make))

/** A value as a message shows it: NaN and Infinity as themselves (JSON would say null). */
export const show = (value: unknown): string =>
  typeof value === "number" || typeof value === "bigint" ? String(value) : value === undefined ? "undefined" : JSON.stringify(value) ?? String(value)

/**
 * A duration option in milliseconds, checked: not NaN, finite, within
 * `[min, max]`; anything else is a `BatonConfigError` naming `field` and
 * saying what the value was.
 */
export const durationMillis = (
  field: string,
  input: Duration.Input,
  bounds: { readonly min: number; readonly max: number; readonly why: string }
): Effect.Effect<number, BatonConfigError> => {
  const fail = (reason: string) => Effect.fail(new BatonConfigError({ field, reason }))
  if (typeof input === "number" && Number.isNaN(input)) return fail(`is NaN: it must be a duration from ${bounds.min} ms to ${bounds.max} ms`)
  const decoded = Duration.fromInput(input)
  if (Option.isNone(decoded)) return fail(`is ${show(input)}, which is not a duration (e.g. "5 seconds" or a number of milliseconds)`)
  const millis = Duration.toMillis(decoded.value)
  if (Number.isNaN(millis)) return fail(`is NaN: it must be a duration from ${bounds.min} ms to ${bounds.max} ms`)
  if (!Number.isFinite(millis)) return fail(`is ${millis > 0 ? "" : "-"}Infinity: it must be a finite duration, at most ${bounds.max} ms`)
  if (millis < bounds.min) return fail(`is ${millis} ms: it must be at least ${bounds.min} ms`)
  if (millis > bounds.max) return fail(`is ${millis} ms: it must be at most ${bounds.max} ms (${bounds.why})`)
  return Effect.succeed(millis)
}

/** A whole-number option, checked: NaN and Infinity reported as what they are. */
export const wholeNumber = (field: string, value: unknown, min: number): Effect.Effect<number, BatonConfigError> =>
  typeof value === "number" && Number.isInteger(value) && value >= min
    ? Effect.succeed(value)
    : Effect.fail(new BatonConfigError({ field, reason: `is ${show(value)}: it must be a whole number ≥ ${min}` }))
