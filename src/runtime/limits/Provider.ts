/**
 * Fleet-wide limits of a model (or tool) provider, and the one combinator a
 * step wraps its call in: `Provider.guard(provider, { holder })(call)`.
 *
 * A provider definition names a key and any of:
 * - `slots`: at most `max` calls at once across every instance (leases in
 *   `RateLimitStore`, see `ProviderSlots`);
 * - `windows`: calls or tokens per window — effect's own `RateLimiter`
 *   (fixed window or token bucket) over the `RateLimiterStore` in context
 *   (SQLite / Postgres / memory); a call over the limit waits its turn;
 * - `breaker`: effect's own `CircuitBreaker` over the `CircuitBreakerStore`
 *   in context — failures open it for every instance; an open circuit fails
 *   the call with effect's `CircuitBreakerError` (reason `CircuitOpen`);
 * - `retryAfter`: recognises a rate-limit answer (HTTP 429) among the call's
 *   errors and reads its Retry-After: the provider then pauses fleet-wide
 *   (`RateLimitStore.pauseUntil`) and every instance's next guarded call
 *   waits until the pause ends. A 429 does not count as a breaker failure.
 * - `adaptive`: effect's adaptive limiter learns the provider's real rate
 *   from its 429s (cooldown, learning, learned) in the `RateLimiterStore`,
 *   shared by every instance; calls are then spaced to the learned rate.
 *
 * A guarded call, in order: budgets checked and the call's cost charged
 * (`Budget`), the shared cooldown honoured, each window consumed (waiting as
 * told), the adaptive limiter's delay waited, a slot taken, then the call
 * through the breaker.
 *
 * `readiness(providers)` gives one health component per provider with a
 * breaker, named `provider:<key>`: Degraded while its circuit is open or
 * half-open — never Unhealthy (the instance can still serve other work).
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, type Exit, Scope } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as RateLimiter from "effect/persistence/RateLimiter"
import type { BatonConfigError, InvalidInputError, StoreError } from "../../stores/Errors.ts"
import type { InstanceId, TenantId } from "../../stores/Ids.ts"
import * as Options from "../../stores/internal/options.ts"
import type { LedgerStore } from "../../stores/LedgerStore.ts"
import { RateLimitStore } from "../../stores/RateLimitStore.ts"
import * as Budget from "./Budget.ts"
import { type HealthComponent, pingTimeout } from "../Health.ts"
import * as Definition from "../internal/limits/ProviderDefinition.ts"
import type { Provider, Window } from "../internal/limits/ProviderDefinition.ts"
import * as ProviderSlots from "./ProviderSlots.ts"
import { ModelCalls, type UnrecordedModelCallError } from "../internal/evaluation/ModelCalls.ts"

export type {
  /**
   * A provider's circuit policy (see `ProviderDefinition`).
   *
   * @category models
   * @since 0.1.0
   */
  BreakerPolicy,
  /**
   * A provider's fleet-wide limits (see `ProviderDefinition`).
   *
   * @category models
   * @since 0.1.0
   */
  Provider,
  /**
   * A limit on calls or tokens per window (see `ProviderDefinition`).
   *
   * @category models
   * @since 0.1.0
   */
  Window
} from "../internal/limits/ProviderDefinition.ts"

/**
 * What one guarded call brings.
 *
 * @category models
 * @since 0.1.0
 */
export interface GuardOptions {
  /** The instance making the call (it holds the slot): the step context's `instanceId`. */
  readonly holder: InstanceId
  /** The tenant the call is for (the step context's `tenantId`): waiting calls of one instance take tenants in turn for the provider's slots. */
  readonly tenantId?: TenantId | undefined
  /** Tokens the call is expected to use, counted by `"tokens"` windows (default 1). */
  readonly tokens?: number | undefined
  /** Budgets checked before the call; `cost` is charged to them atomically. */
  readonly budgets?: ReadonlyArray<Budget.Budget> | undefined
  /** Charged to `budgets` before the call (default 0: only checked). */
  readonly cost?: number | undefined
  /**
   * The model the call asks, kept with its recorded answer (see `Evaluation`).
   *
   * @since 0.1.0
   */
  readonly model?: string | undefined
}

/**
 * The errors a guard adds to the call's own.
 *
 * @category models
 * @since 0.1.0
 */
export type GuardError =
  | ProviderSlots.SlotError
  | Budget.BudgetError
  | RateLimiter.RateLimiterError
  | CircuitBreaker.CircuitBreakerError
  | StoreError
  | InvalidInputError
  | UnrecordedModelCallError

/**
 * The services a guarded call uses.
 *
 * @category models
 * @since 0.1.0
 */
export type GuardServices = RateLimitStore | RateLimiter.RateLimiterStore | CircuitBreaker.CircuitBreakerStore | LedgerStore

