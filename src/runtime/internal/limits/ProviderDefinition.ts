/**
 * A provider's definition and its checks, apart from `Provider`'s guard and
 * health (so the runtime's configuration can name and check providers
 * without importing the health module that imports the configuration).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schedule } from "effect"
import type * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import { BatonConfigError } from "../../../stores/Errors.ts"
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
  readonly slots?: Omit<ProviderSlots.SlotOptions, "holder"> | undefined
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
}

const configError = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))

const validDuration = (input: Duration.Input) => {
  const d = Duration.fromInput(input)
  return d._tag === "Some" && Duration.toMillis(d.value) > 0 && Duration.isFinite(d.value)
}

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
      if (!Number.isInteger(d.slots.max) || d.slots.max < 1) return yield* configError(`${at}: slots.max`, `is ${d.slots.max}: it must be a whole number ≥ 1`)
      for (const field of ["lease", "timeout", "pollInterval"] as const) {
        const v = d.slots[field]
        if (v !== undefined && !validDuration(v)) return yield* configError(`${at}: slots.${field}`, "must be a finite duration > 0")
      }
    }
    for (const [i, w] of (d.windows ?? []).entries()) {
      if (!(w.limit > 0) || !Number.isFinite(w.limit)) return yield* configError(`${at}: windows[${i}].limit`, `is ${w.limit}: it must be a number > 0`)
      if (!validDuration(w.window)) return yield* configError(`${at}: windows[${i}].window`, "must be a finite duration > 0")
    }
    if (d.adaptive !== undefined) {
      if (!(d.adaptive.limit > 0) || !Number.isFinite(d.adaptive.limit)) return yield* configError(`${at}: adaptive.limit`, `is ${d.adaptive.limit}: it must be a number > 0`)
      if (!validDuration(d.adaptive.window)) return yield* configError(`${at}: adaptive.window`, "must be a finite duration > 0")
      if (d.retryAfter === undefined) return yield* configError(`${at}: adaptive`, "needs retryAfter: it learns from the call's 429s, which retryAfter recognises")
    }
    if (d.breaker !== undefined && !Schedule.isSchedule(d.breaker.openDuration) && !validDuration(d.breaker.openDuration)) {
      return yield* configError(`${at}: breaker.openDuration`, "must be a finite duration > 0 or a Schedule")
    }
    return d
  })

