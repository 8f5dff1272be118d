/**
 * The ConcurrencyKeyStore conformance suite on the memory backend: two instances over one state, and one.
 */
import { Layer } from "effect"
import { MemoryConcurrencyKeyStore, MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { Conformance } from "../../src/testing/index.ts"

const state = MemoryState.layer
const instance = () => Layer.fresh(MemoryConcurrencyKeyStore.layer).pipe(Layer.provideMerge(state))

Conformance.concurrencyKeyStoreSuite({ name: "memory, two instances", layer: instance(), second: instance() })
Conformance.concurrencyKeyStoreSuite({ name: "memory, the store alone", layer: MemoryStores.layerConcurrencyKeyStore })
