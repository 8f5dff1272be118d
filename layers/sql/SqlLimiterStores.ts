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
export const layerAfter = <E, R = SqlClient.SqlClient>(
  migrate: Effect.Effect<unknown, E, R>,
  options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions = {}
): Layer.Layer<RateLimiterStore | CircuitBreakerStore, E | BatonConfigError, SqlClient.SqlClient | R> =>
  Layer.unwrap(Effect.as(
    migrate,
    Layer.merge(
      Layer.effect(RateLimiterStore, SqlRateLimiterStore.make(options)),
      Layer.effect(CircuitBreakerStore, SqlCircuitBreakerStore.make(options))
    )
  ))

/**
 * The two store services.
 *
 * @category models
 * @since 0.1.0
 */
export type LimiterStores = RateLimiterStore | CircuitBreakerStore

/**
 * Both stores over the schema a migrations Layer migrated (`Migrated`, as
 * `SqlStores.layer` takes it): what the backends' bundles add to their
 * stores, so the schema is migrated once for all of them.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMigrated = (
  options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions = {}
): Layer.Layer<LimiterStores, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  layerAfter(SqlMigrations.requireMigrated(options), options)

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
