/**
 * The check every options object of the public Layers shares (`Baton.layer`,
 * the store bundles of every backend, the limiter Layers): an object, and
 * no field outside the ones the Layer reads — a misspelt option (`pth`,
 * `synchronus`) would otherwise be ignored and its default used. A refusal
 * is a `BatonConfigError` naming the field and, when one known field is
 * close to it, the field it probably meant.
 */
import { Effect, Layer } from "effect"
import { BatonConfigError } from "../Errors.ts"

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
