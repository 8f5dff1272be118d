/**
 * The DebounceStore conformance suite on the memory backend: two instances over one state, and one.
 */
import { Layer } from "effect"
import { MemoryDebounceStore, MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { Conformance } from "../../src/testing/index.ts"

const state = MemoryState.layer
const instance = () => Layer.fresh(MemoryDebounceStore.layer).pipe(Layer.provideMerge(state))

Conformance.debounceStoreSuite({ name: "memory, two instances", layer: instance(), second: instance() })
Conformance.debounceStoreSuite({ name: "memory, the store alone", layer: MemoryStores.layerDebounceStore })
