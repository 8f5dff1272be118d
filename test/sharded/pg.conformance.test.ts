/**
 * Every conformance suite through `ShardedStores` over three Postgres
 * databases (`baton_shard_a`, `_b`, `_c`), as two instances: two routers,
 * each with its own pools to the three databases. Tenants are spread over
 * the shards by a hash of their id.
 */
import { ShardedStores } from "../../layers/sharded/index.ts"
import { PgStores } from "../../layers/pg/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { ensureDatabases, shardNames, shardSchema, shardUrl } from "./pgShards.ts"
import { byHash } from "./shards.ts"

await ensureDatabases()
const schema = shardSchema("sharded_conformance")
const router = () =>
  ShardedStores.layer({
    shards: shardNames.map((name) => ({ name, layer: PgStores.layer({ url: shardUrl(name), schema, maxConnections: 4, wakeups: false }) })),
    route: byHash(shardNames)
  })

const setup = { name: "sharded over 3 Postgres databases, two instances", layer: router(), second: router() }

Conformance.everyStoreSuite(setup)
