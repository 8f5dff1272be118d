/**
 * Every store contract on Postgres: the stores of `layers/sql` over
 * `PgClient`'s pool, the schema migrated once at build (`PgMigrations`, under
 * an advisory lock), and cross-instance wake-ups over LISTEN/NOTIFY
 * (`PgWakeups`).
 *
 * - `layer(options)` — the eight stores, an `IdGenerator` (random ids) and,
 *   unless `wakeups: false`, the NOTIFY wake-ups, on one pool. The path to
 *   instances on several machines: give every instance the same URL (and
 *   schema / table prefix).
 * - `layerOnClient(options)` — the eight stores on a `PgClient.layer` the app
 *   provides (and shares with its own queries).
 * - `leaseStore(options)`, `recordStore(options)`, … — one store alone on its
 *   own pool, to mix with other backends.
 *
 * Connections: the pool holds up to `maxConnections` (default 10); the
 * wake-ups hold one more, outside the pool, for LISTEN.
 *
 * @since 0.1.0
 */
import type { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { IdGenerator } from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { LedgerStore } from "../../src/stores/LedgerStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import * as SqlCheckpointStore from "../sql/SqlCheckpointStore.ts"
import { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import * as SqlExecutionHistoryStore from "../sql/SqlExecutionHistoryStore.ts"
import * as SqlChildQueueStore from "../sql/SqlChildQueueStore.ts"
import * as SqlLeaseStore from "../sql/SqlLeaseStore.ts"
import * as SqlLedgerStore from "../sql/SqlLedgerStore.ts"
import * as SqlPauseStore from "../sql/SqlPauseStore.ts"
import * as SqlRateLimitStore from "../sql/SqlRateLimitStore.ts"
import * as SqlRecordStore from "../sql/SqlRecordStore.ts"
import * as SqlRequestStore from "../sql/SqlRequestStore.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import type { Stores } from "../sql/SqlStores.ts"
import type { SqlStoreOptions } from "../sql/SqlTables.ts"
import * as SqlTreeStore from "../sql/SqlTreeStore.ts"
import * as PgClient from "./PgClient.ts"
import * as PgMigrations from "./PgMigrations.ts"
import * as PgWakeups from "./PgWakeups.ts"

export type { Stores } from "../sql/SqlStores.ts"

/** Where the database is and how to connect, the table prefix, and whether to wake other instances. */
export interface PgStoresOptions extends PgClient.PgClientOptions, SqlStoreOptions {
  /**
   * LISTEN/NOTIFY wake-ups between instances (default true): a lease released
   * or a child queued on one instance wakes the waiters of every other at
   * once; polling stays the fallback. Holds one more connection.
   */
  readonly wakeups?: boolean | undefined
}

type Failure = StoreError | BatonConfigError

/**
 * The eight stores on the client in context (`PgClient.layer`), after
 * migrating. `RecordStore` needs an `IdGenerator`.
 */
export const layerOnClient = (options: SqlStoreOptions & { readonly schema?: string | undefined } = {}): Layer.Layer<
  Stores,
  Failure,
  SqlClient.SqlClient | IdGenerator
> =>
  Layer.effectContext(Effect.gen(function*() {
    yield* PgMigrations.migrate(options)
    return Context.make(LeaseStore, yield* SqlLeaseStore.make(options)).pipe(
      Context.add(RecordStore, yield* SqlRecordStore.make(options)),
      Context.add(PauseStore, yield* SqlPauseStore.make(options)),
      Context.add(TreeStore, yield* SqlTreeStore.make(options)),
      Context.add(CheckpointStore, yield* SqlCheckpointStore.make(options)),
      Context.add(LedgerStore, yield* SqlLedgerStore.make(options)),
      Context.add(RateLimitStore, yield* SqlRateLimitStore.make(options)),
      Context.add(ChildQueueStore, yield* SqlChildQueueStore.make(options)),
      Context.add(ExecutionHistoryStore, yield* SqlExecutionHistoryStore.make(options)),
      Context.add(RequestStore, yield* SqlRequestStore.make(options))
    )
  }))

/**
 * The eight stores, an `IdGenerator` and (unless `wakeups: false`) NOTIFY
 * wake-ups, on one pool; schema migrated at build. Also provides the pool
 * (`PgClient`, `SqlClient`) for the app's own queries.
 */
export const layer = (options: PgStoresOptions = {}): Layer.Layer<
  Stores | IdGenerator | EffectPgClient.PgClient | SqlClient.SqlClient,
  Failure
> => {
  const stores = layerOnClient(options).pipe(Layer.provideMerge(IdGenerator.layer))
  const withWakeups = options.wakeups === false ? stores : Layer.merge(stores, PgWakeups.layer(options))
  return withWakeups.pipe(Layer.provideMerge(PgClient.layer(options)))
}

const alone = <I, S, R>(
  key: Context.Key<I, S>,
  make: (options: SqlStoreOptions) => Effect.Effect<S, BatonConfigError, R>,
  options: PgStoresOptions
): Layer.Layer<I, Failure, Exclude<R, SqlClient.SqlClient>> =>
  Layer.effect(key, Effect.andThen(PgMigrations.migrate(options), make(options))).pipe(
    Layer.provide(PgClient.layer(options))
  )

/** `LeaseStore` alone, on its own pool. */
export const leaseStore = (options: PgStoresOptions = {}): Layer.Layer<LeaseStore, Failure> =>
  alone(LeaseStore, SqlLeaseStore.make, options)

/** `RecordStore` alone, on its own pool (needs an `IdGenerator`). */
export const recordStore = (options: PgStoresOptions = {}): Layer.Layer<RecordStore, Failure, IdGenerator> =>
  alone(RecordStore, SqlRecordStore.make, options)

/** `PauseStore` alone, on its own pool. */
export const pauseStore = (options: PgStoresOptions = {}): Layer.Layer<PauseStore, Failure> =>
  alone(PauseStore, SqlPauseStore.make, options)

/** `TreeStore` alone, on its own pool. */
export const treeStore = (options: PgStoresOptions = {}): Layer.Layer<TreeStore, Failure> =>
  alone(TreeStore, SqlTreeStore.make, options)

/**
 * `CheckpointStore` alone, on its own pool. Its fenced writes check the lease
 * rows of the same database: pair it with Postgres leases on the same URL,
 * schema and prefix.
 */
export const checkpointStore = (options: PgStoresOptions = {}): Layer.Layer<CheckpointStore, Failure> =>
  alone(CheckpointStore, SqlCheckpointStore.make, options)

/** `LedgerStore` alone, on its own pool. */
export const ledgerStore = (options: PgStoresOptions = {}): Layer.Layer<LedgerStore, Failure> =>
  alone(LedgerStore, SqlLedgerStore.make, options)

/** `RateLimitStore` alone, on its own pool. */
export const rateLimitStore = (options: PgStoresOptions = {}): Layer.Layer<RateLimitStore, Failure> =>
  alone(RateLimitStore, SqlRateLimitStore.make, options)

/** `ChildQueueStore` alone, on its own pool. */
export const childQueueStore = (options: PgStoresOptions = {}): Layer.Layer<ChildQueueStore, Failure> =>
  alone(ChildQueueStore, SqlChildQueueStore.make, options)
