/**
 * Every store contract over one `SqlClient`, on a schema migrated once by the
 * backend's migrations Layer.
 *
 * @since 0.1.0
 */
import type { StoreServices as AllStores } from "../../src/stores/StoreServices.ts"
import { Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import type { IdGenerator } from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { LedgerStore } from "../../src/stores/LedgerStore.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import { ScheduleStore } from "../../src/stores/ScheduleStore.ts"
import { ConcurrencyKeyStore } from "../../src/stores/ConcurrencyKeyStore.ts"
import { DebounceStore } from "../../src/stores/DebounceStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import { TimerStore } from "../../src/stores/TimerStore.ts"
import * as SqlCheckpointStore from "./SqlCheckpointStore.ts"
import * as SqlChildQueueStore from "./SqlChildQueueStore.ts"
import * as SqlExecutionHistoryStore from "./SqlExecutionHistoryStore.ts"
import * as SqlLeaseStore from "./SqlLeaseStore.ts"
import * as SqlLedgerStore from "./SqlLedgerStore.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlPauseStore from "./SqlPauseStore.ts"
import * as SqlRateLimitStore from "./SqlRateLimitStore.ts"
import * as SqlRecordStore from "./SqlRecordStore.ts"
import * as SqlRequestStore from "./SqlRequestStore.ts"
import * as SqlScheduleStore from "./SqlScheduleStore.ts"
import * as SqlConcurrencyKeyStore from "./SqlConcurrencyKeyStore.ts"
import * as SqlDebounceStore from "./SqlDebounceStore.ts"
import * as SqlEventStore from "./SqlEventStore.ts"
import { EventStore } from "../../src/stores/EventStore.ts"
import type { SqlStoreOptions } from "./SqlTables.ts"
import * as SqlTreeStore from "./SqlTreeStore.ts"
import * as SqlTimerStore from "./SqlTimerStore.ts"

/**
 * Every store service (see `Stores` in `src/stores/Stores.ts`).
 *
 * @category models
 * @since 0.1.0
 */
export type Stores = AllStores

/**
 * The eight stores on the `SqlClient` in context (one connection or pool for
 * all of them), over the schema a migrations Layer migrated (`Migrated`:
 * `SqliteMigrations.layer` or `PgMigrations.layer`). `RecordStore` needs an
 * `IdGenerator`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlStoreOptions = {}): Layer.Layer<
  Stores,
  BatonConfigError,
  SqlClient.SqlClient | SqlMigrations.Migrated | IdGenerator
> =>
  Layer.effectContext(Effect.gen(function*() {
    yield* SqlMigrations.requireMigrated(options)
    return Context.make(LeaseStore, yield* SqlLeaseStore.make(options)).pipe(
      Context.add(RecordStore, yield* SqlRecordStore.make(options)),
      Context.add(PauseStore, yield* SqlPauseStore.make(options)),
      Context.add(TreeStore, yield* SqlTreeStore.make(options)),
      Context.add(CheckpointStore, yield* SqlCheckpointStore.make(options)),
      Context.add(LedgerStore, yield* SqlLedgerStore.make(options)),
      Context.add(RateLimitStore, yield* SqlRateLimitStore.make(options)),
      Context.add(ChildQueueStore, yield* SqlChildQueueStore.make(options)),
      Context.add(ExecutionHistoryStore, yield* SqlExecutionHistoryStore.make(options)),
      Context.add(RequestStore, yield* SqlRequestStore.make(options)),
      Context.add(TimerStore, yield* SqlTimerStore.make(options)),
      Context.add(ScheduleStore, yield* SqlScheduleStore.make(options)),
      Context.add(ConcurrencyKeyStore, yield* SqlConcurrencyKeyStore.make(options)),
      Context.add(DebounceStore, yield* SqlDebounceStore.make(options)),
      Context.add(EventStore, yield* SqlEventStore.make(options))
    )
  }))
