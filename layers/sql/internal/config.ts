/**
 * Shared by the backends' `layerConfig`: optional settings read through
 * Effect `Config`, and a `ConfigError` turned into a `BatonConfigError` that
 * names the setting.
 */
import { Config, type Duration, Effect, Layer, Option } from "effect"
import { BatonConfigError } from "../../../src/stores/Errors.ts"
import * as Options from "../../../src/stores/internal/options.ts"

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
export const show = Options.show

/**
 * A duration option in milliseconds, checked by the package's one duration
 * parser: not NaN, finite, within `[min, max]`; anything else is a
 * `BatonConfigError` naming `field` and saying what the value was.
 */
export const durationMillis = (
  field: string,
  input: Duration.Input,
  bounds: { readonly min: number; readonly max: number; readonly why: string; readonly minWhy?: string }
): Effect.Effect<number, BatonConfigError> =>
  Options.setting(field, input, Options.duration({ min: bounds.min, max: bounds.max, maxWhy: bounds.why, minWhy: bounds.minWhy }), Number.NaN)

/** A whole-number option from `min` to `max`, checked: NaN and Infinity reported as what they are. */
export const wholeNumber = (field: string, value: unknown, min: number, max: number, why?: string): Effect.Effect<number, BatonConfigError> =>
  Options.setting(field, value, Options.whole({ min, max, why }), Number.NaN)

/**
 * A setting passed as the option `option`, else read from the config
 * provider under `setting`: its value (undefined when neither is set) and
 * the field a problem with it names (the option's name, or the setting's).
 */
export const optionOrSetting = (
  option: string,
  given: unknown,
  setting: string
): Effect.Effect<{ readonly value: unknown; readonly field: string }, BatonConfigError> =>
  given !== undefined
    ? Effect.succeed({ value: given, field: option })
    : Config.option(Config.String(setting)).pipe(
      Effect.mapError((e) => new BatonConfigError({ field: setting, reason: `could not be read (${e.message})` })),
      Effect.map((value) => ({ value: Option.getOrUndefined(value), field: setting }))
    )
