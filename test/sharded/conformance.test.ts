/**
 * Every conformance suite through `ShardedStores` over three in-memory
 * shards: as two instances (two routers over the same three states: two app
 * instances over three databases), and as one. Tenants are spread over the
 * shards by a hash of their id, so each suite's tenants land on different
 * shards and the fan-outs (scans, claims, retention) merge their answers.
 */
import { Effect, Layer } from "effect"
import { MemoryState, MemoryStores } from "../../layers/memory/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { Conformance } from "../../src/testing/index.ts"
import { byHash } from "./shards.ts"

const names = ["a", "b", "c"] as const
// One state per shard, made here and shared by both instances (each shard's bundle is built apart: one database each).
const states = names.map(() => Effect.runSync(Effect.scoped(Layer.build(Layer.merge(MemoryState.layer, Ids.layer)))))
const router = () =>
  ShardedStores.layer({
    shards: names.map((name, i) => ({ name, layer: MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.succeedContext(states[i]!))) })),
    route: byHash(names)
  })

const setups = [
  { name: "sharded over 3 memory shards, two instances", layer: router(), second: router() },
  {
    name: "sharded over 3 memory shards, one instance",
    layer: ShardedStores.layer({ shards: names.map((name) => ({ name, layer: MemoryStores.layer })), route: byHash(names) })
  }
]

for (const setup of setups) Conformance.everyStoreSuite(setup)