/**
 * A checked provider definition; a bad field fails with `BatonConfigError` naming it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (definition: Provider) => Effect.Effect<Provider, BatonConfigError> = Definition.make

const windowKey = (p: Provider, w: Window) => `${p.key}/${w.unit ?? "calls"}/${w.algorithm ?? "fixed-window"}/${Options.millisOf(w.window)}`

/** Waits while the provider is paused fleet-wide (a 429's cooldown), however often it is extended. */
const honourCooldown = (key: string): Effect.Effect<void, StoreError | InvalidInputError, RateLimitStore> =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    while (true) {
      const until = yield* store.pausedUntil(key)
      const now = yield* Clock.currentTimeMillis
      if (until._tag === "None" || until.value <= now) return
      yield* Effect.sleep(Duration.millis(until.value - now))
    }
  })

/**
 * Pauses the provider fleet-wide until `retryAfter` from now (a 429 seen by
 * any instance); every instance's guarded calls wait until then.
 *
 * @category operations
 * @since 0.1.0
 */
export const cooldown = (provider: Provider, retryAfter: Duration.Input): Effect.Effect<number, StoreError | InvalidInputError, RateLimitStore> =>
  Effect.gen(function*() {
    const afterMillis = yield* Options.argument("Provider.cooldown", "retryAfter", retryAfter, retryAfterCheck, 0)
    const store = yield* RateLimitStore
    const now = yield* Clock.currentTimeMillis
    return yield* store.pauseUntil(provider.key, now + Math.max(0, afterMillis))
  })

/** A Retry-After: any duration (a negative one counts as none); not NaN, not text that is no duration. */
const retryAfterCheck = Options.duration({ min: Number.NEGATIVE_INFINITY, max: Number.POSITIVE_INFINITY })

const consumeWindows = (p: Provider, tokens: number) =>
  Effect.gen(function*() {
    if (p.windows === undefined || p.windows.length === 0) return
    const limiter = yield* RateLimiter.make
    for (const w of p.windows) {
      yield* RateLimiter.sleep(limiter, {
        key: windowKey(p, w),
        limit: w.limit,
        window: w.window,
        algorithm: w.algorithm,
        tokens: w.unit === "tokens" ? tokens : 1
      })
    }
  })

const adaptiveKey = (p: Provider) => `${p.key}/adaptive`

/**
 * effect's adaptive limiter before the call: waits out its cooldown, then
 * the delay of the learned rate; answers the admission (its epoch) for the
 * feedback of a 429. Without `adaptive`, nothing.
 */
const adaptiveAdmit = (p: Provider, tokens: number) =>
  Effect.gen(function*() {
    const adaptive = p.adaptive
    if (adaptive === undefined) return undefined
    const limiter = yield* RateLimiter.make
    while (true) {
      const admitted = yield* limiter.adaptiveConsume({
        key: adaptiveKey(p),
        tokens,
        fallbackLimit: adaptive.limit,
        fallbackWindow: Duration.millis(Options.millisOf(adaptive.window) ?? Number.NaN)
      })
      if (!Duration.isZero(admitted.delay)) yield* Effect.sleep(admitted.delay)
      // a cooldown is waited out, then the call asks again (it may start the learning)
      if (admitted.phase !== "cooldown" || Duration.isZero(admitted.delay)) return admitted
    }
  })

/** A 429 of an adaptive call teaches effect's adaptive limiter (the cooldown, the learned rate). */
const withAdaptiveFeedback = <A, E, R>(p: Provider, admitted: RateLimiter.AdaptiveConsumeResult | undefined, tokens: number, call: Effect.Effect<A, E, R>) =>
  admitted === undefined || p.retryAfter === undefined ? call : Effect.tapError(call, (e) => {
    const after = p.retryAfter!(e)
    if (after === undefined) return Effect.void
    const afterMillis = Options.millisOf(after)
    if (afterMillis === undefined || Number.isNaN(afterMillis)) {
      return Effect.logWarning(`provider ${p.key}: retryAfter answered ${Options.show(after)}, which is not a duration: the 429 is not learnt from`)
    }
    return Effect.ignore(Effect.flatMap(RateLimiter.make, (limiter) =>
      limiter.adaptiveFeedback({ key: adaptiveKey(p), epoch: admitted.epoch, tokens, status: 429, retryAfter: Duration.millis(Math.max(0, afterMillis)) })))
  })

/** The call with its 429s turned into the shared cooldown. */
const withCooldownOn429 = <A, E, R>(p: Provider, call: Effect.Effect<A, E, R>) =>
  p.retryAfter === undefined ? call : Effect.tapError(call, (e) => {
    const after = p.retryAfter!(e)
    return after === undefined ? Effect.void : Effect.ignore(cooldown(p, after))
  })

