/**
 * The ScheduleStore conformance suite on the memory backend: two instances over one state, and one.
 */
import { Layer } from "effect"
import { MemoryScheduleStore, MemoryState } from "../../layers/memory/index.ts"
import { Conformance } from "../../src/testing/index.ts"

const state = MemoryState.layer
const instance = () => Layer.fresh(MemoryScheduleStore.layer).pipe(Layer.provideMerge(state))

Conformance.scheduleStoreSuite({ name: "memory, two instances", layer: instance(), second: instance() })
Conformance.scheduleStoreSuite({ name: "memory, one instance", layer: MemoryScheduleStore.layer.pipe(Layer.provide(MemoryState.layer)) })
