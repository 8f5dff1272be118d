/**
 * Every store contract the runtime uses, as one type: what a full store
 * bundle provides (`MemoryStores`, `SqliteStores`, `PgStores`,
 * `ShardedStores`) and what `everyStoreSuite` checks.
 *
 * @since 0.1.0
 */
import type { CheckpointStore } from "./CheckpointStore.ts"
import type { ChildQueueStore } from "./ChildQueueStore.ts"
import type { ConcurrencyKeyStore } from "./ConcurrencyKeyStore.ts"
import type { DebounceStore } from "./DebounceStore.ts"
import type { EventStore } from "./EventStore.ts"
import type { ExecutionHistoryStore } from "./ExecutionHistoryStore.ts"
import type { LeaseStore } from "./LeaseStore.ts"
import type { LedgerStore } from "./LedgerStore.ts"
import type { PauseStore } from "./PauseStore.ts"
import type { RateLimitStore } from "./RateLimitStore.ts"
import type { RecordStore } from "./RecordStore.ts"
import type { RequestStore } from "./RequestStore.ts"
import type { ScheduleStore } from "./ScheduleStore.ts"
import type { TimerStore } from "./TimerStore.ts"
import type { TreeStore } from "./TreeStore.ts"

/**
 * The fifteen store services of a full bundle.
 *
 * @category models
 * @since 0.1.0
 */
export type StoreServices =
  | LeaseStore
  | RecordStore
  | PauseStore
  | TreeStore
  | CheckpointStore
  | LedgerStore
  | RateLimitStore
  | ChildQueueStore
  | ExecutionHistoryStore
  | RequestStore
  | TimerStore
  | ScheduleStore
  | EventStore
  | ConcurrencyKeyStore
  | DebounceStore
