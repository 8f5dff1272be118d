/**
 * Shared by the backends' `layerConfig`: optional settings read through
 * Effect `Config`, and a `ConfigError` turned into a `BatonConfigError` that
 * names the setting.
 */
import { Config, Effect, Layer, Option } from "effect"
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
