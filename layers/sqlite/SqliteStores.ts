/**
 * Every store contract in one SQLite database, over one `node:sqlite`
 * connection (see `SqliteClient` for WAL, busy timeout and the path setting).
 *
 * - `layer(options)` — the eight stores and an `IdGenerator` (random ids) on
 *   one connection; the schema is migrated at build; with `wakeups: true`,
 *   lease-release wake-ups between processes on the file (`SqliteWakeups`,
 *   on a connection of their own).
 * - `leaseStore(options)`, `recordStore(options)`, … — one store alone on its
 *   own connection, to mix with other backends (SQLite leases with in-memory
 *   rate limits, say). To put a few stores on one connection instead, provide
 *   one `SqliteClient.layer` to the `layers/sql` store Layers.
 *
 * Several instances in one process (tests): build `layer` once per instance
 * on the same temporary file with `busyTimeout: 0` — `:memory:` is private to
 * one connection.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import type { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { IdGenerator } from "../../src/stores/Ids.ts"
import type { LeaseStore } from "../../src/stores/LeaseStore.ts"
import type { LedgerStore } from "../../src/stores/LedgerStore.ts"
import type { PauseStore } from "../../src/stores/PauseStore.ts"
import type { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import type { RecordStore } from "../../src/stores/RecordStore.ts"
import type { TreeStore } from "../../src/stores/TreeStore.ts"
import * as SqlCheckpointStore from "../sql/SqlCheckpointStore.ts"
import * as SqlChildQueueStore from "../sql/SqlChildQueueStore.ts"
import * as SqlLeaseStore from "../sql/SqlLeaseStore.ts"
import * as SqlLedgerStore from "../sql/SqlLedgerStore.ts"
import * as SqlPauseStore from "../sql/SqlPauseStore.ts"
import * as SqlRateLimitStore from "../sql/SqlRateLimitStore.ts"
import * as SqlRecordStore from "../sql/SqlRecordStore.ts"
import * as SqlStores from "../sql/SqlStores.ts"
import type { SqlStoreOptions } from "../sql/SqlTables.ts"
import * as SqlTreeStore from "../sql/SqlTreeStore.ts"
import * as SqliteClient from "./SqliteClient.ts"
import * as SqliteWakeups from "./SqliteWakeups.ts"

/** Where the database is and how it is opened, plus the table prefix and whether to wake other processes. */
export interface SqliteStoresOptions extends SqliteClient.SqliteClientOptions, SqlStoreOptions {
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

type Failure = StoreError | BatonConfigError

/** The eight stores and `IdGenerator` on one SQLite connection, schema migrated at build. */
export const layer = (options: SqliteStoresOptions = {}): Layer.Layer<SqlStores.Stores | IdGenerator, Failure> => {
  const stores = SqlStores.layer(options).pipe(
    Layer.provide(SqliteClient.layer(options)),
    Layer.provideMerge(IdGenerator.layer)
  )
  const { wakeups, ...rest } = options
  if (wakeups === undefined || wakeups === false || options.path === ":memory:") return stores
  return Layer.merge(stores, SqliteWakeups.layer({ ...rest, ...(typeof wakeups === "object" ? wakeups : {}) }))
}

const alone = <A, R>(storeLayer: Layer.Layer<A, Failure, R>, options: SqliteStoresOptions) =>
  storeLayer.pipe(Layer.provide(SqliteClient.layer(options)))

/** `LeaseStore` alone, on its own connection. */
export const leaseStore = (options: SqliteStoresOptions = {}): Layer.Layer<LeaseStore, Failure> =>
  alone(SqlLeaseStore.layer(options), options)

/** `RecordStore` alone, on its own connection (needs an `IdGenerator`). */
export const recordStore = (options: SqliteStoresOptions = {}): Layer.Layer<RecordStore, Failure, IdGenerator> =>
  alone(SqlRecordStore.layer(options), options)

/** `PauseStore` alone, on its own connection. */
export const pauseStore = (options: SqliteStoresOptions = {}): Layer.Layer<PauseStore, Failure> =>
  alone(SqlPauseStore.layer(options), options)

/** `TreeStore` alone, on its own connection. */
export const treeStore = (options: SqliteStoresOptions = {}): Layer.Layer<TreeStore, Failure> =>
  alone(SqlTreeStore.layer(options), options)

/**
 * `CheckpointStore` alone, on its own connection. Its fenced writes read the
 * lease rows of the same database: pair it with SQLite leases on the same file.
 */
export const checkpointStore = (options: SqliteStoresOptions = {}): Layer.Layer<CheckpointStore, Failure> =>
  alone(SqlCheckpointStore.layer(options), options)

/** `LedgerStore` alone, on its own connection. */
export const ledgerStore = (options: SqliteStoresOptions = {}): Layer.Layer<LedgerStore, Failure> =>
  alone(SqlLedgerStore.layer(options), options)

/** `RateLimitStore` alone, on its own connection. */
export const rateLimitStore = (options: SqliteStoresOptions = {}): Layer.Layer<RateLimitStore, Failure> =>
  alone(SqlRateLimitStore.layer(options), options)

/** `ChildQueueStore` alone, on its own connection. */
export const childQueueStore = (options: SqliteStoresOptions = {}): Layer.Layer<ChildQueueStore, Failure> =>
  alone(SqlChildQueueStore.layer(options), options)
