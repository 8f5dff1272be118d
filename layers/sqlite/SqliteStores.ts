/**
 * Every store contract in one SQLite database, over one `node:sqlite`
 * connection (see `SqliteClient` for WAL, busy timeout and the path setting).
 * Named like every backend (`MemoryStores`, `PgStores`):
 *
 * - `layer(options)` — the eight stores and an `IdGenerator` (random ids) on
 *   one connection; the schema is migrated once at build
 *   (`SqliteMigrations.layer`); with `wakeups: true`, lease-release wake-ups
 *   between processes on the file (`SqliteWakeups`, on a connection of
 *   their own).
 * - `layerConfig(config)` — the same, with the options read through Effect
 *   `Config` (default `SqliteStores.config`: `BATON_SQLITE_PATH`,
 *   `BATON_SQLITE_BUSY_TIMEOUT`, `BATON_SQLITE_SYNCHRONOUS`,
 *   `BATON_SQLITE_WAL_CHECKPOINT`, `BATON_SQLITE_WAL_CHECKPOINT_INTERVAL`,
 *   `BATON_TABLE_PREFIX`).
 * - `layerOnClient(options)` — the eight stores, migrated once, on the
 *   `SqlClient` in context (a `SqliteClient.layer` the app provides).
 * - Every bundle (`layer`, `layerConfig`, `layerOnClient`) also provides
 *   effect's `RateLimiterStore` and `CircuitBreakerStore` on the same
 *   connection and schema (`SqlLimiterStores`), so `RateLimiter.layer`,
 *   `CircuitBreaker.layer` and `Provider.guard` count fleet-wide on the
 *   database file with no other Layer.
 * - `layerLeaseStore(options)`, `layerRecordStore(options)`, … — one store
 *   alone on its own connection (migrated at build), to mix with other
 *   backends (SQLite leases with in-memory rate limits, say). To put a few
 *   stores on one connection instead, provide one `SqliteClient.layer` and one
 *   `SqliteMigrations.layer` to the `layers/sql` store Layers.
 *
 * An option these Layers do not read (a typo: `pth`, `synchronus`, or in an
 * object `wakeups`) fails the build with `BatonConfigError` naming it and the
 * option it probably meant, before anything is opened.
 *
 * Several instances in one process (tests): build `layer` once per instance
 * on the same temporary file with `busyTimeout: 0` — `:memory:` is private to
 * one connection.
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import { BatonConfigError, type StoreError } from "../../src/stores/Errors.ts"
import { checkedLayer, fieldsOf, refuseUnknown, show } from "../../src/stores/internal/options.ts"
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
import * as SqliteClient from "./SqliteClient.ts"
import * as SqliteLiveness from "./SqliteLiveness.ts"
import * as SqliteMigrations from "./SqliteMigrations.ts"
import * as SqliteWakeups from "./SqliteWakeups.ts"
import { clientAndBreakerFields, clientOptions } from "./internal/clientOptions.ts"
import { checkOptions } from "./internal/wakeupsOptions.ts"

/**
 * Where the database is and how it is opened, plus the table prefix and
 * whether to wake other processes.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteStoresOptions extends SqliteClient.SqliteClientOptions, SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions {
  /**
   * Lease-release wake-ups between processes on the same file (default
   * false; never for `":memory:"`): a release in one process wakes the
   * waiters of every other within a short poll (see `SqliteWakeups`), so a
   * graceful handover takes milliseconds instead of a sweep; the runtime's
   * polling stays the fallback. Turn it on when several processes share the
   * file. Holds one more connection. Options for the poll: pass an object.
   * (Off by default because the poll runs on the Clock: a test that moves a
   * TestClock by hours would step through every poll.)
   */
  readonly wakeups?: boolean | Pick<SqliteWakeups.SqliteWakeupsOptions, "pollInterval" | "keep"> | undefined
}

/**
 * What a SQLite store Layer fails with when built: bad options
 * (`BatonConfigError`, naming the field) or a database that cannot be
 * opened or migrated (`StoreError`).
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | BatonConfigError

/** The fields `layerOnClient` accepts: its own, and the client's (one options object serves both Layers, as the README composes them; the client reads those). */
const onClientFields = fieldsOf<SqliteClient.SqliteClientOptions & SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions>(clientAndBreakerFields)

