/**
 * Every conformance suite against the in-memory Layers: once as two instances
 * over one `MemoryState` (two app instances over one database), once as a
 * single instance of the bundle; and the stores that also come alone,
 * alone. The CheckpointStore suite also runs over a user's own saver
 * (LangGraph's MemorySaver through `CheckpointStores.fromSaver`), the
 * unfenced path, and the PauseStore suite over a backend without a fenced
 * pause save (`saveFenced` is then `save`).
 */
import { MemorySaver } from "@langchain/langgraph-checkpoint"
import { Effect, Layer } from "effect"
import {
  MemoryConcurrencyKeyStore,
  MemoryDebounceStore,
  MemoryLeaseStore,
  MemoryPauseStore,
  MemoryScheduleStore,
  MemoryState,
  MemoryStores
} from "../../layers/memory/index.ts"
import * as CheckpointStores from "../../src/checkpoint/CheckpointStores.ts"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import * as Ids from "../../src/stores/Ids.ts"
import * as PauseStore from "../../src/stores/PauseStore.ts"
import { Conformance } from "../../src/testing/index.ts"

// One state for both instances: the same Layer value, built once in the
// suite's memo map. Each instance gets its own store services over it.
const state = Layer.merge(MemoryState.layer, Ids.layer)
const instance = () => Layer.fresh(MemoryStores.layerOnState).pipe(Layer.provideMerge(state))

const setups = [
  { name: "memory, two instances", layer: instance(), second: instance() },
  { name: "memory, one instance", layer: MemoryStores.layer }
]

for (const setup of setups) Conformance.everyStoreSuite(setup)

// The stores that come as Layers of their own: two instances of the store alone over one state, and one.
const alone = <A, E>(store: Layer.Layer<A, E, MemoryState.MemoryState>) => {
  const one = () => Layer.fresh(store).pipe(Layer.provideMerge(MemoryState.layer))
  return { layer: one(), second: one() }
}
Conformance.scheduleStoreSuite({ name: "memory, the store alone, two instances", ...alone(MemoryScheduleStore.layer) })
Conformance.concurrencyKeyStoreSuite({ name: "memory, the store alone, two instances", ...alone(MemoryConcurrencyKeyStore.layer) })
Conformance.debounceStoreSuite({ name: "memory, the store alone, two instances", ...alone(MemoryDebounceStore.layer) })
Conformance.scheduleStoreSuite({ name: "memory, the store alone", layer: MemoryScheduleStore.layer.pipe(Layer.provide(MemoryState.layer)) })
Conformance.concurrencyKeyStoreSuite({ name: "memory, the store alone", layer: MemoryStores.layerConcurrencyKeyStore })
Conformance.debounceStoreSuite({ name: "memory, the store alone", layer: MemoryStores.layerDebounceStore })

Conformance.checkpointStoreSuite({
  name: "LangGraph MemorySaver via fromSaver (unfenced)",
  layer: Layer.merge(
    Layer.sync(CheckpointStore, () => CheckpointStores.fromSaver(new MemorySaver())),
    MemoryLeaseStore.layer.pipe(Layer.provide(MemoryState.layer))
  ),
  tenants: false,
  lifecycle: false
})

// A backend that leaves `saveFenced` out: `PauseStore.make` answers it with `save` (`fenced: false`).
const unfencedPauses = Layer.effect(
  PauseStore.PauseStore,
  Effect.map(MemoryPauseStore.make, ({ fenced: _fenced, saveFenced: _saveFenced, ...backend }) => PauseStore.make(backend))
)
Conformance.pauseStoreSuite({
  name: "memory, a backend without a fenced pause save",
  layer: Layer.merge(unfencedPauses, MemoryLeaseStore.layer).pipe(Layer.provide(MemoryState.layer))
})
