/**
 * The `concurrencyKey` and `debounce` options of `Baton.start` /
 * `Baton.execute`, checked before anything is written: bad values fail with
 * `InvalidInputError` naming the field.
 *
 * @since 0.1.0
 */
import { type Duration, Effect } from "effect"
import { InvalidInputError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"
import * as V from "../../../stores/internal/validate.ts"
import type { InstanceShape } from "../Instance.ts"
import * as Debounced from "./Debounce.ts"
import * as Gate from "./Gate.ts"

/**
 * At most `limit` executions started with one `key` (per tenant) run at once,
 * fleet-wide; the others wait in arrival order.
 *
 * @category models
 * @since 0.1.0
 */
export interface ConcurrencyKey {
  /** The key (1–200 characters, per tenant: keys of different tenants never share slots). */
  readonly key: string
  /** Executions of the key running at once, fleet-wide: a whole number ≥ 1 (the last start of a key sets it). */
  readonly limit: number
}

/** The most a key's limit may be. */
const maxLimit = 100_000

/**
 * The option checked: the marker the tree keeps, or `InvalidInputError`
 * naming the field (`concurrencyKey.key`, `concurrencyKey.limit`, or
 * `concurrencyKey` itself when it cannot be used here).
 *
 * @category internal
 * @since 0.1.0
 */
export const check = (
  operation: string,
  instance: InstanceShape,
  value: ConcurrencyKey,
  others: { readonly requestKey?: string | undefined }
): Effect.Effect<Gate.Marker, InvalidInputError> =>
  Effect.gen(function*() {
    const fail = (field: string, reason: string) => Effect.fail(new InvalidInputError({ operation, field, reason }))
    if (typeof value !== "object" || value === null) return yield* fail("concurrencyKey", "must be an object { key, limit }")
    yield* V.nonEmpty(operation, "concurrencyKey.key", value.key)
    yield* V.wholeAtLeast(operation, "concurrencyKey.limit", value.limit, 1)
    if (value.limit > maxLimit) return yield* fail("concurrencyKey.limit", `must be at most ${maxLimit}, not ${value.limit}`)
    if (others.requestKey !== undefined) {
      return yield* fail("concurrencyKey", "cannot be combined with requestKey: give one of them (a waiting start answers its handle at once, so a retried call needs no request key)")
    }
    if (Gate.storeOf(instance) === undefined) {
      return yield* fail("concurrencyKey", "needs a ConcurrencyKeyStore given to the Baton Layer (the MemoryStores, SqliteStores and PgStores bundles provide one)")
    }
    return { key: value.key, limit: value.limit }
  })

/**
 * A burst of starts with one `key` (per tenant), each within `window` of the
 * one before, becomes one execution that runs with the last start's input
 * once `window` passed after the last start.
 *
 * @category models
 * @since 0.1.0
 */
export interface Debounce {
  /** The key (1–200 characters, per tenant). */
  readonly key: string
  /** How long after the last start of a burst its execution starts: more than 0, at most 30 days. */
  readonly window: Duration.Input
  /**
   * The longest a burst waits after its first start: a steady stream of
   * starts, each within `window` of the one before, still runs once this
   * has passed since the first. At least `window`, at most 30 days. Default:
   * none (the burst waits for a quiet `window`). Each start's own `maxWait`
   * counts from the burst's first start.
   *
   * @since 0.1.0
   */
  readonly maxWait?: Duration.Input | undefined
}

/** The fields of `Debounce`. */
const debounceFields = ["key", "window", "maxWait"]

/** The longest debounce window. */
const maxWindowMillis = 30 * 24 * 60 * 60 * 1000

/**
 * The `debounce` option checked: its key, window and longest wait in
 * milliseconds, or `InvalidInputError` naming the field (`debounce.key`,
 * `debounce.window`, `debounce.maxWait`, a field it does not have, or
 * `debounce` itself when it cannot be used here).
 *
 * @category internal
 * @since 0.1.0
 */
export const checkDebounce = (
  operation: string,
  instance: InstanceShape,
  value: Debounce,
  others: { readonly requestKey?: string | undefined; readonly concurrencyKey?: unknown }
): Effect.Effect<{ readonly key: string; readonly windowMillis: number; readonly maxWaitMillis: number | undefined }, InvalidInputError> =>
  Effect.gen(function*() {
    const fail = (field: string, reason: string) => Effect.fail(new InvalidInputError({ operation, field, reason }))
    if (typeof value !== "object" || value === null) return yield* fail("debounce", "must be an object { key, window, maxWait? }")
    const unknown = Options.unknownField(value, debounceFields, "debounce.")
    if (unknown !== undefined) return yield* fail(unknown.field, unknown.reason)
    yield* V.nonEmpty(operation, "debounce.key", value.key)
    const windowMillis = yield* V.durationMillis(operation, "debounce.window", value.window)
    if (!(windowMillis > 0) || windowMillis > maxWindowMillis) {
      return yield* fail("debounce.window", `must be a duration more than 0 and at most 30 days, e.g. "5 seconds" (got ${V.shown(value.window)})`)
    }
    const maxWaitMillis = value.maxWait === undefined ? undefined : yield* V.durationMillis(operation, "debounce.maxWait", value.maxWait)
    if (maxWaitMillis !== undefined && (!(maxWaitMillis >= windowMillis) || maxWaitMillis > maxWindowMillis)) {
      return yield* fail("debounce.maxWait", `must be a duration at least the window (${windowMillis} ms) and at most 30 days (got ${V.shown(value.maxWait)})`)
    }
    if (others.requestKey !== undefined) return yield* fail("debounce", "cannot be combined with requestKey: every start of a burst answers the burst's one execution already")
    if (others.concurrencyKey !== undefined) return yield* fail("debounce", "cannot be combined with concurrencyKey: give one of them")
    if (Debounced.storeOf(instance) === undefined) {
      return yield* fail("debounce", "needs a DebounceStore given to the Baton Layer (the MemoryStores, SqliteStores and PgStores bundles provide one)")
    }
    return { key: value.key, windowMillis, maxWaitMillis }
  })
