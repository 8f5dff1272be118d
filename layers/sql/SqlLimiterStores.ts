/**
 * effect's `RateLimiterStore` and `CircuitBreakerStore` together on the
 * `SqlClient` in context (`SqlRateLimiterStore`, `SqlCircuitBreakerStore`),
 * for the backends' bundles.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { CircuitBreakerStore } from "effect/persistence/CircuitBreaker"
import { RateLimiterStore } from "effect/persistence/RateLimiter"
import type { SqlClient } from "effect/sql"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import * as SqlCircuitBreakerStore from "./SqlCircuitBreakerStore.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlRateLimiterStore from "./SqlRateLimiterStore.ts"

/**
 * Both stores, after `migrate` ran (a backend's own migration, such as
 * Postgres's under its advisory lock).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerAfter = <E>(
  migrate: Effect.Effect<unknown, E, SqlClient.SqlClient>,
  options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions = {}
): Layer.Layer<RateLimiterStore | CircuitBreakerStore, E | BatonConfigError, SqlClient.SqlClient> =>
  Layer.unwrap(Effect.as(
    migrate,
    Layer.merge(
      Layer.effect(RateLimiterStore, SqlRateLimiterStore.make(options)),
      Layer.effect(CircuitBreakerStore, SqlCircuitBreakerStore.make(options))
    )
  ))

/**
 * Both stores, after `SqlMigrations.migrate`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions = {}
): Layer.Layer<RateLimiterStore | CircuitBreakerStore, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  layerAfter(SqlMigrations.migrate(options), options)
