/**
 * baton: durable LangGraph executions across several instances of an Effect
 * application, over shared stores with fenced writes.
 *
 * The public surface, in the order a reader meets it: the runtime service and
 * its workflows, the errors, the store contracts a backend implements (and the
 * domain types they speak), and the checkpoint saver a backend plugs into.
 * Test helpers live in `baton/testing`, backends in `baton/memory`,
 * `baton/sqlite` and `baton/pg`.
 *
 * @since 0.1.0
 * @module baton
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "./internal/nodeVersion.ts"

// The runtime
export {
  type AwaitOptions,
  Baton,
  type BatonShape,
  type BatonStores,
  type CancelOptions,
  type CloseOptions,
  type ConcurrencyKey,
  type Debounce,
  type KeyedWait,
  type ExecuteOptions,
  type ExecutionHandle,
  type ExecutionOutput,
  type ExecutionPage,
  type ExecutionStatusView,
  type ExecutionSummary,
  type ListOptions,
  type PauseView,
  type PendingPause,
  type ReadOptions,
  type ReplyInput,
  type ResumeInput
} from "./runtime/Baton.ts"
export * as BatonConfig from "./runtime/BatonConfig.ts"
export type { BatonConfigOptions, BatonConfigShape, BatonOptions } from "./runtime/BatonConfig.ts"
export type { HealthComponent, HealthReport, HealthStatus } from "./runtime/Health.ts"
export {
  type ExecutionEvent,
  makeObserver,
  Observer,
  type ObserverShape,
  type RejectedEvent,
  type RejectedReason,
  type ResumeEvent,
  type ResumeReason
} from "./runtime/Observer.ts"
export * as Leader from "./runtime/Leader.ts"
export * as BatonMetrics from "./runtime/Metrics.ts"
export * as StoreTracing from "./runtime/StoreTracing.ts"
export * as Workflow from "./runtime/Workflow.ts"
export * as Evaluation from "./runtime/evaluation/Evaluation.ts"
export type { UnwindingView } from "./runtime/Baton.ts"
// The checkpoint lifecycle
export type { CheckpointPage, CheckpointsOptions, CheckpointView, DeleteThreadOptions } from "./runtime/Baton.ts"
export { ThreadHeldError, UnknownCheckpointError } from "./runtime/Errors.ts"
export type { CopyThreadError, DeleteThreadError, ForkError } from "./runtime/Errors.ts"
export type { CopyThreadOptions, ForkInput } from "./runtime/Baton.ts"
export type { CheckpointLifecycle } from "./stores/CheckpointStore.ts"
export type { PruneRule, Pruned, ThreadKey } from "./stores/CheckpointRows.ts"
export type { StreamOptions } from "./runtime/Baton.ts"
// Child executions
export * as Children from "./runtime/Children.ts"
export { ChildExecutionsFailedError } from "./runtime/Children.ts"

// Fleet-wide limits
export * as Budget from "./runtime/limits/Budget.ts"
export * as Provider from "./runtime/limits/Provider.ts"
export * as ProviderFallbacks from "./runtime/limits/ProviderFallbacks.ts"
export * as ProviderSlots from "./runtime/limits/ProviderSlots.ts"
export * as TenantQuota from "./runtime/limits/TenantQuota.ts"

// Errors: the runtime's, then the store contracts'
export {
  AwaitTimeoutError,
  ExecutionCancelledError,
  ExecutionFailedError,
  FailedUndo,
  InstanceStoppingError,
  PseudonymError,
  TenantQuotaExceededError,
  ThreadBusyError,
  ThreadOwnerError,
  UndoFailedError,
  UnknownExecutionError,
  UnknownThreadError,
  UnknownWorkflowError
} from "./runtime/Errors.ts"
export type { AwaitError, CancelError, ExecuteError, ReadError, ResumeError } from "./runtime/Errors.ts"
export { type SignalError, ThreadNotRunningError, UnknownSignalError } from "./runtime/Errors.ts"
export { ReplyInterpretationFailedError, ReplyNotUnderstoodError } from "./runtime/Errors.ts"
export type { RestingWait, SentSignal, SignalOptions } from "./runtime/Baton.ts"
export {
  afterRecorded,
  BatonConfigError,
  InvalidInputError,
  isTransientKind,
  LeaseLostError,
  NotPausedError,
  RecordedWork,
  RequestConflictError,
  ReservedKeyError,
  StoreBusy,
  StoreConfig,
  StoreConnection,
  StoreConstraint,
  StoreData,
  StoreError,
  StoreErrorKind,
  StoreErrorReason,
  storeErrorReason,
  StoreOther,
  UnknownPauseError
} from "./stores/Errors.ts"
export type { StoreErrorInput } from "./stores/Errors.ts"

// Store contracts and the domain types they speak
export { CheckpointStore, type CheckpointStoreShape } from "./stores/CheckpointStore.ts"
export { ChildQueueStore, type ChildQueueStoreShape, type QueuedChild, type RunnableWorkflow } from "./stores/ChildQueueStore.ts"
export {
  type EndStatus,
  ExecutionHistoryStore,
  type ExecutionHistoryStoreShape,
  type ExecutionSnapshot,
  exportJsonLines,
  type HistoryCursor,
  type HistoryQuery,
  type ModelAnswer,
  type PauseVisit,
  type StepVisit,
  toJsonLines
} from "./stores/ExecutionHistoryStore.ts"
export {
  activeStatuses,
  type ExecutionRecord,
  type ExecutionStatus,
  isActiveRoot,
  isRoot,
  type ListPosition,
  maxListLimit,
  type PauseAnswer,
  type RecordCursor,
  type RecordPage,
  type RecordQuery,
  type StartRootResult,
  type ThreadRecord
} from "./stores/ExecutionRecord.ts"
export { type Fence, type FenceCheck, type FencedWrite, renewalDueBefore } from "./stores/Fence.ts"
export {
  defaultTenant,
  type ExecutionId,
  ExecutionIdSchema,
  Id,
  IdGenerator,
  illFormedReason,
  type InstanceId,
  InstanceIdSchema,
  isWellFormed,
  maxIdLength,
  type PauseId,
  PauseIdSchema,
  type TenantId,
  TenantIdSchema,
  Text,
  type ThreadId,
  ThreadIdSchema
} from "./stores/Ids.ts"
export type { Lease } from "./stores/Lease.ts"
export type { StoreServices } from "./stores/StoreServices.ts"
export { type LeaseKey, LeaseStore, type LeaseStoreBackend, type LeaseStoreShape, maxGetMany } from "./stores/LeaseStore.ts"
export { LeaseWakeups, type LeaseWakeupsShape, type NextOptions, type ReleaseOptions } from "./stores/LeaseWakeups.ts"
export { InstanceLiveness, type InstanceLivenessShape, keyOfHolder, type Registration } from "./stores/InstanceLiveness.ts"
export { type LedgerKey, type LedgerResult, LedgerStore, type LedgerStoreBackend, type LedgerStoreShape } from "./stores/LedgerStore.ts"
export type { Pause, PauseStatus } from "./stores/Pause.ts"
export { PauseStore, type PauseStoreBackend, type PauseStoreShape, type RootCursor } from "./stores/PauseStore.ts"
export { RateLimitStore, type RateLimitStoreShape, type SlotLease, tenantKey, tenantOfKey } from "./stores/RateLimitStore.ts"
export { StorePartitions, type StorePartitionsShape } from "./stores/StorePartitions.ts"
export {
  type FencedSetStatusInput,
  type ListInput,
  RecordStore,
  type RecordStoreBackend,
  type RecordStoreShape,
  resetsRecoveryFailures,
  type SetStatusInput
} from "./stores/RecordStore.ts"
export { type ClaimResult, type RequestClaim, type RequestEntry, RequestStore, type RequestStoreShape } from "./stores/RequestStore.ts"
export {
  type ConsumeInput,
  type Signal,
  type SignalInput,
  type Taken,
  type Timer,
  type TimerKind,
  TimerStore,
  type TimerStoreShape
} from "./stores/TimerStore.ts"
export { findableNames, maxGetManyKeys, reservedPrefix, type TreeEntry, TreeStore, type TreeStoreBackend, type TreeStoreShape } from "./stores/TreeStore.ts"

// The checkpoint saver a backend plugs into
export type { BlobRow, CheckpointRow, CheckpointRows, ListQuery, WriteRow } from "./stores/CheckpointRows.ts"
export { BatonCheckpointSaver, RenewingCheckpointSaver } from "./checkpoint/CheckpointSaver.ts"
export * as CheckpointStores from "./checkpoint/CheckpointStores.ts"
export * as Schedules from "./runtime/Schedules.ts"
export { ScheduleExistsError, ScheduleOwnerError, UnknownScheduleError } from "./runtime/Errors.ts"
export type { ScheduleError } from "./runtime/Errors.ts"
export { type NewSchedule, type ScheduleChange, type ScheduleRow, ScheduleStore, type ScheduleStoreShape } from "./stores/ScheduleStore.ts"

// Keyed starts: concurrency keys and debounce windows
export {
  ConcurrencyKeyStore,
  type ConcurrencyKeyStoreShape,
  type Enqueued,
  type EntryCursor,
  type KeyEntry,
  type NewKeyEntry,
  type Released
} from "./stores/ConcurrencyKeyStore.ts"
export { type DebounceOffer, DebounceStore, type DebounceStoreShape, type DebounceWindow, executionIdTaken } from "./stores/DebounceStore.ts"

// Diagnostics: `describe` and `check`, and the store probe a backend offers for them
export * as Diagnostics from "./runtime/Diagnostics.ts"
export { type PgFacts, type PgPooling, type SqliteFacts, type StoreFacts, StoreProbe, type StoreProbeShape } from "./stores/StoreProbe.ts"

// Live output: the event store and its in-process wake-ups
export { type EventInput, type EventMode, EventStore, type EventStoreShape, type StreamEvent } from "./stores/EventStore.ts"
export { EventWakeups, type EventWakeupsShape } from "./stores/EventWakeups.ts"
