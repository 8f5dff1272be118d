/**
 * Every store contract on Postgres: the stores of `layers/sql` over
 * `PgClient`'s pool, the schema migrated once at build (`PgMigrations.layer`,
 * under an advisory lock), and cross-instance wake-ups over LISTEN/NOTIFY
 * (`PgWakeups`). Named like every backend (`MemoryStores`, `SqliteStores`):
 *
 * - `layer(options)` — the eight stores, an `IdGenerator` (random ids) and,
 *   unless `wakeups: false`, the NOTIFY wake-ups, on one pool. The path to
 *   instances on several machines: give every instance the same URL (and
 *   schema / table prefix).
 * - `layerConfig(config)` — the same, with the options read through Effect
 *   `Config` (default `PgStores.config`: `BATON_PG_URL`, `BATON_PG_SCHEMA`,
 *   `BATON_PG_MAX_CONNECTIONS`, `BATON_PG_CONNECT_TIMEOUT`,
 *   `BATON_PG_WAKEUPS`, `BATON_TABLE_PREFIX`).
 * - `layerOnClient(options)` — the eight stores, migrated once, on a
 *   `PgClient.layer` the app provides (and shares with its own queries).
 * - Every bundle (`layer`, `layerConfig`, `layerOnClient`) also provides
 *   effect's `RateLimiterStore` and `CircuitBreakerStore` on the same pool
 *   and schema (`SqlLimiterStores`), so `RateLimiter.layer`,
 *   `CircuitBreaker.layer` and `Provider.guard` count fleet-wide with no
 *   other Layer.
 * - `layerLeaseStore(options)`, `layerRecordStore(options)`, … — one store
 *   alone on its own pool (migrated at build), to mix with other backends.
 *
 * An option these Layers do not read (a typo: `ulr`, `maxConections`)
 * fails the build with `BatonConfigError` naming it and the option it
 * probably meant, before any connection is opened.
 *
 * Connections: the pool holds up to `maxConnections` (default 10); the
 * wake-ups hold two more, outside the pool, for LISTEN (lease releases and streamed events).
 *
 * @since 0.1.0
 */
