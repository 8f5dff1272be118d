/**
 * baton: durable LangGraph executions across several instances of an Effect
 * application, over shared stores with fenced writes.
 *
 * @since 0.1.0
 */
export { Baton, type BatonShape, type CancelError, type ExecuteError, type ExecuteOptions, type ResumeError, type ResumeInput } from "./Baton.ts"
export type { BatonOptions } from "./BatonConfig.ts"
export * from "./Errors.ts"
export type { ExecutionOutput, PendingPause } from "./Executor.ts"
export type { ExecutionRecord, ExecutionStatus, PauseAnswer, RecordCursor, ThreadRecord } from "./ExecutionRecord.ts"
export type { Pause, PauseStatus } from "./Pause.ts"
export type { Lease } from "./Lease.ts"
export { defaultTenant, IdGenerator, type ExecutionId, type InstanceId, type PauseId, type TenantId, type ThreadId } from "./Ids.ts"
export { BatonCheckpointSaver, RenewingCheckpointSaver } from "./CheckpointSaver.ts"
export { type BlobRow, type CheckpointRow, type CheckpointRows, CheckpointStore, type CheckpointStoreShape, type WriteRow } from "./CheckpointStore.ts"
export { ChildQueueStore, type ChildQueueStoreShape, type QueuedChild } from "./ChildQueueStore.ts"
export { type Fence, type FenceCheck, type FencedWrite, fenceKey, renewalDueBefore, tenantKey } from "./Fence.ts"
export type { HealthComponent, HealthReport, HealthStatus } from "./Health.ts"
export { LeaseStore, type LeaseStoreShape } from "./LeaseStore.ts"
export { LeaseWakeups, type LeaseWakeupsShape } from "./LeaseWakeups.ts"
export { type LedgerKey, type LedgerResult, LedgerStore, type LedgerStoreShape } from "./LedgerStore.ts"
export { makeObserver, Observer, type ObserverShape, type ResumeReason } from "./Observer.ts"
export { PauseStore, type PauseStoreShape } from "./PauseStore.ts"
export { RateLimitStore, type RateLimitStoreShape, type SlotLease } from "./RateLimitStore.ts"
export { RecordStore, type RecordStoreBackend, type RecordStoreShape } from "./RecordStore.ts"
export { StepSlots, type StepSlotsShape } from "./StepSlots.ts"
export { reservedPrefix, TreeStore, type TreeStoreBackend, type TreeStoreShape } from "./TreeStore.ts"
export * as Workflow from "./Workflow.ts"
