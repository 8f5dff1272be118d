/** The StoreProbe conformance suite on the in-memory probe. */
import { MemoryProbe } from "../../layers/memory/index.ts"
import { storeProbeSuite } from "../../src/testing/index.ts"

storeProbeSuite({ name: "memory", layer: MemoryProbe.layer, second: MemoryProbe.layer })
