/**
 * The EventStore conformance suite against the in-memory Layers: two
 * instances over one `MemoryState`, and one instance of the bundle.
 */
import { Layer } from "effect"
import { MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { Conformance } from "../../src/testing/index.ts"

const state = Layer.merge(MemoryState.layer, Ids.layer)
const instance = () => Layer.fresh(MemoryStores.layerOnState).pipe(Layer.provideMerge(state))

Conformance.eventStoreSuite({ name: "memory, two instances", layer: instance(), second: instance() })
Conformance.eventStoreSuite({ name: "memory, one instance", layer: MemoryStores.layer })