import type { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Config, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { boolean, checkedLayer, fieldsOf, setting } from "../../src/stores/internal/options.ts"
import * as Ids from "../../src/stores/Ids.ts"
import type { LeaseStore } from "../../src/stores/LeaseStore.ts"
import type { LedgerStore } from "../../src/stores/LedgerStore.ts"
import type { PauseStore } from "../../src/stores/PauseStore.ts"
import type { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import type { RecordStore } from "../../src/stores/RecordStore.ts"
import type { TreeStore } from "../../src/stores/TreeStore.ts"
import { layerFromConfig, optional } from "../sql/internal/config.ts"
import * as SqlCheckpointStore from "../sql/SqlCheckpointStore.ts"
import * as SqlChildQueueStore from "../sql/SqlChildQueueStore.ts"
import * as SqlExecutionHistoryStore from "../sql/SqlExecutionHistoryStore.ts"
import * as SqlRequestStore from "../sql/SqlRequestStore.ts"
import * as SqlScheduleStore from "../sql/SqlScheduleStore.ts"
import * as SqlConcurrencyKeyStore from "../sql/SqlConcurrencyKeyStore.ts"
import * as SqlDebounceStore from "../sql/SqlDebounceStore.ts"
import type { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import type { RequestStore } from "../../src/stores/RequestStore.ts"
import type { ScheduleStore } from "../../src/stores/ScheduleStore.ts"
import type { ConcurrencyKeyStore } from "../../src/stores/ConcurrencyKeyStore.ts"
import type { DebounceStore } from "../../src/stores/DebounceStore.ts"
import * as SqlLeaseStore from "../sql/SqlLeaseStore.ts"
import * as SqlLedgerStore from "../sql/SqlLedgerStore.ts"
import * as SqlCircuitBreakerStore from "../sql/SqlCircuitBreakerStore.ts"
import * as SqlLimiterStores from "../sql/SqlLimiterStores.ts"
import type * as SqlMigrations from "../sql/SqlMigrations.ts"
import * as SqlPauseStore from "../sql/SqlPauseStore.ts"
import * as SqlRateLimitStore from "../sql/SqlRateLimitStore.ts"
import * as SqlRecordStore from "../sql/SqlRecordStore.ts"
import * as SqlStores from "../sql/SqlStores.ts"
import * as SqlTreeStore from "../sql/SqlTreeStore.ts"
import * as PgClient from "./PgClient.ts"
import * as PgMigrations from "./PgMigrations.ts"
import * as PgLiveness from "./PgLiveness.ts"
import * as PgWakeups from "./PgWakeups.ts"
import * as PgEventWakeups from "./PgEventWakeups.ts"
import { clientAndBreakerFields } from "./internal/optionFields.ts"

export type {
  /**
   * The eight store services.
   *
   * @category models
   * @since 0.1.0
   */
  Stores
} from "../sql/SqlStores.ts"

/**
 * Where the database is and how to connect, the table prefix, and whether
 * to wake other instances.
 *
 * @category models
 * @since 0.1.0
 */
export interface PgStoresOptions extends PgClient.PgClientOptions, SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions {
  /**
   * LISTEN/NOTIFY wake-ups between instances (default true): a lease released
   * or a child queued on one instance wakes the waiters of every other at
   * once, and an event appended on one wakes the `Baton.stream` readers of
   * every other (`PgEventWakeups`); polling stays the fallback. Holds two
   * more connections (one LISTEN each). `true` or `false` only.
   */
  readonly wakeups?: boolean | undefined
}

/**
 * What a Postgres store Layer fails with when built: bad options
 * (`BatonConfigError`, naming the field) or a server that cannot be reached
 * or migrated (`StoreError`).
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | BatonConfigError

/** What `layerOnClient` takes. */
type OnClientOptions = SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions & { readonly schema?: string | undefined }

/** The fields `layerOnClient` accepts: its own, and the client's (one options object serves both Layers, as the README composes them; the client reads those). */
const onClientFields = fieldsOf<PgClient.PgClientOptions & OnClientOptions>(clientAndBreakerFields)

/** The fields `layer` and the one-store Layers read: anything else is refused at build, naming it. */
const fields = fieldsOf<PgStoresOptions>({ ...clientAndBreakerFields, wakeups: true })

/**
 * The options read through Effect `Config` (any `ConfigProvider`; the
 * environment by default): `BATON_PG_URL` (redacted), `BATON_PG_SCHEMA`,
 * `BATON_PG_MAX_CONNECTIONS`, `BATON_PG_CONNECT_TIMEOUT` (a duration),
 * `BATON_PG_APPLICATION_NAME`, `BATON_PG_WAKEUPS` (true/false),
 * `BATON_TABLE_PREFIX`. Each may be absent (the default applies).
 *
 * @category config
 * @since 0.1.0
 */
export const config: Config.Config<PgStoresOptions> = Config.all({
  url: optional(Config.Redacted(PgClient.urlSetting)),
  schema: optional(Config.String("BATON_PG_SCHEMA")),
  maxConnections: optional(Config.Int("BATON_PG_MAX_CONNECTIONS")),
  connectTimeout: optional(Config.Duration("BATON_PG_CONNECT_TIMEOUT")),
  applicationName: optional(Config.String("BATON_PG_APPLICATION_NAME")),
  wakeups: optional(Config.Boolean("BATON_PG_WAKEUPS")),
  tablePrefix: optional(Config.String("BATON_TABLE_PREFIX"))
})

/**
 * The eight stores, and effect's `RateLimiterStore` and `CircuitBreakerStore`,
 * on the client in context (`PgClient.layer`), schema migrated once at build (`PgMigrations.layer`). `RecordStore` needs an
 * `IdGenerator`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOnClient = (options: OnClientOptions = {}): Layer.Layer<
  SqlStores.Stores | SqlLimiterStores.LimiterStores,
  Failure,
  SqlClient.SqlClient | Ids.IdGenerator
> => checkedLayer(options, onClientFields, () => onClient(options))

/** `layerOnClient` without the check: `layer` passes it every option (the pool's too). */
const onClient = (options: OnClientOptions) =>
  Layer.merge(SqlStores.layer(options), SqlLimiterStores.layerMigrated(options)).pipe(Layer.provide(PgMigrations.layer(options)))

/**
 * The eight stores, an `IdGenerator` and (unless `wakeups: false`) NOTIFY
 * wake-ups, on one pool; schema migrated once at build. Also provides the
 * pool (`PgClient`, `SqlClient`) for the app's own queries.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgStoresOptions = {}): Layer.Layer<
  SqlStores.Stores | SqlLimiterStores.LimiterStores | Ids.IdGenerator | EffectPgClient.PgClient | SqlClient.SqlClient,
  Failure
> =>
  checkedLayer(options, fields, () => Layer.unwrap(Effect.as(setting("wakeups", options?.wakeups, boolean, true), withWakeups(options))))

/** The bundle once `wakeups` is a boolean (or unset). */
const withWakeups = (options: PgStoresOptions) => {
  // With the instances' liveness locks (crash takeover; see PgLiveness).
  const stores = Layer.merge(onClient(options), PgLiveness.layer(options)).pipe(Layer.provideMerge(Ids.layer))
  const woken = options.wakeups === false ? stores : Layer.mergeAll(stores, PgWakeups.layer(options), PgEventWakeups.layer(options))
  return woken.pipe(Layer.provideMerge(PgClient.layer(options)))
}

/**
 * `layer` with its options read through Effect `Config`
 * (default: `PgStores.config`). A value that cannot be read, or that cannot
 * work, fails the build with `BatonConfigError` naming the setting.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (options: Config.Wrap<PgStoresOptions> = config): Layer.Layer<
  SqlStores.Stores | SqlLimiterStores.LimiterStores | Ids.IdGenerator | EffectPgClient.PgClient | SqlClient.SqlClient,
  Failure
> => layerFromConfig(options, layer)

const alone = <A, R>(storeLayer: Layer.Layer<A, BatonConfigError, R>, options: PgStoresOptions) =>
  checkedLayer(options, fields, () =>
    storeLayer.pipe(
      Layer.provide(PgMigrations.layer(options)),
      Layer.provide(PgClient.layer(options))
    ) as Layer.Layer<A, Failure, Exclude<R, SqlClient.SqlClient | SqlMigrations.Migrated>>)

/**
 * `LeaseStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerLeaseStore = (options: PgStoresOptions = {}): Layer.Layer<LeaseStore, Failure> =>
  alone(SqlLeaseStore.layer(options), options)

/**
 * `RecordStore` alone, on its own pool (needs an `IdGenerator`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRecordStore = (options: PgStoresOptions = {}): Layer.Layer<RecordStore, Failure, Ids.IdGenerator> =>
  alone(SqlRecordStore.layer(options), options)

/**
 * `PauseStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerPauseStore = (options: PgStoresOptions = {}): Layer.Layer<PauseStore, Failure> =>
  alone(SqlPauseStore.layer(options), options)

/**
 * `TreeStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerTreeStore = (options: PgStoresOptions = {}): Layer.Layer<TreeStore, Failure> =>
  alone(SqlTreeStore.layer(options), options)

/**
 * `CheckpointStore` alone, on its own pool. Its fenced writes check the lease
 * rows of the same database: pair it with Postgres leases on the same URL,
 * schema and prefix.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerCheckpointStore = (options: PgStoresOptions = {}): Layer.Layer<CheckpointStore, Failure> =>
  alone(SqlCheckpointStore.layer(options), options)

/**
 * `LedgerStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerLedgerStore = (options: PgStoresOptions = {}): Layer.Layer<LedgerStore, Failure> =>
  alone(SqlLedgerStore.layer(options), options)

/**
 * `RateLimitStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRateLimitStore = (options: PgStoresOptions = {}): Layer.Layer<RateLimitStore, Failure> =>
  alone(SqlRateLimitStore.layer(options), options)

/**
 * `ChildQueueStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerChildQueueStore = (options: PgStoresOptions = {}): Layer.Layer<ChildQueueStore, Failure> =>
  alone(SqlChildQueueStore.layer(options), options)

/**
 * `ExecutionHistoryStore` alone, on its own pool. Its saves check the lease
 * rows of the same database: pair it with leases on the same database.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerExecutionHistoryStore = (options: PgStoresOptions = {}): Layer.Layer<ExecutionHistoryStore, Failure> =>
  alone(SqlExecutionHistoryStore.layer(options), options)

/**
 * `RequestStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRequestStore = (options: PgStoresOptions = {}): Layer.Layer<RequestStore, Failure> =>
  alone(SqlRequestStore.layer(options), options)

/**
 * `ScheduleStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerScheduleStore = (options: PgStoresOptions = {}): Layer.Layer<ScheduleStore, Failure> =>
  alone(SqlScheduleStore.layer(options), options)

/**
 * `ConcurrencyKeyStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConcurrencyKeyStore = (options: PgStoresOptions = {}): Layer.Layer<ConcurrencyKeyStore, Failure> =>
  alone(SqlConcurrencyKeyStore.layer(options), options)

/**
 * `DebounceStore` alone, on its own pool.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerDebounceStore = (options: PgStoresOptions = {}): Layer.Layer<DebounceStore, Failure> =>
  alone(SqlDebounceStore.layer(options), options)
