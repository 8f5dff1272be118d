/**
 * Every conformance suite against the in-memory Layers: two instances over
 * one `MemoryState`, as two app instances over one database.
 */
import { Layer } from "effect"
import { IdGenerator } from "../../src/Ids.ts"
import { MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { leaseStoreSuite } from "../../src/testing/index.ts"

// One state for both instances (built once: the same Layer value in one memo
// map); each instance gets its own store services over it.
const state = Layer.merge(MemoryState.layer, IdGenerator.layer)
const instance = () => Layer.fresh(MemoryStores.layerWithoutState).pipe(Layer.provideMerge(state))

const layer = instance()
const second = instance()

leaseStoreSuite({ name: "memory, two instances", layer, second })
leaseStoreSuite({ name: "memory, one instance", layer: MemoryStores.layer })