/** The fields `layer` and the one-store Layers read: anything else is refused at build, naming it. */
const fields = fieldsOf<SqliteStoresOptions>({ ...clientAndBreakerFields, wakeups: true })

/** The fields of an object given as `wakeups`. */
const wakeupsFields = fieldsOf<Pick<SqliteWakeups.SqliteWakeupsOptions, "pollInterval" | "keep">>({ pollInterval: true, keep: true })

/** `wakeups`: a boolean, or an object of known fields whose values can work. */
const checkWakeups = (wakeups: unknown): Effect.Effect<void, BatonConfigError> => {
  if (wakeups === undefined || typeof wakeups === "boolean") return Effect.void
  if (typeof wakeups !== "object" || wakeups === null || Array.isArray(wakeups)) {
    return Effect.fail(new BatonConfigError({
      field: "wakeups",
      reason: `is ${show(wakeups)}: it must be true or false, or an object of wake-up options (pollInterval, keep)`
    }))
  }
  return Effect.andThen(refuseUnknown(wakeups, wakeupsFields, "wakeups."), checkOptions(wakeups, "wakeups."))
}

/** `make()` once `options` hold only known fields (an object `wakeups` too) and `wakeups` can work. */
const checked = <A, R>(options: SqliteStoresOptions, make: () => Layer.Layer<A, Failure, R>): Layer.Layer<A, Failure, R> =>
  checkedLayer(options, fields, () => Layer.unwrap(Effect.as(checkWakeups(options?.wakeups), make())))

/**
 * The options read through Effect `Config` (any `ConfigProvider`; the
 * environment by default): `BATON_SQLITE_PATH`, `BATON_SQLITE_BUSY_TIMEOUT`
 * (a duration, e.g. "5 seconds"), `BATON_SQLITE_SYNCHRONOUS` (`NORMAL` or
 * `FULL`), `BATON_SQLITE_WAL_CHECKPOINT` (`background` or `inline`),
 * `BATON_SQLITE_WAL_CHECKPOINT_INTERVAL` (a duration), `BATON_TABLE_PREFIX`.
 * Each may be absent (the default applies).
 *
 * @category config
 * @since 0.1.0
 */
export const config: Config.Config<SqliteStoresOptions> = Config.all({
  path: optional(Config.String(SqliteClient.pathSetting)),
  busyTimeout: optional(Config.Duration("BATON_SQLITE_BUSY_TIMEOUT")),
  synchronous: optional(Config.Literals(["NORMAL", "FULL"], "BATON_SQLITE_SYNCHRONOUS")),
  walCheckpoint: optional(Config.Literals(["background", "inline"], "BATON_SQLITE_WAL_CHECKPOINT")),
  walCheckpointInterval: optional(Config.Duration("BATON_SQLITE_WAL_CHECKPOINT_INTERVAL")),
  tablePrefix: optional(Config.String("BATON_TABLE_PREFIX"))
})

/**
 * The eight stores and `IdGenerator` on one SQLite connection, schema
 * migrated once at build.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqliteStoresOptions = {}): Layer.Layer<SqlStores.Stores | SqlLimiterStores.LimiterStores | Ids.IdGenerator, Failure> =>
  checked(options, () => bundle(options))

const bundle = (options: SqliteStoresOptions): Layer.Layer<SqlStores.Stores | SqlLimiterStores.LimiterStores | Ids.IdGenerator, Failure> => {
  // With the instances' liveness locks next to the file (crash takeover; see SqliteLiveness).
  const stores = Layer.merge(onClient(options), SqliteLiveness.layer).pipe(
    Layer.provide(SqliteClient.layer(clientOptions(options))),
    Layer.provideMerge(Ids.layer)
  )
  const { wakeups, ...rest } = options
  if (wakeups === undefined || wakeups === false || options.path === ":memory:") return stores
  return Layer.merge(stores, SqliteWakeups.layer({ ...rest, ...(typeof wakeups === "object" ? wakeups : {}) }))
}

/**
 * `layer` with its options read through Effect `Config`
 * (default: `SqliteStores.config`). A value that cannot be read, or that
 * cannot work, fails the build with `BatonConfigError` naming the setting.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (options: Config.Wrap<SqliteStoresOptions> = config): Layer.Layer<SqlStores.Stores | SqlLimiterStores.LimiterStores | Ids.IdGenerator, Failure> =>
  layerFromConfig(options, layer)

/**
 * The eight stores, and effect's `RateLimiterStore` and `CircuitBreakerStore`,
 * on the `SqlClient` in context (a `SqliteClient.layer`), schema migrated
 * once at build. `RecordStore` needs an `IdGenerator`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOnClient = (
  options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions = {}
): Layer.Layer<SqlStores.Stores | SqlLimiterStores.LimiterStores, Failure, SqlClient.SqlClient | Ids.IdGenerator> =>
  checkedLayer(options, onClientFields, () => onClient(options))

/** `layerOnClient` without the check: `layer` passes it every option (the client's too). */
const onClient = (options: SqlCircuitBreakerStore.SqlCircuitBreakerStoreOptions) =>
  Layer.merge(SqlStores.layer(options), SqlLimiterStores.layerMigrated(options)).pipe(Layer.provide(SqliteMigrations.layer(options)))

