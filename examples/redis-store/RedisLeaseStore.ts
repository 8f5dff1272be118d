/**
 * `LeaseStore` on Redis: one hash per execution tree, every operation one Lua
 * script.
 *
 * Why Lua: Redis runs a script to the end before it serves any other command,
 * so read-check-write inside a script is atomic across every instance — of N
 * concurrent `acquire`s of a free lease exactly one sees it free. (A plain
 * HGET then HSET from the client could interleave with another instance.)
 *
 * Time: `now` and `ttl` come from the caller's Clock. The scripts never call
 * Redis' TIME, so tests drive leases with `TestClock` like every other store.
 */
import { Effect, Layer, Option } from "effect"
import { Redis } from "effect/persistence"
import { type Lease, LeaseStore } from "baton"
import { type Keys, luaFormat, op } from "./RedisKeys.ts"

/** Reads the lease hash; `holder` "" means released (the epoch stays: epochs never go back). */
const readLease = `
local row = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expiresAt')
local holder = row[1] or ''
local epoch = tonumber(row[2]) or 0
local expiresAt = tonumber(row[3]) or 0
`

/**
 * acquire(holder, now, ttl): free (never taken, released, or expired at
 * `now`) → the caller holds it with epoch + 1; held live by the caller → the
 * expiry moves, same epoch; held live by another → nil.
 */
const acquire = Redis.script(
  (key: string, holder: string, now: number, ttl: number) => [key, holder, now, ttl],
  {
    numberOfKeys: 1,
    lua: luaFormat + readLease + `
local now, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
local live = holder ~= '' and expiresAt > now
if live and holder ~= ARGV[1] then return false end
if not live then epoch = epoch + 1 end
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', fmt(epoch), 'expiresAt', fmt(now + ttl))
return { fmt(epoch), fmt(now + ttl) }`
  }
).withReturnType<[string, string] | null>()

/** renew(holder, epoch, now, ttl): only while still (holder, epoch) and live at `now`; the expiry never moves backward. */
const renew = Redis.script(
  (key: string, holder: string, epoch: number, now: number, ttl: number) => [key, holder, epoch, now, ttl],
  {
    numberOfKeys: 1,
    lua: luaFormat + readLease + `
local now, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
if holder ~= ARGV[1] or epoch ~= tonumber(ARGV[2]) or expiresAt <= now then return 0 end
redis.call('HSET', KEYS[1], 'expiresAt', fmt(math.max(expiresAt, now + ttl)))
return 1`
  }
).withReturnType<number>()

/** release(holder, epoch): frees the lease only for the same (holder, epoch); keeps the epoch. */
const release = Redis.script(
  (key: string, holder: string, epoch: number) => [key, holder, epoch],
  {
    numberOfKeys: 1,
    lua: readLease + `
if holder == '' or holder ~= ARGV[1] or epoch ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'holder', '', 'expiresAt', '0')
return 1`
  }
).withReturnType<number>()

/**
 * The fence of a checkpoint write, as a Lua function the checkpoint scripts
 * include (so the check and the write run in ONE script: nothing can take the
 * lease between them). It answers `{'lost', reason}` — the caller then writes
 * nothing — or `{'ok', expiresAt, renewed}`: the lease is still (holder,
 * epoch) and live at `now`, and it was pushed to `now + ttl` when its expiry
 * was earlier than `dueBefore` (= now + ttl - renewMillis).
 */
export const fenceLua = luaFormat + `
local function fence(leaseKey, holder, epoch, now, ttl, dueBefore)
  local row = redis.call('HMGET', leaseKey, 'holder', 'epoch', 'expiresAt')
  local h, e, x = row[1] or '', tonumber(row[2]) or 0, tonumber(row[3]) or 0
  if e == 0 then return { 'lost', 'no lease exists for this tree' } end
  if h == '' then return { 'lost', 'the lease was released (epoch ' .. fmt(e) .. ')' } end
  if h ~= holder or e ~= epoch then return { 'lost', 'the lease passed to ' .. h .. ' (epoch ' .. fmt(e) .. ')' } end
  if x <= now then return { 'lost', 'the lease expired at ' .. fmt(x) .. ', before this write at ' .. fmt(now) } end
  if x >= dueBefore then return { 'ok', fmt(x), '0' } end
  redis.call('HSET', leaseKey, 'expiresAt', fmt(now + ttl))
  return { 'ok', fmt(now + ttl), '1' }
end
`

/** The `LeaseStore` over the `Redis` service in context. */
export const make = (keys: Keys) =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    return LeaseStore.make({
      acquire: (tenantId, rootExecutionId, holder, ttl, now) =>
        op("LeaseStore", "acquire", redis.eval(acquire)(keys.lease(tenantId, rootExecutionId), holder, now, ttl)).pipe(
          Effect.map((row) =>
            row === null
              ? Option.none<Lease.Lease>()
              : Option.some({ tenantId, rootExecutionId, holder, epoch: Number(row[0]), expiresAt: Number(row[1]) })
          )
        ),
      renew: (lease, ttl, now) =>
        op(
          "LeaseStore",
          "renew",
          redis.eval(renew)(keys.lease(lease.tenantId, lease.rootExecutionId), lease.holder, lease.epoch, now, ttl)
        ).pipe(Effect.map((n) => n === 1)),
      release: (lease) =>
        op("LeaseStore", "release", redis.eval(release)(keys.lease(lease.tenantId, lease.rootExecutionId), lease.holder, lease.epoch))
          .pipe(Effect.map((n) => n === 1)),
      get: (tenantId, rootExecutionId) =>
        op(
          "LeaseStore",
          "get",
          redis.send<[string | null, string | null, string | null]>(
            "HMGET",
            keys.lease(tenantId, rootExecutionId),
            "holder",
            "epoch",
            "expiresAt"
          )
        ).pipe(Effect.map(([holder, epoch, expiresAt]) =>
          holder === null || holder === ""
            ? Option.none<Lease.Lease>()
            : Option.some({ tenantId, rootExecutionId, holder, epoch: Number(epoch), expiresAt: Number(expiresAt) })
        )),
      ping: op("LeaseStore", "ping", redis.send("PING")).pipe(Effect.asVoid)
    })
  })

/** `LeaseStore` on the `Redis` service in context. */
export const layer = (keys: Keys) => Layer.effect(LeaseStore.LeaseStore, make(keys))
