/**
 * A provider's definition and its checks, apart from `Provider`'s guard and
 * health (so the runtime's configuration can name and check providers
 * without importing the health module that imports the configuration).
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Schedule } from "effect"
import type * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import { BatonConfigError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"
import type * as ProviderSlots from "../../limits/ProviderSlots.ts"

/**
 * A limit on calls or tokens per window.
 *
 * @category models
 * @since 0.1.0
 */
export interface Window {
  readonly limit: number
  readonly window: Duration.Input
  /** What the window counts: `"calls"` (default) or `"tokens"` (the guard's `tokens`). */
  readonly unit?: "calls" | "tokens" | undefined
  /** effect's algorithm: `"fixed-window"` (default) or `"token-bucket"`. */
  readonly algorithm?: "fixed-window" | "token-bucket" | undefined
}

/**
 * When the provider's circuit opens and for how long (effect's `CircuitBreaker` options).
 *
 * @category models
 * @since 0.1.0
 */
export interface BreakerPolicy {
  readonly tripPolicy: CircuitBreaker.TripPolicy
  readonly openDuration: Duration.Input | Schedule.Schedule<unknown, number>
  readonly maxOpenDuration?: Duration.Input | undefined
}

/**
 * A provider's fleet-wide limits.
 *
 * @category models
 * @since 0.1.0
 */
export interface Provider {
  readonly key: string
  readonly slots?: Omit<ProviderSlots.SlotOptions, "holder" | "tenantId"> | undefined
  readonly windows?: ReadonlyArray<Window> | undefined
  readonly breaker?: BreakerPolicy | undefined
  /** The Retry-After of a rate-limit error of the call (a 429), or undefined for any other error. */
  readonly retryAfter?: ((error: unknown) => Duration.Input | undefined) | undefined
  /**
   * Learn the provider's real rate from its 429s, fleet-wide: effect's
   * adaptive limiter (`RateLimiterStore.adaptiveConsume` / `adaptiveFeedback`:
   * a cooldown after a 429, then counting the calls that pass until the next
   * 429, then spacing calls to that many per learned window). `limit` and
   * `window` are the rate assumed while learning (effect's fallback). Needs
   * `retryAfter`, which recognises the 429s it learns from.
   */
  readonly adaptive?: { readonly limit: number; readonly window: Duration.Input } | undefined
  /**
   * Other models (or endpoints) to call, in order, when this one is
   * unavailable: its circuit open, or rate-limited (a 429 now, or a
   * fleet-wide cooldown still running). Each is a provider of its own, with
   * its own key and limits; a fallback lists no fallbacks of its own. Used
   * by `ProviderFallbacks.guard` (the plain `Provider.guard` calls only this
   * provider).
   */
  readonly fallbacks?: ReadonlyArray<Provider> | undefined
}

const configError = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))

/** A rate window or a breaker's open time: 1 ms (the stores count in milliseconds) to 366 days. */
const period = Options.duration({ min: 1, max: 366 * 24 * 60 * 60 * 1000, minWhy: "the stores count in milliseconds" })

/** How each slot option is checked: the lease with the runtime's one lease parser, the wait from 0 to Infinity, the poll from 10 ms. */
const slotChecks = {
  lease: Options.leaseLength,
  timeout: Options.duration({ min: 0, max: Infinity }),
  pollInterval: Options.pollPeriod
} as const

const checked = (field: string, value: unknown, check: Options.Check<unknown>) => Options.setting(field, value, check, undefined)

/**
 * A checked provider definition; a bad field fails with `BatonConfigError` naming it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (definition: Provider): Effect.Effect<Provider, BatonConfigError> =>
  Effect.gen(function*() {
    const d = definition
    if (typeof d.key !== "string" || d.key === "") return yield* configError("provider.key", "must be a non-empty string")
    const at = `provider ${d.key}`
    if (d.slots !== undefined) {
      yield* checked(`${at}: slots.max`, d.slots.max ?? Number.NaN, Options.whole({ min: 1, max: Number.MAX_SAFE_INTEGER }))
      for (const field of ["lease", "timeout", "pollInterval"] as const) yield* checked(`${at}: slots.${field}`, d.slots[field], slotChecks[field])
    }
    for (const [i, w] of (d.windows ?? []).entries()) {
      if (!(w.limit > 0) || !Number.isFinite(w.limit)) return yield* configError(`${at}: windows[${i}].limit`, `is ${w.limit}: it must be a number > 0`)
      yield* checked(`${at}: windows[${i}].window`, w.window ?? Number.NaN, period)
    }
    if (d.adaptive !== undefined) {
      if (!(d.adaptive.limit > 0) || !Number.isFinite(d.adaptive.limit)) return yield* configError(`${at}: adaptive.limit`, `is ${d.adaptive.limit}: it must be a number > 0`)
      yield* checked(`${at}: adaptive.window`, d.adaptive.window ?? Number.NaN, period)
      if (d.retryAfter === undefined) return yield* configError(`${at}: adaptive`, "needs retryAfter: it learns from the call's 429s, which retryAfter recognises")
    }
    if (d.breaker !== undefined && !Schedule.isSchedule(d.breaker.openDuration)) {
      yield* checked(`${at}: breaker.openDuration`, d.breaker.openDuration ?? Number.NaN, period).pipe(
        Effect.mapError((e) => new BatonConfigError({ field: e.field, reason: `${e.reason}, or a Schedule` }))
      )
    }
    if (d.breaker?.maxOpenDuration !== undefined) yield* checked(`${at}: breaker.maxOpenDuration`, d.breaker.maxOpenDuration, period)
    if (d.fallbacks !== undefined) yield* checkFallbacks(at, d)
    return d
  })

/** Each fallback is a valid provider with a key of its own and no fallbacks of its own. */
const checkFallbacks = (at: string, d: Provider): Effect.Effect<void, BatonConfigError> =>
  Effect.gen(function*() {
    if (!Array.isArray(d.fallbacks)) return yield* configError(`${at}: fallbacks`, "must be a list of providers")
    const keys = new Set([d.key])
    for (const [i, f] of d.fallbacks.entries()) {
      const field = `${at}: fallbacks[${i}]`
      if (f === null || typeof f !== "object") return yield* configError(field, "must be a provider definition ({ key, ... })")
      if (f.fallbacks !== undefined) {
        return yield* configError(`${field}.fallbacks`, "a fallback lists no fallbacks of its own: put every model in the primary's list, in the order to try them")
      }
      yield* make(f).pipe(Effect.mapError((e) => new BatonConfigError({ field: `${field}: ${e.field}`, reason: e.reason })))
      if (keys.has(f.key)) return yield* configError(`${field}.key`, `is ${JSON.stringify(f.key)}, which the provider or an earlier fallback already uses: each model needs a key of its own (its limits and circuit are kept by key)`)
      keys.add(f.key)
    }
  })