const alone = <A, R>(storeLayer: Layer.Layer<A, BatonConfigError, R>, options: SqliteStoresOptions) =>
  checked(options, () =>
    storeLayer.pipe(
      Layer.provide(SqliteMigrations.layer(options)),
      Layer.provide(SqliteClient.layer(clientOptions(options)))
    ) as Layer.Layer<A, Failure, Exclude<R, SqlClient.SqlClient | SqlMigrations.Migrated>>)

/**
 * `LeaseStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerLeaseStore = (options: SqliteStoresOptions = {}): Layer.Layer<LeaseStore, Failure> =>
  alone(SqlLeaseStore.layer(options), options)

/**
 * `RecordStore` alone, on its own connection (needs an `IdGenerator`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRecordStore = (options: SqliteStoresOptions = {}): Layer.Layer<RecordStore, Failure, Ids.IdGenerator> =>
  alone(SqlRecordStore.layer(options), options)

/**
 * `PauseStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerPauseStore = (options: SqliteStoresOptions = {}): Layer.Layer<PauseStore, Failure> =>
  alone(SqlPauseStore.layer(options), options)

/**
 * `TreeStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerTreeStore = (options: SqliteStoresOptions = {}): Layer.Layer<TreeStore, Failure> =>
  alone(SqlTreeStore.layer(options), options)

/**
 * `CheckpointStore` alone, on its own connection. Its fenced writes read the
 * lease rows of the same database: pair it with SQLite leases on the same file.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerCheckpointStore = (options: SqliteStoresOptions = {}): Layer.Layer<CheckpointStore, Failure> =>
  alone(SqlCheckpointStore.layer(options), options)

/**
 * `LedgerStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerLedgerStore = (options: SqliteStoresOptions = {}): Layer.Layer<LedgerStore, Failure> =>
  alone(SqlLedgerStore.layer(options), options)

/**
 * `RateLimitStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRateLimitStore = (options: SqliteStoresOptions = {}): Layer.Layer<RateLimitStore, Failure> =>
  alone(SqlRateLimitStore.layer(options), options)

/**
 * `ChildQueueStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerChildQueueStore = (options: SqliteStoresOptions = {}): Layer.Layer<ChildQueueStore, Failure> =>
  alone(SqlChildQueueStore.layer(options), options)

/**
 * `ExecutionHistoryStore` alone, on its own connection. Its saves check the lease
 * rows of the same database: pair it with leases on the same database.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerExecutionHistoryStore = (options: SqliteStoresOptions = {}): Layer.Layer<ExecutionHistoryStore, Failure> =>
  alone(SqlExecutionHistoryStore.layer(options), options)

/**
 * `RequestStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRequestStore = (options: SqliteStoresOptions = {}): Layer.Layer<RequestStore, Failure> =>
  alone(SqlRequestStore.layer(options), options)

/**
 * `ScheduleStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerScheduleStore = (options: SqliteStoresOptions = {}): Layer.Layer<ScheduleStore, Failure> =>
  alone(SqlScheduleStore.layer(options), options)

/**
 * `ConcurrencyKeyStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConcurrencyKeyStore = (options: SqliteStoresOptions = {}): Layer.Layer<ConcurrencyKeyStore, Failure> =>
  alone(SqlConcurrencyKeyStore.layer(options), options)

/**
 * `DebounceStore` alone, on its own connection.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerDebounceStore = (options: SqliteStoresOptions = {}): Layer.Layer<DebounceStore, Failure> =>
  alone(SqlDebounceStore.layer(options), options)
