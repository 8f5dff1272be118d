/**
 * effect's `RateLimiterStore` and `CircuitBreakerStore` on SQLite (the
 * `layers/sql` stores), so `RateLimiter.layer` and `CircuitBreaker.layer`
 * share one state across every process on the database file.
 *
 * - `layerOnClient(options)` — both stores on the `SqlClient` in context,
 *   schema migrated first.
 * - `layer(options)` — the same on a connection of its own.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import type { CircuitBreakerStore } from "effect/persistence/CircuitBreaker"
import type { RateLimiterStore } from "effect/persistence/RateLimiter"
import type { SqlClient } from "effect/sql"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { checkedLayer, fieldsOf } from "../../src/stores/internal/options.ts"
import * as SqlCircuitBreakerStore from "../sql/SqlCircuitBreakerStore.ts"
import * as SqlLimiterStores from "../sql/SqlLimiterStores.ts"
import * as SqliteClient from "./SqliteClient.ts"
import { clientAndBreakerFields, clientOptions } from "./internal/clientOptions.ts"

/**
 * Where the database is, and the breaker's probe lease and idle time.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteLimitersOptions extends SqliteClient.SqliteClientOptions, SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions {}

const fields = fieldsOf<SqliteLimitersOptions>(clientAndBreakerFields)

/**
 * Both stores on the `SqlClient` in context, schema migrated first. The
 * client's own options are accepted too (one options object can serve the
 * client Layer and this one; the client reads those); any other field fails
 * the build with `BatonConfigError` naming it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOnClient = (
  options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions = {}
): Layer.Layer<RateLimiterStore | CircuitBreakerStore, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  checkedLayer(options, fields, () => SqlLimiterStores.layer(options))

/**
 * Both stores on a connection of their own. An option not listed in the type
 * fails the build with `BatonConfigError` naming it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqliteLimitersOptions = {}): Layer.Layer<RateLimiterStore | CircuitBreakerStore, StoreError | BatonConfigError> =>
  checkedLayer(options, fields, () => SqlLimiterStores.layer(options).pipe(Layer.provide(SqliteClient.layer(clientOptions(options)))))
