/**
 * Every store contract in memory, over one shared `MemoryState`. Named like
 * every backend (`SqliteStores`, `PgStores`):
 *
 * - `layer` — the eight stores, an `IdGenerator` (random ids), a fresh
 *   `MemoryState`, and effect's own memory `RateLimiterStore` and
 *   `CircuitBreakerStore` (`MemoryLimiters`). Build it once and give the built context to every
 *   instance of a test: they then share rows as instances share a database.
 * - `layerOnState` — the eight stores over the `MemoryState` (and
 *   `IdGenerator`) in context, with effect's memory limiter stores (their
 *   own state, made when the Layer is built).
 * - `layerLeaseStore`, `layerRecordStore`, … — one store alone on its own
 *   fresh rows, to mix with other backends.
 *
 * Memory takes no options, so these are values, not functions.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import type { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { ChildQueueStore } from "../../src/stores/ChildQueueStore.ts"
import type { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import type { RequestStore } from "../../src/stores/RequestStore.ts"
import type { ScheduleStore } from "../../src/stores/ScheduleStore.ts"
import type { ConcurrencyKeyStore } from "../../src/stores/ConcurrencyKeyStore.ts"
import type { DebounceStore } from "../../src/stores/DebounceStore.ts"
import * as Ids from "../../src/stores/Ids.ts"
import type { LeaseStore } from "../../src/stores/LeaseStore.ts"
import type { LedgerStore } from "../../src/stores/LedgerStore.ts"
import type { PauseStore } from "../../src/stores/PauseStore.ts"
import type { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import type { RecordStore } from "../../src/stores/RecordStore.ts"
import type { TreeStore } from "../../src/stores/TreeStore.ts"
import * as MemoryCheckpointStore from "./MemoryCheckpointStore.ts"
import * as MemoryChildQueueStore from "./MemoryChildQueueStore.ts"
import * as MemoryExecutionHistoryStore from "./MemoryExecutionHistoryStore.ts"
import * as MemoryLeaseStore from "./MemoryLeaseStore.ts"
import * as MemoryLedgerStore from "./MemoryLedgerStore.ts"
import * as MemoryLimiters from "./MemoryLimiters.ts"
import * as MemoryPauseStore from "./MemoryPauseStore.ts"
import * as MemoryRateLimitStore from "./MemoryRateLimitStore.ts"
import * as MemoryRecordStore from "./MemoryRecordStore.ts"
import * as MemoryRequestStore from "./MemoryRequestStore.ts"
import * as MemoryScheduleStore from "./MemoryScheduleStore.ts"
import * as MemoryConcurrencyKeyStore from "./MemoryConcurrencyKeyStore.ts"
import * as MemoryDebounceStore from "./MemoryDebounceStore.ts"
import * as MemoryEventStore from "./MemoryEventStore.ts"
import * as MemoryState from "./MemoryState.ts"
import * as MemoryTreeStore from "./MemoryTreeStore.ts"
import * as MemoryTimerStore from "./MemoryTimerStore.ts"

/**
 * The eight stores over the `MemoryState` and `IdGenerator` in context, and
 * effect's memory `RateLimiterStore` and `CircuitBreakerStore` (state of
 * their own, made at build: share the built Layer between instances).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerOnState = Layer.mergeAll(
  MemoryLeaseStore.layer,
  MemoryRecordStore.layer,
  MemoryPauseStore.layer,
  MemoryTreeStore.layer,
  MemoryCheckpointStore.layer,
  MemoryLedgerStore.layer,
  MemoryRateLimitStore.layer,
  MemoryChildQueueStore.layer,
  MemoryExecutionHistoryStore.layer,
  MemoryRequestStore.layer,
  MemoryTimerStore.layer,
  MemoryScheduleStore.layer,
  MemoryConcurrencyKeyStore.layer,
  MemoryDebounceStore.layer,
  MemoryLimiters.layer(),
  MemoryEventStore.layer
)

/**
 * The eight stores, `IdGenerator` (random UUIDs), a fresh `MemoryState`, and
 * effect's memory `RateLimiterStore` and `CircuitBreakerStore` (so
 * `RateLimiter.layer`, `CircuitBreaker.layer` and `Provider.guard` work).
 * Build it once and give the built context to every instance of a test: they
 * then share rows as instances share a database.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = layerOnState.pipe(
  Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layer))
)

const alone = <A, E, R>(storeLayer: Layer.Layer<A, E, R>) => storeLayer.pipe(Layer.provide(MemoryState.layer))

/**
 * `LeaseStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerLeaseStore: Layer.Layer<LeaseStore> = alone(MemoryLeaseStore.layer)

/**
 * `RecordStore` alone, on its own fresh rows (needs an `IdGenerator`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRecordStore: Layer.Layer<RecordStore, never, Ids.IdGenerator> = alone(MemoryRecordStore.layer)

/**
 * `PauseStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerPauseStore: Layer.Layer<PauseStore> = alone(MemoryPauseStore.layer)

/**
 * `TreeStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerTreeStore: Layer.Layer<TreeStore> = alone(MemoryTreeStore.layer)

/**
 * `CheckpointStore` alone, on its own fresh rows. Its fenced writes check
 * the lease rows of the same `MemoryState`: alone, no lease is ever found, so
 * pair it with `MemoryLeaseStore.layer` on one state (or use `layer`) when
 * writes are fenced.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerCheckpointStore: Layer.Layer<CheckpointStore> = alone(MemoryCheckpointStore.layer)

/**
 * `LedgerStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerLedgerStore: Layer.Layer<LedgerStore> = alone(MemoryLedgerStore.layer)

/**
 * `RateLimitStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRateLimitStore: Layer.Layer<RateLimitStore> = alone(MemoryRateLimitStore.layer)

/**
 * `ChildQueueStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerChildQueueStore: Layer.Layer<ChildQueueStore> = alone(MemoryChildQueueStore.layer)

/**
 * `ExecutionHistoryStore` alone, on its own fresh rows. Its saves check the
 * lease rows of the same `MemoryState`: pair it with `MemoryLeaseStore.layer`
 * on one state (or use `layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerExecutionHistoryStore: Layer.Layer<ExecutionHistoryStore> = alone(MemoryExecutionHistoryStore.layer)

/**
 * `RequestStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerRequestStore: Layer.Layer<RequestStore> = alone(MemoryRequestStore.layer)

/**
 * `ScheduleStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerScheduleStore: Layer.Layer<ScheduleStore> = alone(MemoryScheduleStore.layer)

/**
 * `ConcurrencyKeyStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConcurrencyKeyStore: Layer.Layer<ConcurrencyKeyStore> = alone(MemoryConcurrencyKeyStore.layer)

/**
 * `DebounceStore` alone, on its own fresh rows.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerDebounceStore: Layer.Layer<DebounceStore> = alone(MemoryDebounceStore.layer)
