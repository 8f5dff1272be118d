/**
 * `CheckpointStore` on Redis: baton's own LangGraph saver over `CheckpointRows`
 * kept in Redis, FENCED — a checkpoint or pending write lands only while the
 * writer's lease (kept by `RedisLeaseStore` in the same Redis) is still its own.
 *
 * The guarantee `CheckpointRows` asks of a fenced backend is that the lease
 * check holds until the write commits. Here the check and the write are one
 * Lua script: Redis runs a script to its end before any other command, so no
 * acquire, renew or release of the lease can come in between. (MULTI/WATCH
 * would also do: WATCH the lease, read it, MULTI the writes, EXEC fails if
 * the lease changed — one round trip more, and a retry loop.)
 *
 * Redis does not roll a script back when a command in it fails: each script
 * checks (and may push) the lease FIRST, then writes. A failure after the
 * check at worst renewed a lease its holder still held.
 *
 * Binary values (LangGraph's serialized checkpoints) travel as base64 inside
 * a JSON row: effect's `Redis` service sends and receives strings.
 */
import { Effect, Layer } from "effect"
import { Redis } from "effect/persistence"
import { type CheckpointRows, CheckpointStore, CheckpointStores, Fence, type Ids, StoreErrors } from "baton"
import { fenceLua } from "./RedisLeaseStore.ts"
import { type Keys, nsKeys } from "./RedisKeys.ts"

// ---------------------------------------------------------------------------
// Encoding: one JSON string per row, binary as base64. The row's tenant,
// thread and namespace are in its key, so they are not stored again.

const b64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")
const bytes = (text: string) => new Uint8Array(Buffer.from(text, "base64"))

interface Where {
  readonly tenantId: Ids.TenantId
  readonly threadId: Ids.ThreadId
  readonly checkpointNs: string
}

const encodeCheckpoint = (row: CheckpointRows.CheckpointRow) =>
  JSON.stringify([row.checkpointId, row.parentCheckpointId, row.type, b64(row.checkpoint), row.metadataType, b64(row.metadata)])
const decodeCheckpoint = (where: Where, json: string): CheckpointRows.CheckpointRow => {
  const [checkpointId, parentCheckpointId, type, checkpoint, metadataType, metadata] = JSON.parse(json) as [
    string,
    string | null,
    string,
    string,
    string,
    string
  ]
  return { ...where, checkpointId, parentCheckpointId, type, checkpoint: bytes(checkpoint), metadataType, metadata: bytes(metadata) }
}

const blobField = (channel: string, version: string) => JSON.stringify([channel, version])
const encodeBlob = (row: CheckpointRows.BlobRow) => JSON.stringify([row.channel, row.version, row.type, b64(row.value)])
const decodeBlob = (where: Where, json: string): CheckpointRows.BlobRow => {
  const [channel, version, type, value] = JSON.parse(json) as [string, string, string, string]
  return { ...where, channel, version, type, value: bytes(value) }
}

const encodeWrite = (row: CheckpointRows.WriteRow) =>
  JSON.stringify([row.checkpointId, row.taskId, row.idx, row.channel, row.type, b64(row.value), row.taskPath])
const decodeWrite = (where: Where, json: string): CheckpointRows.WriteRow => {
  const [checkpointId, taskId, idx, channel, type, value, taskPath] = JSON.parse(json) as [
    string,
    string,
    number,
    string,
    string,
    string,
    string
  ]
  return { ...where, checkpointId, taskId, idx, channel, type, value: bytes(value), taskPath }
}

// ---------------------------------------------------------------------------
// The scripts. Each takes the fence as its first six arguments: "1" (fenced)
// or "0", then holder, epoch, now, ttl and the expiry below which a renewal is
// due; the lease key is the script's last key when fenced.

const fenceArgs = (check: Fence.FenceCheck | undefined) =>
  check === undefined
    ? ["0", "", 0, 0, 0, 0]
    : ["1", check.lease.holder, check.lease.epoch, check.now, check.ttlMillis, Fence.renewalDueBefore(check)]

/** Checks the fence (when given) and returns from the script if the lease is lost: nothing is written. */
const checkFenceLua = fenceLua + `
local fenced = { 'none' }
if ARGV[1] == '1' then
  fenced = fence(KEYS[#KEYS], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
  if fenced[1] == 'lost' then return fenced end
end
`

/**
 * putCheckpoint: KEYS namespaces, threads, checkpoints, ids, blobs[, lease];
 * ARGV fence…, ns, nsBase, threadId, checkpointId, row, then (field, blob) pairs.
 * The row is upserted; a blob that exists is kept (a version never changes).
 */