const throughBreaker = <A, E, R>(
  p: Provider,
  call: Effect.Effect<A, E, R>
): Effect.Effect<A, E | CircuitBreaker.CircuitBreakerError, R | CircuitBreaker.CircuitBreakerStore> => {
  const policy = p.breaker
  if (policy === undefined) return call
  const classify = (exit: Exit.Exit<A, E>): CircuitBreaker.Outcome =>
    exit._tag === "Success"
      ? CircuitBreaker.success
      : exit.cause.reasons.some((r) => r._tag === "Fail" && p.retryAfter?.(r.error) !== undefined)
      ? CircuitBreaker.ignored
      : CircuitBreaker.failure()
  // the breaker lives (its transition PubSub) for this call only; its state is in the store
  return Effect.acquireUseRelease(
    Scope.make(),
    (scope) =>
      Effect.flatMap(
        Effect.provideService(CircuitBreaker.make({ ...policy, onStoreError: "allow" }), Scope.Scope, scope),
        (breaker) => breaker.execute(call, { key: p.key, classify })
      ),
    (scope, exit) => Scope.close(scope, exit)
  )
}

/**
 * Guards `call` with every limit of `provider` (see the module doc).
 *
 * In an Effect step of a root execution (`Workflow.effectStep`) with an
 * `ExecutionHistoryStore`, the call's answer is recorded with the
 * execution's history; under a replay (`Evaluation.replay`) the recorded
 * answer is answered instead, with no limit consulted and nothing charged
 * (see `Evaluation`).
 *
 * @category combinators
 * @since 0.1.0
 */
export const guard = (provider: Provider, options: GuardOptions) =>
<A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E | GuardError, R | GuardServices> =>
  Effect.flatMap(Effect.serviceOption(ModelCalls), (calls) =>
    calls._tag === "None" ? limited(provider, options, call) : calls.value.call(provider.key, options.model, limited(provider, options, call)))

/** The call under every limit of `provider`. */
const limited = <A, E, R>(provider: Provider, options: GuardOptions, call: Effect.Effect<A, E, R>): Effect.Effect<A, E | GuardError, R | GuardServices> =>
  Effect.gen(function*() {
    if (options.budgets !== undefined && options.budgets.length > 0) {
      yield* Budget.check(options.budgets)
      if ((options.cost ?? 0) > 0) yield* Budget.spend(options.budgets, options.cost!)
    }
    yield* honourCooldown(provider.key)
    yield* consumeWindows(provider, options.tokens ?? 1)
    const admitted = yield* adaptiveAdmit(provider, options.tokens ?? 1)
    const breakered = throughBreaker(provider, withAdaptiveFeedback(provider, admitted, options.tokens ?? 1, withCooldownOn429(provider, call)))
    return yield* provider.slots === undefined
      ? breakered
      : ProviderSlots.withSlot(provider.key, { ...provider.slots, holder: options.holder, tenantId: options.tenantId })(breakered)
  })

/**
 * The health of each provider's circuit, named `provider:<key>`: Healthy
 * when closed, Degraded when open or half-open, Degraded too when its state
 * cannot be read — never Unhealthy.
 *
 * @category health
 * @since 0.1.0
 */
export const readiness = (providers: ReadonlyArray<Provider>): Effect.Effect<ReadonlyArray<HealthComponent>, never, CircuitBreaker.CircuitBreakerStore> =>
  Effect.gen(function*() {
    const store = yield* CircuitBreaker.CircuitBreakerStore
    return yield* Effect.forEach(providers.filter((p) => p.breaker !== undefined), (p) => {
      const name = `provider:${p.key}`
      return store.state(p.key).pipe(
        Effect.map((s): HealthComponent => {
          switch (s._tag) {
            case "Closed":
              return { name, status: "Healthy", message: "circuit closed" }
            case "Open":
              // the store moves an Open circuit to HalfOpen only when a call is admitted: after its open time it is half-open
              if (Duration.toMillis(s.retryAfter) <= 0) {
                return { name, status: "Degraded", message: "circuit half-open: its open time is over, the next call is the probe" }
              }
              return { name, status: "Degraded", message: `circuit open for ${Math.ceil(Duration.toMillis(s.retryAfter) / 1000)} s more (opening ${s.consecutiveOpenings} in a row): calls to ${p.key} fail fast` }
            case "HalfOpen":
              return { name, status: "Degraded", message: `circuit half-open: ${s.probing ? "a probe call is running" : "the next call is the probe"}` }
          }
        }),
        Effect.timeoutOrElse({
          duration: pingTimeout,
          orElse: () => Effect.succeed<HealthComponent>({ name, status: "Degraded", message: `circuit state unknown: no answer within ${Duration.toMillis(pingTimeout)} ms` })
        }),
        Effect.catch((e) => Effect.succeed<HealthComponent>({ name, status: "Degraded", message: `circuit state unknown: ${e.message}` }))
      )
    }, { concurrency: "unbounded" })
  })
