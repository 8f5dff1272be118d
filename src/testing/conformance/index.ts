/**
 * The conformance suites: one per store contract. A store author runs them
 * in a vitest file (with `@effect/vitest` installed) against their Layer:
 *
 * ```ts
 * // test/redis/conformance.test.ts
 * import { leaseStoreSuite, checkpointStoreSuite } from "baton/testing"
 *
 * const layer = RedisStores.layer({ url })   // instance 1
 * const second = RedisStores.layer({ url })  // instance 2: its own connection, same database
 * leaseStoreSuite({ name: "redis", layer, second })
 * checkpointStoreSuite({ name: "redis", layer, second }) // this Layer provides LeaseStore too
 * ```
 *
 * Each suite builds its Layers once (see {@link SuiteOptions}) and runs on
 * one TestClock: stores get `now` from it and expiry is tested by moving it.
 * Rows stay between tests; every test uses ids of its own. The racing tests
 * need the store's own retries not to sleep on the Clock (it is a TestClock).
 *
 * @since 0.1.0
 */
export { checkpointStoreSuite, type CheckpointStoreSuiteOptions } from "./CheckpointStoreSuite.ts"
export { childQueueStoreSuite } from "./ChildQueueStoreSuite.ts"
export { executionHistoryStoreSuite } from "./ExecutionHistoryStoreSuite.ts"
export { eventStoreSuite } from "./EventStoreSuite.ts"
export { leaseStoreSuite } from "./LeaseStoreSuite.ts"
export { ledgerStoreSuite } from "./LedgerStoreSuite.ts"
export { type LimiterStores, limiterStoresSuite } from "./LimiterStoresSuite.ts"
export { pauseStoreSuite } from "./PauseStoreSuite.ts"
export { rateLimitStoreSuite } from "./RateLimitStoreSuite.ts"
export { recordStoreSuite } from "./RecordStoreSuite.ts"
export { requestStoreSuite } from "./RequestStoreSuite.ts"
export type { Instances, SuiteOptions } from "./Suite.ts"
export { timerStoreSuite } from "./TimerStoreSuite.ts"
export { treeStoreSuite } from "./TreeStoreSuite.ts"
export { scheduleStoreSuite } from "./ScheduleStoreSuite.ts"
export { concurrencyKeyStoreSuite } from "./ConcurrencyKeyStoreSuite.ts"
export { debounceStoreSuite } from "./DebounceStoreSuite.ts"
export { storeProbeSuite } from "./StoreProbeSuite.ts"
export { type EveryStore, everyStoreSuite } from "./EveryStoreSuite.ts"
