/**
 * Every conformance suite through `ShardedStores` over three SQLite files
 * (any bundle is a shard), as two instances: two routers, each with its own
 * connections to the three files (busy timeout 0: one process).
 */
import { ShardedStores } from "../../layers/sharded/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { byHash } from "./shards.ts"

const names = ["a", "b", "c"] as const
const files = names.map((name) => tempDb(`sharded-${name}`))
const router = () =>
  ShardedStores.layer({
    shards: names.map((name, i) => ({ name, layer: SqliteStores.layer({ path: files[i]!, busyTimeout: 0 }) })),
    route: byHash(names)
  })

const setup = { name: "sharded over 3 SQLite files, two instances", layer: router(), second: router() }

Conformance.everyStoreSuite(setup)
