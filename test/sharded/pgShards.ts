/**
 * The three shard databases for a test file: a schema of its own in every
 * one of them, dropped after the file.
 */
import { afterAll } from "vitest"
import { PgStores } from "../../layers/pg/index.ts"
import { randomName } from "../pg/db.ts"
import { onShard, shardNames, shardUrl } from "./pgDatabases.ts"

export { ensureDatabases, onShard, shardNames, shardUrl } from "./pgDatabases.ts"

/** A schema name for this file in every shard's database, dropped after the file. Call it at the top level. */
export const shardSchema = (name: string): string => {
  const schema = randomName(`baton_t_${name}`)
  afterAll(() =>
    Promise.all(shardNames.map((shard) => onShard(shardUrl(shard), (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))).then(() => undefined)
  )
  return schema
}

/**
 * The bundles of shards a, b and c over `schema`, shard `cut` reaching its
 * database at `cutUrl` (a proxy the test stops) with a small pool and no
 * wake-ups (a `LISTEN` through a proxy that is cut would only log).
 */
export const shardBundles = (schema: string, cut: "a" | "b" | "c", cutUrl: string) =>
  (["a", "b", "c"] as const).map((name) => ({
    name,
    layer: name === cut
      ? PgStores.layer({ url: cutUrl, schema, maxConnections: 2, wakeups: false })
      : PgStores.layer({ url: shardUrl(name), schema, maxConnections: 4 })
  }))
