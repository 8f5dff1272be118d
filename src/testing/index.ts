/**
 * `baton/testing`: what tests of baton — and of a custom store — use.
 *
 * @since 0.1.0
 * @module baton/testing
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../internal/nodeVersion.ts"
export {
  checkpointStoreSuite,
  type CheckpointStoreSuiteOptions,
  childQueueStoreSuite,
  eventStoreSuite,
  executionHistoryStoreSuite,
  type Instances,
  leaseStoreSuite,
  ledgerStoreSuite,
  type LimiterStores,
  limiterStoresSuite,
  pauseStoreSuite,
  rateLimitStoreSuite,
  recordStoreSuite,
  requestStoreSuite,
  type SuiteOptions,
  timerStoreSuite,
  treeStoreSuite
} from "./conformance/index.ts"
export { scheduleStoreSuite } from "./conformance/index.ts"
export { concurrencyKeyStoreSuite, debounceStoreSuite } from "./conformance/index.ts"
export * as Harness from "./Harness.ts"
export { storeProbeSuite } from "./conformance/index.ts"
export { type EveryStore, everyStoreSuite } from "./conformance/index.ts"
