/**
 * A guarded call that moves on to a provider's `fallbacks` when a model is
 * unavailable: `ProviderFallbacks.guard(provider, { holder })((model) => call(model))`.
 *
 * The models are tried in order: the provider, then each of its
 * `fallbacks`. A model is unavailable, and the next one is tried at once,
 * when
 * - it is under a fleet-wide cooldown (a 429 that any instance saw, see
 *   `Provider.cooldown`): it is passed over without waiting for it;
 * - its circuit is open (effect's `CircuitBreakerError`, `CircuitOpen`), or
 *   half-open with its probe call running (`CircuitHalfOpen`);
 * - the call answers a rate-limit error that the model's `retryAfter`
 *   recognises (the 429 also starts that model's fleet-wide cooldown).
 *
 * Any other failure of the call is the call's own and is answered as it is
 * (the step's retry policy decides what happens next). Each model's call
 * goes through `Provider.guard` with that model's limits: its budgets
 * checked and charged, windows, slots and breaker.
 *
 * When every model is unavailable, the attempt is put off on the Clock
 * until the first of them is due back (its cooldown or open time ends; a
 * running probe is looked at again after {@link probeWait}), and tried
 * again from the first model. Being put off is not a failure, so it uses
 * up none of the step's retries; it is bounded by `maxDeferral` (default 10
 * minutes, in all), after which the call fails with
 * {@link ProvidersUnavailableError} naming each model and why.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Duration, Effect, Exit, Option, Schema } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import type { BatonConfigError, InvalidInputError, StoreError } from "../../stores/Errors.ts"
import * as Options from "../../stores/internal/options.ts"
import { RateLimitStore } from "../../stores/RateLimitStore.ts"
import type { Provider } from "../internal/limits/ProviderDefinition.ts"
import * as Providers from "./Provider.ts"

/**
 * Every model of a provider stayed unavailable for longer than the call
 * may be put off (`maxDeferral`).
 *
 * @category errors
 * @since 0.1.0
 */
export class ProvidersUnavailableError extends Schema.TaggedError<ProvidersUnavailableError>()("ProvidersUnavailableError", {
  /** The models tried, in order. */
  keys: Schema.Array(Schema.String),
  /** Why each model was unavailable at the last look, in the same order. */
  reasons: Schema.Array(Schema.String),
  /** How long the call was put off in all. */
  deferredMillis: Schema.Number,
  maxDeferralMillis: Schema.Number
}) {
  override get message() {
    const each = this.keys.map((k, i) => `${k}: ${this.reasons[i]}`).join("; ")
    return `Every model of provider ${this.keys[0]} was unavailable (${each}); the call was put off ${this.deferredMillis} ms, and ${this.maxDeferralMillis} ms is the most allowed (maxDeferral). Retry later, list another fallback, or raise maxDeferral.`
  }
}

/**
 * What one guarded call with fallbacks brings: the guard's options for
 * every model, and how long the call may be put off in all.
 *
 * @category models
 * @since 0.1.0
 */
export interface FallbackOptions extends Providers.GuardOptions {
  /** How long in all the call may wait while every model is unavailable: 0 to 24 hours (default 10 minutes). */
  readonly maxDeferral?: Duration.Input | undefined
}

/**
 * How long a model whose circuit is half-open with its probe running is
 * passed over before it is looked at again.
 *
 * @category constants
 * @since 0.1.0
 */
export const probeWait: Duration.Duration = Duration.seconds(1)

const defaultMaxDeferral = 10 * 60 * 1000
const maxDeferralCheck = Options.duration({ min: 0, max: 24 * 60 * 60 * 1000 })

/** The models of a provider, in the order they are tried. */
export const models = (provider: Provider): ReadonlyArray<Provider> => [provider, ...(provider.fallbacks ?? [])]

/** A model that cannot take the call now: until when, and why. */
interface Unavailable {
  readonly until: number
  readonly reason: string
}

type Attempt<A> = { readonly _tag: "Done"; readonly exit: Exit.Exit<A, unknown> } | { readonly _tag: "Unavailable"; readonly why: Unavailable }

