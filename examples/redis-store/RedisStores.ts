/**
 * The Redis stores together, and an app's whole store set: Redis for the
 * leases, the tree keys, the checkpoints and the rate limits; SQLite (or
 * Postgres) for everything else.
 *
 * Which contract goes where is the app's choice, with one rule: a fenced
 * `CheckpointStore` checks the leases of ITS OWN backend (the lease check and
 * the write happen in one atomic step there), so checkpoints and leases move
 * together — and so does the `TreeStore`, whose fenced writes (the undo
 * markers) check the leases the same way.
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
import { Effect, Layer, Option } from "effect"
import { Ids, type Lease, LeaseStore, PauseStore, RecordStore, StoreErrors } from "baton"
import { Redis } from "effect/persistence"
import { SqliteStores } from "baton/sqlite"
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
 * and SQLite for the records, pauses, ledger and child queue — the records'
 * and the pauses' fenced writes checking the Redis leases (SQLite's own
 * lease, tree, checkpoint and rate-limit stores are built too, and replaced:
 * the Redis ones come last and win).
 */
export const withSqlite = (options: { readonly url: string; readonly path: string } & RedisStoreOptions) => {
  const sqlite = { path: options.path }
  const redis = layer(options).pipe(Layer.provide(connection(options.url)))
  // The SQLite stores that do not check a lease (one connection each; one file).
  const others = Layer.mergeAll(
    SqliteStores.layerLedgerStore(sqlite),
    SqliteStores.layerChildQueueStore(sqlite)
  )
  const records = recordsFencedBy(SqliteStores.layerRecordStore(sqlite))
  const pauses = pausesFencedBy(SqliteStores.layerPauseStore(sqlite))
  return Layer.mergeAll(others, records, pauses).pipe(
    Layer.provideMerge(Layer.merge(redis, Ids.layer))
  )
}

/**
 * `lease` as Redis holds it now: fails with `LeaseLostError` unless it is
 * still (holder, epoch) and live at `now` — the check a fenced write makes
 * first when its rows live in another database than the leases.
 */
const stillHeld = (leases: LeaseStore.LeaseStoreShape, lease: Lease.Lease, now: number, what: string) =>
  Effect.gen(function*() {
    const row = Option.getOrUndefined(yield* leases.get(lease.tenantId, lease.rootExecutionId))
    if (row !== undefined && row.holder === lease.holder && row.epoch === lease.epoch && row.expiresAt > now) return
    return yield* new StoreErrors.LeaseLostError({
      tenantId: lease.tenantId,
      rootExecutionId: lease.rootExecutionId,
      holder: lease.holder,
      epoch: lease.epoch,
      reason: row === undefined
        ? `a fenced ${what} was refused: no lease exists for this tree`
        : `a fenced ${what} was refused: the lease is ${row.holder ?? "released"} at epoch ${row.epoch}, expiring at ${row.expiresAt}`
    })
  })

/**
 * baton's SQL `RecordStore` fences a holder's status transition by reading the
 * lease row in the transition's own transaction — which needs the leases in
 * the same database. Here the leases live in Redis and the records in SQLite,
 * so this RecordStore checks the Redis lease first and then compares-and-sets
 * the record: two steps, so a lease lost between them is a window of one round
 * trip (the same window as an unfenced saver's renew-then-write). To close it,
 * keep RecordStore and LeaseStore in one database. (The SQL history and request
 * stores fence the same way, so this composition leaves them out: history is
 * not recorded, request keys are not de-duplicated.)
 */
const recordsFencedBy = <E, R>(sqliteRecords: Layer.Layer<RecordStore.RecordStore, E, R>) =>
  Layer.effect(
    RecordStore.RecordStore,
    Effect.gen(function*() {
      const records = yield* RecordStore.RecordStore
      const leases = yield* LeaseStore.LeaseStore
      const shape: RecordStore.RecordStoreShape = {
        ...records,
        setStatusFenced: ({ lease, ...input }) => Effect.andThen(stillHeld(leases, lease, input.now, "status transition"), records.setStatus(input))
      }
      return shape
    })
  ).pipe(Layer.provide(sqliteRecords))

/**
 * The same for pauses: baton's SQL `PauseStore.saveFenced` checks the lease
 * row of its own database in the insert, and the leases live in Redis here.
 * This one checks the Redis lease first, then saves: a window of one round
 * trip, as for the records (a stale pause that slips through it is withdrawn
 * by the runtime's twin check). To close it, keep PauseStore and LeaseStore
 * in one database.
 */
const pausesFencedBy = <E, R>(sqlitePauses: Layer.Layer<PauseStore.PauseStore, E, R>) =>
  Layer.effect(
    PauseStore.PauseStore,
    Effect.gen(function*() {
      const pauses = yield* PauseStore.PauseStore
      const leases = yield* LeaseStore.LeaseStore
      return PauseStore.make({
        ...pauses,
        saveFenced: (pause, lease, now) => Effect.andThen(stillHeld(leases, lease, now, "pause save"), pauses.save(pause))
      })
    })
  ).pipe(Layer.provide(sqlitePauses))

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
