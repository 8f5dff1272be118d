/**
 * effect's own in-memory `RateLimiterStore` and `CircuitBreakerStore`, for
 * one process (tests, the harness, a single instance). Build the Layer once
 * and share it by reference between instances, as the memory stores' state.
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Layer } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as RateLimiter from "effect/persistence/RateLimiter"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import { checkedLayer, fieldsOf, idleTimeToLive, setting } from "../../src/stores/internal/options.ts"

/**
 * What `layer` takes.
 *
 * @category models
 * @since 0.1.0
 */
export interface MemoryLimitersOptions {
  /** How long an idle circuit breaker's state is kept: 1 second to 366 days (effect's default when unset). */
  readonly idleTimeToLive?: Duration.Input | undefined
}

const fields = fieldsOf<MemoryLimitersOptions>({ idleTimeToLive: true })

/**
 * Both memory stores. An option not listed in `MemoryLimitersOptions` fails
 * the build with `BatonConfigError` naming it (without options the Layer
 * cannot fail).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: {
  (): Layer.Layer<RateLimiter.RateLimiterStore | CircuitBreaker.CircuitBreakerStore>
  (options: MemoryLimitersOptions | undefined): Layer.Layer<RateLimiter.RateLimiterStore | CircuitBreaker.CircuitBreakerStore, BatonConfigError>
} = (options?: MemoryLimitersOptions) =>
  // Without options nothing is checked that could fail: the overload without them says so.
  checkedLayer(options, fields, () =>
    Layer.unwrap(Effect.as(
      setting("idleTimeToLive", options?.idleTimeToLive, idleTimeToLive, undefined),
      Layer.merge(RateLimiter.layerStoreMemory, CircuitBreaker.layerStoreMemory(options))
    ))) as Layer.Layer<
    RateLimiter.RateLimiterStore | CircuitBreaker.CircuitBreakerStore
  >