/** The fleet-wide cooldown of `model`, if it runs now. */
const cooling = (model: Provider, now: number): Effect.Effect<Option.Option<Unavailable>, StoreError | InvalidInputError, RateLimitStore> =>
  Effect.gen(function*() {
    const until = yield* (yield* RateLimitStore).pausedUntil(model.key)
    return Option.isSome(until) && until.value > now
      ? Option.some({ until: until.value, reason: `rate-limited until ${new Date(until.value).toISOString()}` })
      : Option.none()
  })

/** Whether `exit` failed because `model` was unavailable, and until when. */
const unavailableIn = (model: Provider, exit: Exit.Exit<unknown, unknown>, now: number): Option.Option<Unavailable> => {
  if (Exit.isSuccess(exit)) return Option.none()
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isNone(error)) return Option.none()
  const e = error.value
  if (e instanceof CircuitBreaker.CircuitBreakerError) {
    if (e.reason._tag === "CircuitOpen") {
      return Option.some({ until: now + Math.max(1, Duration.toMillis(e.reason.retryAfter)), reason: "circuit open" })
    }
    if (e.reason._tag === "CircuitHalfOpen") return Option.some({ until: now + Duration.toMillis(probeWait), reason: "circuit half-open, its probe call running" })
    return Option.none()
  }
  const after = model.retryAfter?.(e)
  if (after === undefined) return Option.none()
  const millis = Options.millisOf(after)
  return Option.some({ until: now + Math.max(1, millis === undefined || Number.isNaN(millis) ? 1 : millis), reason: "answered 429 (rate-limited)" })
}

/** One try of one model: passed over under a cooldown, else its guarded call, unless that shows the model unavailable. */
const attempt = <A, E, R>(model: Provider, options: Providers.GuardOptions, call: (model: Provider) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const cooldown = yield* cooling(model, now)
    if (Option.isSome(cooldown)) return { _tag: "Unavailable", why: cooldown.value } as Attempt<A>
    const exit = yield* Effect.exit(Providers.guard(model, options)(Effect.suspend(() => call(model))))
    const why = unavailableIn(model, exit, yield* Clock.currentTimeMillis)
    return (Option.isSome(why) ? { _tag: "Unavailable", why: why.value } : { _tag: "Done", exit }) as Attempt<A>
  })

/** One pass over the models: the first answer, or why each was unavailable. */
const pass = <A, E, R>(all: ReadonlyArray<Provider>, options: Providers.GuardOptions, call: (model: Provider) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const passedOver: Array<Unavailable> = []
    for (const model of all) {
      const tried = yield* attempt(model, options, call)
      if (tried._tag === "Done") return { exit: tried.exit, passedOver }
      passedOver.push(tried.why)
    }
    return { exit: undefined, passedOver }
  })

/**
 * Guards `call` with the limits of each model of `provider`, moving on to
 * the next model while one is unavailable, and putting the call off on the
 * Clock while all are (see the module doc). `call` is given the model to
 * call (its `key` names it).
 *
 * @category combinators
 * @since 0.1.0
 */
export const guard = (provider: Provider, options: FallbackOptions) =>
<A, E, R>(
  call: (model: Provider) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | Providers.GuardError | ProvidersUnavailableError | BatonConfigError, R | Providers.GuardServices> =>
  Effect.gen(function*() {
    const maxDeferral = yield* Options.setting("maxDeferral", options.maxDeferral, maxDeferralCheck, defaultMaxDeferral)
    const all = models(provider)
    let deferred = 0
    while (true) {
      const { exit, passedOver } = yield* pass(all, options, call)
      if (exit !== undefined) return yield* (exit as Exit.Exit<A, E | Providers.GuardError>)
      const now = yield* Clock.currentTimeMillis
      const wait = Math.max(1, Math.min(...passedOver.map((u) => u.until)) - now)
      if (deferred + wait > maxDeferral) {
        return yield* new ProvidersUnavailableError({
          keys: all.map((m) => m.key),
          reasons: passedOver.map((u) => u.reason),
          deferredMillis: deferred,
          maxDeferralMillis: maxDeferral
        })
      }
      yield* Effect.sleep(Duration.millis(wait))
      deferred += wait
    }
  })
