/**
 * The three shard databases for a test file: a schema of its own in every
 * one of them, dropped after the file.
 */
import { afterAll } from "vitest"
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
