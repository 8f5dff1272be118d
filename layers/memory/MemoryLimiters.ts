/**
 * effect's own in-memory `RateLimiterStore` and `CircuitBreakerStore`, for
 * one process (tests, the harness, a single instance). Build the Layer once
 * and share it by reference between instances, as the memory stores' state.
 *
 * @since 0.1.0
 */
import { type Duration, Layer } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as RateLimiter from "effect/persistence/RateLimiter"

/**
 * Both memory stores.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options?: { readonly idleTimeToLive?: Duration.Input | undefined }): Layer.Layer<
  RateLimiter.RateLimiterStore | CircuitBreaker.CircuitBreakerStore
> => Layer.merge(RateLimiter.layerStoreMemory, CircuitBreaker.layerStoreMemory(options))