const putCheckpoint = Redis.script(
  (keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) => [...keys, ...args],
  {
    numberOfKeys: (keys) => keys.length,
    lua: checkFenceLua + `
redis.call('HSET', KEYS[1], ARGV[7], ARGV[8])
redis.call('SADD', KEYS[2], ARGV[9])
redis.call('HSET', KEYS[3], ARGV[10], ARGV[11])
redis.call('ZADD', KEYS[4], 0, ARGV[10])
for i = 12, #ARGV, 2 do redis.call('HSETNX', KEYS[5], ARGV[i], ARGV[i + 1]) end
return fenced`
  }
).withReturnType<Array<string>>()

/**
 * putWrites (of one checkpoint): KEYS namespaces, threads, writeKeys, writes[, lease];
 * ARGV fence…, ns, nsBase, threadId, then (field, row, replace) triples.
 * A write with idx >= 0 that exists is kept; idx < 0 (LangGraph's special
 * channels) is replaced.
 */
const putWrites = Redis.script(
  (keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) => [...keys, ...args],
  {
    numberOfKeys: (keys) => keys.length,
    lua: checkFenceLua + `
if #ARGV > 9 then
  redis.call('HSET', KEYS[1], ARGV[7], ARGV[8])
  redis.call('SADD', KEYS[2], ARGV[9])
  redis.call('SADD', KEYS[3], KEYS[4])
end
for i = 10, #ARGV, 3 do
  if ARGV[i + 2] == '1' then redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
  else redis.call('HSETNX', KEYS[4], ARGV[i], ARGV[i + 1]) end
end
return fenced`
  }
).withReturnType<Array<string>>()

/** getCheckpoint: KEYS checkpoints, ids; ARGV id ("" = the newest, the greatest id). */
const getCheckpoint = Redis.script((checkpoints: string, ids: string, id: string) => [checkpoints, ids, id], {
  numberOfKeys: 2,
  lua: `
local id = ARGV[1]
if id == '' then
  local newest = redis.call('ZREVRANGEBYLEX', KEYS[2], '+', '-', 'LIMIT', 0, 1)
  if #newest == 0 then return false end
  id = newest[1]
end
return redis.call('HGET', KEYS[1], id)`
}).withReturnType<string | null>()

/** deleteThread: KEYS namespaces, threads; ARGV threadId. Every key of every namespace, in one step. */
const deleteThread = Redis.script((namespaces: string, threads: string, threadId: string) => [namespaces, threads, threadId], {
  numberOfKeys: 2,
  lua: `
for _, base in ipairs(redis.call('HVALS', KEYS[1])) do
  for _, writes in ipairs(redis.call('SMEMBERS', base .. '${nsKeys.writeKeys}')) do redis.call('DEL', writes) end
  redis.call('DEL', base .. '${nsKeys.checkpoints}', base .. '${nsKeys.checkpointIds}', base .. '${nsKeys.blobs}', base .. '${nsKeys.writeKeys}')
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 1`
}).withReturnType<number>()

// ---------------------------------------------------------------------------
// The rows.

/** What a fenced script answered: the lease's expiry after the write, or the refusal. */
const fenceResult = (check: Fence.FenceCheck | undefined, reply: Array<string>): Fence.FencedWrite | undefined => {
  if (check === undefined) return undefined
  if (reply[0] === "lost") {
    const { epoch, holder, rootExecutionId, tenantId } = check.lease
    throw new StoreErrors.LeaseLostError({ tenantId, rootExecutionId, holder, epoch, reason: `a fenced checkpoint write was refused: ${reply[1]}` })
  }
  return { expiresAt: Number(reply[1]), renewed: reply[2] === "1" }
}

