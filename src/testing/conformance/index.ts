/**
 * The conformance suites: one per store contract. A store author runs them
 * in a vitest file against their Layer (see {@link SuiteOptions}).
 *
 * @since 0.1.0
 */
export { leaseStoreSuite } from "./LeaseStoreSuite.ts"
export type { Instances, SuiteOptions } from "./Suite.ts"
export { recordStoreSuite } from "./RecordStoreSuite.ts"
export { pauseStoreSuite } from "./PauseStoreSuite.ts"
export { treeStoreSuite } from "./TreeStoreSuite.ts"
export { ledgerStoreSuite } from "./LedgerStoreSuite.ts"
export { rateLimitStoreSuite } from "./RateLimitStoreSuite.ts"
export { childQueueStoreSuite } from "./ChildQueueStoreSuite.ts"
export { checkpointStoreSuite, type CheckpointStoreSuiteOptions } from "./CheckpointStoreSuite.ts"
