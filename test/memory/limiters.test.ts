/**
 * The limiter store suite against effect's own memory stores: the reference
 * answers every other backend is held to (and the races, on one shared state).
 */
import { MemoryLimiters, MemoryStores } from "../../layers/memory/index.ts"
import { Conformance } from "../../src/testing/index.ts"

const shared = MemoryLimiters.layer()
Conformance.limiterStoresSuite({ name: "memory", layer: shared, second: shared })

// The bundle provides effect's memory stores with the others: one built Layer shared by both "instances".
const bundle = MemoryStores.layer
Conformance.limiterStoresSuite({ name: "memory, through the MemoryStores bundle", layer: bundle, second: bundle })