/** The `CheckpointRows` over the `Redis` service in context. */
export const makeRows = (keys: Keys) =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const run = <A>(effect: Effect.Effect<A, Redis.RedisError>) => Effect.runPromise(effect)
    const key = (where: Where, suffix: string) => keys.ns(where.tenantId, where.threadId, where.checkpointNs) + suffix
    const leaseKey = (check: Fence.FenceCheck | undefined) =>
      check === undefined ? [] : [keys.lease(check.lease.tenantId, check.lease.rootExecutionId)]
    const nsArgs = (where: Where) => [where.checkpointNs, keys.ns(where.tenantId, where.threadId, where.checkpointNs), where.threadId]
    const namespacesOf = (tenantId: Ids.TenantId, threadId: Ids.ThreadId) =>
      run(redis.send<Array<string>>("HKEYS", keys.namespaces(tenantId, threadId)))

    const rows: CheckpointRows.CheckpointRows = {
      fenced: true,
      putCheckpoint: async (row, blobs, check) =>
        fenceResult(
          check,
          await run(redis.eval(putCheckpoint)(
            [
              keys.namespaces(row.tenantId, row.threadId),
              keys.threads(row.tenantId),
              key(row, nsKeys.checkpoints),
              key(row, nsKeys.checkpointIds),
              key(row, nsKeys.blobs),
              ...leaseKey(check)
            ],
            [
              ...fenceArgs(check),
              ...nsArgs(row),
              row.checkpointId,
              encodeCheckpoint(row),
              ...blobs.flatMap((b) => [blobField(b.channel, b.version), encodeBlob(b)])
            ]
          ))
        ),
      putWrites: async (writes, check) => {
        // baton's saver passes the writes of one task for one checkpoint — or
        // none, and then the script only checks the fence (its keys unused).
        const first = writes[0]
        if (first === undefined && check === undefined) return undefined
        const where = first ?? { tenantId: check!.lease.tenantId, threadId: "", checkpointNs: "" }
        for (const w of writes) {
          if (w.tenantId !== where.tenantId || w.threadId !== where.threadId || w.checkpointNs !== where.checkpointNs || w.checkpointId !== first!.checkpointId) {
            throw new Error("RedisCheckpointStore.putWrites: the rows of one call must belong to one checkpoint")
          }
        }
        return fenceResult(
          check,
          await run(redis.eval(putWrites)(
            [
              keys.namespaces(where.tenantId, where.threadId),
              keys.threads(where.tenantId),
              key(where, nsKeys.writeKeys),
              first === undefined ? key(where, ":w:") : keys.writes(first.tenantId, first.threadId, first.checkpointNs, first.checkpointId),
              ...leaseKey(check)
            ],
            [
              ...fenceArgs(check),
              ...nsArgs(where),
              ...writes.flatMap((w) => [JSON.stringify([w.taskId, w.idx]), encodeWrite(w), w.idx < 0 ? "1" : "0"])
            ]
          ))
        )
      },
      getCheckpoint: async (tenantId, threadId, checkpointNs, checkpointId) => {
        const where = { tenantId, threadId, checkpointNs }
        const json = await run(redis.eval(getCheckpoint)(key(where, nsKeys.checkpoints), key(where, nsKeys.checkpointIds), checkpointId ?? ""))
        return json === null ? undefined : decodeCheckpoint(where, json)
      },
      getWrites: async (tenantId, threadId, checkpointNs, checkpointIds) => {
        const where = { tenantId, threadId, checkpointNs }
        // One HVALS per checkpoint, sent together (node-redis pipelines them on one connection).
        const all = await run(Effect.forEach(
          checkpointIds,
          (id) => redis.send<Array<string>>("HVALS", keys.writes(tenantId, threadId, checkpointNs, id)),
          { concurrency: "unbounded" }
        ))
        return all.flat().map((json) => decodeWrite(where, json))
      },
      getBlobs: async (tenantId, threadId, checkpointNs, versions) => {
        if (versions.length === 0) return []
        const where = { tenantId, threadId, checkpointNs }
        const found = await run(redis.send<Array<string | null>>(
          "HMGET",
          key(where, nsKeys.blobs),
          ...versions.map((v) => blobField(v.channel, v.version))
        ))
        return found.flatMap((json) => (json === null ? [] : [decodeBlob(where, json)]))
      },
      listCheckpoints: async (tenantId, q) => {
        const threads = q.threadId !== undefined ? [q.threadId] : await run(redis.send<Array<string>>("SMEMBERS", keys.threads(tenantId)))
        const places = (await Promise.all(threads.map(async (threadId) =>
          (q.checkpointNs !== undefined ? [q.checkpointNs] : await namespacesOf(tenantId, threadId)).map((checkpointNs) => ({
            tenantId,
            threadId,
            checkpointNs
          }))
        ))).flat()
        const found = await Promise.all(places.map(async (where) => {
          // Newest first, from the sorted set; `before` is an exclusive upper bound.
          const ids = q.checkpointId !== undefined
            ? [q.checkpointId].filter((id) => q.before === undefined || id < q.before)
            : await run(redis.send<Array<string>>(
              "ZREVRANGEBYLEX",
              key(where, nsKeys.checkpointIds),
              q.before === undefined ? "+" : `(${q.before}`,
              "-",
              ...(q.limit === undefined ? [] : ["LIMIT", "0", String(q.limit)])
            ))
          if (ids.length === 0) return []
          const json = await run(redis.send<Array<string | null>>("HMGET", key(where, nsKeys.checkpoints), ...ids))
          return json.flatMap((j) => (j === null ? [] : [decodeCheckpoint(where, j)]))
        }))
        const newestFirst = found.flat().sort((a, b) => (a.checkpointId < b.checkpointId ? 1 : a.checkpointId > b.checkpointId ? -1 : 0))
        return q.limit === undefined ? newestFirst : newestFirst.slice(0, q.limit)
      },
      deleteThread: async (tenantId, threadId) => {
        await run(redis.eval(deleteThread)(keys.namespaces(tenantId, threadId), keys.threads(tenantId), threadId))
      },
      ping: async () => {
        await run(redis.send("PING"))
      }
    }
    return rows
  })

/** `CheckpointStore` on the `Redis` service in context; its fences check `RedisLeaseStore`'s leases. */
export const layer = (keys: Keys) => Layer.effect(CheckpointStore.CheckpointStore, Effect.map(makeRows(keys), CheckpointStores.fromRows))
