/** The StoreProbe conformance suite on the in-memory probe. */
import { MemoryProbe } from "../../layers/memory/index.ts"
import { Conformance } from "../../src/testing/index.ts"

Conformance.storeProbeSuite({ name: "memory", layer: MemoryProbe.layer, second: MemoryProbe.layer })
