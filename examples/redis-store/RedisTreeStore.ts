/**
 * `TreeStore` on Redis: one hash per execution tree, field = key, value = JSON.
 *
 * `saveIfAbsent` is HSETNX: Redis executes commands one at a time, so of N
 * concurrent callers exactly one finds the field absent and writes it.
 * `saveIfAbsentFenced` is one script that checks the lease (`RedisLeaseStore`'s,
 * in the same tenant's hash slot) and writes: nothing can take the lease between.
 * A findable reserved key (`findableNames`: the cancel request) is also kept in
 * a sorted set of the trees holding it, for `findRootsWithKey`: added before the
 * key is written and removed after the tree is deleted, so the set may name a
 * tree that lost its key (the contract allows it: the caller reads), never
 * miss one that has it.
 */
import { Effect, Layer, Option } from "effect"
import { Redis } from "effect/persistence"
import { StoreErrors, TreeStore } from "baton"
import { type Keys, op } from "./RedisKeys.ts"
import { fenceLua } from "./RedisLeaseStore.ts"

/** deleteRoot: count and delete in one script, so the count is what was deleted. */
const deleteRoot = Redis.script((key: string) => [key], {
  numberOfKeys: 1,
  lua: `local n = redis.call('HLEN', KEYS[1]); redis.call('DEL', KEYS[1]); return n`
}).withReturnType<number>()

/**
 * saveIfAbsentFenced: `{'kept'}` when the field exists, the fence's `{'lost', reason}`
 * (nothing written), or `{'written'}`. The fence never renews here (its `dueBefore` is 0).
 */
const saveFenced = Redis.script(
  (treeKey: string, leaseKey: string, field: string, json: string, holder: string, epoch: number, now: number) => [
    treeKey,
    leaseKey,
    field,
    json,
    holder,
    epoch,
    now
  ],
  {
    numberOfKeys: 2,
    lua: fenceLua + `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return { 'kept' } end
local fenced = fence(KEYS[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), 0, 0)
if fenced[1] == 'lost' then return fenced end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return { 'written' }`
  }
).withReturnType<Array<string>>()

/** The `TreeStore` over the `Redis` service in context. */
export const make = (keys: Keys) =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const findable = TreeStore.findableNames.map((n) => TreeStore.reservedPrefix + n)
    const member = (tenantId: string, root: string) => `${tenantId}\u0000${root}`
    /** Before a findable key is written: its tree joins the key's set. */
    const index = (tenantId: string, root: string, key: string) =>
      findable.includes(key) ? op("TreeStore", "index", redis.send("ZADD", keys.findable(key), "0", member(tenantId, root))) : Effect.void
    return TreeStore.make({
      saveIfAbsent: (tenantId, root, key, value) =>
        Effect.andThen(
          index(tenantId, root, key),
          op("TreeStore", "saveIfAbsent", redis.send<number>("HSETNX", keys.tree(tenantId, root), key, JSON.stringify(value)))
        ).pipe(Effect.map((n) => n === 1)),
      saveIfAbsentFenced: (tenantId, root, key, value, lease, now) =>
        Effect.andThen(index(tenantId, root, key), op(
          "TreeStore",
          "saveIfAbsentFenced",
          redis.eval(saveFenced)(
            keys.tree(tenantId, root),
            keys.lease(lease.tenantId, lease.rootExecutionId),
            key,
            JSON.stringify(value),
            lease.holder,
            lease.epoch,
            now
          )
        ).pipe(Effect.flatMap((reply) =>
          reply[0] === "lost"
            ? Effect.fail(new StoreErrors.LeaseLostError({ ...lease, reason: `a fenced tree write was refused: ${reply[1]}` }))
            : Effect.succeed(reply[0] === "written")
        ))),
      get: (tenantId, root, key) =>
        op("TreeStore", "get", redis.send<string | null>("HGET", keys.tree(tenantId, root), key)).pipe(
          Effect.map((json) => (json === null ? Option.none() : Option.some(JSON.parse(json) as unknown)))
        ),
      // A tree holds few keys (cancel requests, undo progress, the app's own):
      // read them all and filter. A store for big trees would HSCAN with MATCH.
      list: (tenantId, root, prefix) =>
        op("TreeStore", "list", redis.send<Record<string, string>>("HGETALL", keys.tree(tenantId, root))).pipe(
          Effect.map((all) =>
            Object.entries(all)
              .filter(([key]) => key.startsWith(prefix))
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([key, json]): TreeStore.TreeEntry => ({ key, value: JSON.parse(json) as unknown }))
          )
        ),
      deleteRoot: (tenantId, root) =>
        op("TreeStore", "deleteRoot", redis.eval(deleteRoot)(keys.tree(tenantId, root))).pipe(
          Effect.tap(() => Effect.forEach(findable, (key) => op("TreeStore", "deleteRoot", redis.send("ZREM", keys.findable(key), member(tenantId, root)))))
        ),
      // One lexicographic range a page; `(` starts strictly after the cursor's member.
      findRootsWithKey: (key, limit, after) =>
        op(
          "TreeStore",
          "findRootsWithKey",
          redis.send<Array<string>>(
            "ZRANGEBYLEX",
            keys.findable(key),
            Option.isNone(after) ? "-" : `(${member(after.value.tenantId, after.value.rootExecutionId)}`,
            "+",
            "LIMIT",
            "0",
            String(limit)
          )
        ).pipe(Effect.map((members) =>
          members.map((m) => {
            const at = m.indexOf("\u0000")
            return { tenantId: m.slice(0, at), rootExecutionId: m.slice(at + 1) }
          })
        )),
      ping: op("TreeStore", "ping", redis.send("PING")).pipe(Effect.asVoid)
    })
  })

/** `TreeStore` on the `Redis` service in context. */
export const layer = (keys: Keys) => Layer.effect(TreeStore.TreeStore, make(keys))
