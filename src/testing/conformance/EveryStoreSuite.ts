/**
 * Every contract's conformance suite against one store bundle: what a
 * bundle that provides all of baton's store contracts (as `MemoryStores`,
 * `SqliteStores`, `PgStores` and `ShardedStores` do) runs to check them all
 * in one call.
 *
 * @since 0.1.0
 */
import type { StoreServices } from "../../stores/StoreServices.ts"
import { checkpointStoreSuite } from "./CheckpointStoreSuite.ts"
import { childQueueStoreSuite } from "./ChildQueueStoreSuite.ts"
import { concurrencyKeyStoreSuite } from "./ConcurrencyKeyStoreSuite.ts"
import { debounceStoreSuite } from "./DebounceStoreSuite.ts"
import { eventStoreSuite } from "./EventStoreSuite.ts"
import { executionHistoryStoreSuite } from "./ExecutionHistoryStoreSuite.ts"
import { leaseStoreSuite } from "./LeaseStoreSuite.ts"
import { ledgerStoreSuite } from "./LedgerStoreSuite.ts"
import { pauseStoreSuite } from "./PauseStoreSuite.ts"
import { rateLimitStoreSuite } from "./RateLimitStoreSuite.ts"
import { recordStoreSuite } from "./RecordStoreSuite.ts"
import { requestStoreSuite } from "./RequestStoreSuite.ts"
import { scheduleStoreSuite } from "./ScheduleStoreSuite.ts"
import type { SuiteOptions } from "./Suite.ts"
import { timerStoreSuite } from "./TimerStoreSuite.ts"
import { treeStoreSuite } from "./TreeStoreSuite.ts"

/**
 * The store contracts a full bundle provides.
 *
 * @category models
 * @since 0.1.0
 */
export type EveryStore = StoreServices

/**
 * Registers the suite of every contract in {@link EveryStore} against the
 * bundle (`layer`, and `second` for a second instance over the same
 * database), each under its own title.
 *
 * @category suites
 * @since 0.1.0
 */
export const everyStoreSuite = (options: SuiteOptions<EveryStore>): void => {
  leaseStoreSuite(options)
  recordStoreSuite(options)
  pauseStoreSuite(options)
  treeStoreSuite(options)
  ledgerStoreSuite(options)
  rateLimitStoreSuite(options)
  childQueueStoreSuite(options)
  executionHistoryStoreSuite(options)
  requestStoreSuite(options)
  timerStoreSuite(options)
  scheduleStoreSuite(options)
  eventStoreSuite(options)
  concurrencyKeyStoreSuite(options)
  debounceStoreSuite(options)
  checkpointStoreSuite(options)
}
