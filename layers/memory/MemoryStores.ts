/**
 * Every store contract in memory, over one shared `MemoryState`.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import { IdGenerator } from "../../src/stores/Ids.ts"
import * as MemoryCheckpointStore from "./MemoryCheckpointStore.ts"
import * as MemoryChildQueueStore from "./MemoryChildQueueStore.ts"
import * as MemoryExecutionHistoryStore from "./MemoryExecutionHistoryStore.ts"
import * as MemoryLeaseStore from "./MemoryLeaseStore.ts"
import * as MemoryLedgerStore from "./MemoryLedgerStore.ts"
import * as MemoryPauseStore from "./MemoryPauseStore.ts"
import * as MemoryRateLimitStore from "./MemoryRateLimitStore.ts"
import * as MemoryRecordStore from "./MemoryRecordStore.ts"
import * as MemoryRequestStore from "./MemoryRequestStore.ts"
import { MemoryState } from "./MemoryState.ts"
import * as MemoryTreeStore from "./MemoryTreeStore.ts"

/** The eight stores over the `MemoryState` and `IdGenerator` in context. */
export const layerWithoutState = Layer.mergeAll(
  MemoryLeaseStore.layer,
  MemoryRecordStore.layer,
  MemoryPauseStore.layer,
  MemoryTreeStore.layer,
  MemoryCheckpointStore.layer,
  MemoryLedgerStore.layer,
  MemoryRateLimitStore.layer,
  MemoryChildQueueStore.layer,
  MemoryExecutionHistoryStore.layer,
  MemoryRequestStore.layer
)

/**
 * The eight stores, `IdGenerator` (random UUIDs) and a fresh `MemoryState`.
 * Build it once and give the built context to every instance of a test: they
 * then share rows as instances share a database.
 */
export const layer = layerWithoutState.pipe(
  Layer.provideMerge(Layer.merge(MemoryState.layer, IdGenerator.layer))
)
