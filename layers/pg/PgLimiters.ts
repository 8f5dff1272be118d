/**
 * effect's `RateLimiterStore` and `CircuitBreakerStore` on Postgres (the
 * `layers/sql` stores), so `RateLimiter.layer` and `CircuitBreaker.layer`
 * share one state across every instance of the fleet.
 *
 * - `layerOnClient(options)` — both stores on the `SqlClient` in context (the
 *   pool `PgStores.layer` provides, say), after migrating under the advisory
 *   lock (`PgMigrations`).
 * - `layer(options)` — the same on a pool of its own.
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
import * as PgClient from "./PgClient.ts"
import * as PgMigrations from "./PgMigrations.ts"
import { clientAndBreakerFields } from "./internal/optionFields.ts"

/**
 * Where the tables are, and the breaker's probe lease and idle time.
 *
 * @category models
 * @since 0.1.0
 */
export interface PgLimitersOptions extends PgClient.PgClientOptions, SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions {}

/** What `layerOnClient` takes. */
type OnClientOptions = SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions & { readonly schema?: string | undefined }

const fields = fieldsOf<PgLimitersOptions>(clientAndBreakerFields)

const onClient = (options: OnClientOptions) => SqlLimiterStores.layerAfter(PgMigrations.migrate(options), options)

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
  options: OnClientOptions = {}
): Layer.Layer<RateLimiterStore | CircuitBreakerStore, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  checkedLayer(options, fields, () => onClient(options))

/**
 * Both stores on a pool of their own. An option not listed in the type fails
 * the build with `BatonConfigError` naming it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgLimitersOptions = {}): Layer.Layer<RateLimiterStore | CircuitBreakerStore, StoreError | BatonConfigError> =>
  checkedLayer(options, fields, () => onClient(options).pipe(Layer.provide(PgClient.layer(options))))
