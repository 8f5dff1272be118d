/**
 * In-memory store Layers: every contract, for tests and single-process use.
 *
 * @since 0.1.0
 * @module baton/memory
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../../src/internal/nodeVersion.ts"
export * as MemoryCheckpointStore from "./MemoryCheckpointStore.ts"
export * as MemoryChildQueueStore from "./MemoryChildQueueStore.ts"
export * as MemoryEventStore from "./MemoryEventStore.ts"
export * as MemoryExecutionHistoryStore from "./MemoryExecutionHistoryStore.ts"
export * as MemoryLeaseStore from "./MemoryLeaseStore.ts"
export * as MemoryLiveness from "./MemoryLiveness.ts"
export * as MemoryLedgerStore from "./MemoryLedgerStore.ts"
export * as MemoryPauseStore from "./MemoryPauseStore.ts"
export * as MemoryRateLimitStore from "./MemoryRateLimitStore.ts"
export * as MemoryRecordStore from "./MemoryRecordStore.ts"
export * as MemoryRequestStore from "./MemoryRequestStore.ts"
export * as MemoryScheduleStore from "./MemoryScheduleStore.ts"
export * as MemoryConcurrencyKeyStore from "./MemoryConcurrencyKeyStore.ts"
export * as MemoryDebounceStore from "./MemoryDebounceStore.ts"
export * as MemoryState from "./MemoryState.ts"
export * as MemoryStores from "./MemoryStores.ts"
export * as MemoryTreeStore from "./MemoryTreeStore.ts"
export * as MemoryLimiters from "./MemoryLimiters.ts"
export * as MemoryTimerStore from "./MemoryTimerStore.ts"
export * as MemoryProbe from "./MemoryProbe.ts"
