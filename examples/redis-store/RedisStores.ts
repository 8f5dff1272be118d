/**
 * The Redis stores together, and an app's whole store set: Redis for the
 * leases, the tree keys, the checkpoints and the rate limits; SQLite (or
 * Postgres) for everything else.
 *
 * Which contract goes where is the app's choice, with one rule: a fenced
 * `CheckpointStore` checks the leases of ITS OWN backend (the lease check and
 * the write happen in one atomic step there), so checkpoints and leases move
 * together.
 *
 * What Redis itself must give: the stores' atomicity comes from Lua scripts
 * and single commands, which any Redis has. Durability is the server's
 * configuration: without persistence (`--save "" --appendonly no`, as the
 * test machines run it) a restart of Redis forgets every lease and
 * checkpoint; with `appendonly yes` and `appendfsync everysec` a crash can
 * lose the last second — a lease epoch could then go back, and a stale holder
 * write again. For baton's guarantees run a primary with `appendfsync always`
 * (or accept that window), and do not fail over to a replica that may lag:
 * replication is asynchronous.
 */
import { NodeRedis } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Redis } from "effect/persistence"
import { SqliteStores } from "../../layers/sqlite/index.ts" // in your app: from "baton/sqlite"
import * as RedisCheckpointStore from "./RedisCheckpointStore.ts"
import { makeKeys, type RedisStoreOptions } from "./RedisKeys.ts"
import * as RedisLeaseStore from "./RedisLeaseStore.ts"
import * as RedisRateLimitStore from "./RedisRateLimitStore.ts"
import * as RedisTreeStore from "./RedisTreeStore.ts"

export type { RedisStoreOptions } from "./RedisKeys.ts"

/** LeaseStore, TreeStore, CheckpointStore and RateLimitStore on the `Redis` service in context. */
export const layer = (options: RedisStoreOptions = {}) => {
  const keys = makeKeys(options)
  return Layer.mergeAll(
    RedisLeaseStore.layer(keys),
    RedisTreeStore.layer(keys),
    RedisCheckpointStore.layer(keys),
    RedisRateLimitStore.layer(keys)
  )
}

/**
 * A connection to Redis: `@effect/platform-node`'s `NodeRedis` (the `redis`
 * client, node-redis) behind effect's `Redis` service. It connects when the
 * Layer is built — an unreachable server fails the build with `RedisError` —
 * and closes with the Layer's scope.
 */
export const connection = (url: string): Layer.Layer<Redis.Redis, Redis.RedisError> => NodeRedis.layer({ url })

/**
 * Every store an app needs: the four Redis stores over their own connection,
 * and SQLite for the records, pauses, ledger and child queue (SQLite's own
 * lease, tree, checkpoint and rate-limit stores are built too, and replaced:
 * the Redis ones come last and win).
 */
export const withSqlite = (options: { readonly url: string; readonly path: string } & RedisStoreOptions) =>
  Layer.merge(
    SqliteStores.layer({ path: options.path }),
    layer(options).pipe(Layer.provide(connection(options.url)))
  )

/** Every key matching `pattern`, by SCAN (which, unlike KEYS, never blocks the server for long). */
export const scanKeys = (pattern: string) =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const keys: Array<string> = []
    let cursor = "0"
    do {
      const [next, found] = yield* redis.send<[string, Array<string>]>("SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
      keys.push(...found)
      cursor = next
    } while (cursor !== "0")
    return keys
  })

/**
 * Deletes everything the stores keep under `prefix` (a test run's, say);
 * answers how many keys. Not atomic: run it when no instance uses the prefix.
 */
export const deleteAll = (prefix: string) =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const keys = yield* scanKeys(`${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`)
    let deleted = 0
    for (let i = 0; i < keys.length; i += 1000) deleted += yield* redis.send<number>("DEL", ...keys.slice(i, i + 1000))
    return deleted
  })
