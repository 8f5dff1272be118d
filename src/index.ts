/**
 * baton: durable LangGraph executions across several instances of an Effect
 * application, over shared stores with fenced writes.
 *
 * The public surface as namespaces, one per module, in the order a reader
 * meets them: the runtime service and its workflows, the errors, the store
 * contracts a backend implements (and the domain types they speak), and the
 * checkpoint saver a backend plugs into. `Baton.Baton` is the service,
 * `Baton.layer` builds it; `StoreErrors.LeaseLostError`, `LeaseStore.LeaseStore`
 * and the rest read the same way.
 * Test helpers live in `baton/testing`, backends in `baton/memory`,
 * `baton/sqlite` and `baton/pg`.
 *
 * @since 0.1.0
 * @module baton
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "./internal/nodeVersion.ts"

// The runtime and its workflows
export * as Baton from "./runtime/Baton.ts"
export * as BatonConfig from "./runtime/BatonConfig.ts"
export * as Workflow from "./runtime/Workflow.ts"
export * as Children from "./runtime/Children.ts"
export * as Schedules from "./runtime/Schedules.ts"
export * as Observer from "./runtime/Observer.ts"
export * as Health from "./runtime/Health.ts"
export * as Leader from "./runtime/Leader.ts"
export * as BatonMetrics from "./runtime/Metrics.ts"
export * as StoreTracing from "./runtime/StoreTracing.ts"
export * as Diagnostics from "./runtime/Diagnostics.ts"
export * as Evaluation from "./runtime/evaluation/Evaluation.ts"

// Fleet-wide limits
export * as Budget from "./runtime/limits/Budget.ts"
export * as Provider from "./runtime/limits/Provider.ts"
export * as ProviderFallbacks from "./runtime/limits/ProviderFallbacks.ts"
export * as ProviderSlots from "./runtime/limits/ProviderSlots.ts"
export * as TenantQuota from "./runtime/limits/TenantQuota.ts"

// Errors: the runtime's, then the store contracts'
export * as BatonErrors from "./runtime/Errors.ts"
export * as StoreErrors from "./stores/Errors.ts"

// The domain types the contracts speak
export * as Ids from "./stores/Ids.ts"
export * as ExecutionRecord from "./stores/ExecutionRecord.ts"
export * as Lease from "./stores/Lease.ts"
export * as Fence from "./stores/Fence.ts"
export * as Pause from "./stores/Pause.ts"
export * as StoreServices from "./stores/StoreServices.ts"
export * as StorePartitions from "./stores/StorePartitions.ts"

// Store contracts
export * as LeaseStore from "./stores/LeaseStore.ts"
export * as RecordStore from "./stores/RecordStore.ts"
export * as PauseStore from "./stores/PauseStore.ts"
export * as TreeStore from "./stores/TreeStore.ts"
export * as CheckpointStore from "./stores/CheckpointStore.ts"
export * as CheckpointRows from "./stores/CheckpointRows.ts"
export * as ChildQueueStore from "./stores/ChildQueueStore.ts"
export * as ExecutionHistoryStore from "./stores/ExecutionHistoryStore.ts"
export * as LedgerStore from "./stores/LedgerStore.ts"
export * as RateLimitStore from "./stores/RateLimitStore.ts"
export * as RequestStore from "./stores/RequestStore.ts"
export * as TimerStore from "./stores/TimerStore.ts"
export * as ScheduleStore from "./stores/ScheduleStore.ts"
export * as ConcurrencyKeyStore from "./stores/ConcurrencyKeyStore.ts"
export * as DebounceStore from "./stores/DebounceStore.ts"
export * as EventStore from "./stores/EventStore.ts"
export * as StoreProbe from "./stores/StoreProbe.ts"

// Wake-ups and liveness a backend may offer
export * as LeaseWakeups from "./stores/LeaseWakeups.ts"
export * as EventWakeups from "./stores/EventWakeups.ts"
export * as InstanceLiveness from "./stores/InstanceLiveness.ts"

// The checkpoint saver a backend plugs into
export * as CheckpointSaver from "./checkpoint/CheckpointSaver.ts"
export * as CheckpointStores from "./checkpoint/CheckpointStores.ts"
