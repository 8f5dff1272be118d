/**
 * `RateLimitStore` on Redis: concurrency slots, counting windows and pauses,
 * each operation one Lua script (atomic: Redis runs a script to its end
 * before any other command), so concurrent instances never hold more than
 * `max` slots and never count past `limit`.
 */
import { Effect, Layer, Option } from "effect"
import { Redis } from "effect/persistence"
import { RateLimitStore } from "baton"
import { type Keys, luaFormat, op } from "./RedisKeys.ts"

/** Reads slot `i` of the slots hash: holder ("" = free), epoch, expiresAt. */
const readSlot = `
local function slot(i)
  local row = redis.call('HMGET', KEYS[1], 'holder:' .. i, 'epoch:' .. i, 'expiresAt:' .. i)
  return row[1] or '', tonumber(row[2]) or 0, tonumber(row[3]) or 0
end
`

/**
 * acquireSlot(max, holder, now, ttl): the first of slots 0..max-1 that is free
 * or expired at `now` goes to the caller with its epoch + 1 (so a stale
 * holder's renew fails); none free → nil.
 */
const acquireSlot = Redis.script(
  (key: string, max: number, holder: string, now: number, ttl: number) => [key, max, holder, now, ttl],
  {
    numberOfKeys: 1,
    lua: luaFormat + readSlot + `
local max, holder, now, ttl = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 0, max - 1 do
  local h, e, x = slot(i)
  if h == '' or x <= now then
    redis.call('HSET', KEYS[1], 'holder:' .. i, holder, 'epoch:' .. i, fmt(e + 1), 'expiresAt:' .. i, fmt(now + ttl))
    return { fmt(i), fmt(e + 1), fmt(now + ttl) }
  end
end
return false`
  }
).withReturnType<[string, string, string] | null>()

/** renewSlot(i, holder, epoch, now, ttl): only while still (holder, epoch) and live at `now`. */
const renewSlot = Redis.script(
  (key: string, i: number, holder: string, epoch: number, now: number, ttl: number) => [key, i, holder, epoch, now, ttl],
  {
    numberOfKeys: 1,
    lua: luaFormat + readSlot + `
local h, e, x = slot(ARGV[1])
local now = tonumber(ARGV[4])
if h ~= ARGV[2] or e ~= tonumber(ARGV[3]) or x <= now then return 0 end
redis.call('HSET', KEYS[1], 'expiresAt:' .. ARGV[1], fmt(now + tonumber(ARGV[5])))
return 1`
  }
).withReturnType<number>()

/** releaseSlot(i, holder, epoch): frees it only for the same (holder, epoch). */
const releaseSlot = Redis.script(
  (key: string, i: number, holder: string, epoch: number) => [key, i, holder, epoch],
  {
    numberOfKeys: 1,
    lua: readSlot + `
local h, e = slot(ARGV[1])
if h == '' or h ~= ARGV[2] or e ~= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'holder:' .. ARGV[1], '', 'expiresAt:' .. ARGV[1], '0')
return 1`
  }
).withReturnType<number>()

/**
 * addToWindow(windowMillis, start, amount, limit): the window of this length
 * is stored as "start:total"; a different start means a new window (total 0).
 * Adds unless the total would pass `limit` ("" = no limit), answers the total.
 */
const addToWindow = Redis.script(
  (key: string, windowMillis: number, start: number, amount: number, limit: number | undefined) => [
    key,
    windowMillis,
    start,
    amount,
    limit ?? ""
  ],
  {
    numberOfKeys: 1,
    lua: luaFormat + `
local stored = redis.call('HGET', KEYS[1], ARGV[1])
local total = 0
if stored then
  local start, sum = string.match(stored, '^([^:]+):(.+)$')
  if start == ARGV[2] then total = tonumber(sum) end
end
local after = total + tonumber(ARGV[3])
if ARGV[4] ~= '' and after > tonumber(ARGV[4]) then return false end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. fmt(after))
return fmt(after)`
  }
).withReturnType<string | null>()

/** pauseUntil(until): keeps the later of the stored and the given time, answers it. */
const pauseUntil = Redis.script((key: string, until: number) => [key, until], {
  numberOfKeys: 1,
  lua: luaFormat + `
local stored = tonumber(redis.call('GET', KEYS[1]) or '')
local later = tonumber(ARGV[1])
if stored ~= nil and stored > later then later = stored end
redis.call('SET', KEYS[1], fmt(later))
return fmt(later)`
}).withReturnType<string>()

/** The `RateLimitStore` over the `Redis` service in context. */
export const make = (keys: Keys) =>
  Effect.gen(function*() {
    const redis = yield* Redis.Redis
    const store = "RateLimitStore"
    return RateLimitStore.make({
      acquireSlot: (key, max, holder, ttl, now) =>
        op(store, "acquireSlot", redis.eval(acquireSlot)(keys.slots(key), max, holder, now, ttl)).pipe(
          Effect.map((row) =>
            row === null
              ? Option.none<RateLimitStore.SlotLease>()
              : Option.some({ key, slot: Number(row[0]), holder, epoch: Number(row[1]), expiresAt: Number(row[2]) })
          )
        ),
      renewSlot: (s, ttl, now) =>
        op(store, "renewSlot", redis.eval(renewSlot)(keys.slots(s.key), s.slot, s.holder, s.epoch, now, ttl))
          .pipe(Effect.map((n) => n === 1)),
      releaseSlot: (s) =>
        op(store, "releaseSlot", redis.eval(releaseSlot)(keys.slots(s.key), s.slot, s.holder, s.epoch))
          .pipe(Effect.map((n) => n === 1)),
      addToWindow: (key, amount, windowMillis, now, limit) =>
        op(
          store,
          "addToWindow",
          // The window's start is computed here, once, so Lua compares strings JS made.
          redis.eval(addToWindow)(keys.windows(key), windowMillis, Math.floor(now / windowMillis) * windowMillis, amount, limit)
        ).pipe(Effect.map((total) => (total === null ? Option.none() : Option.some(Number(total))))),
      clearWindow: (key) => op(store, "clearWindow", redis.send("DEL", keys.windows(key))).pipe(Effect.asVoid),
      pauseUntil: (key, until) => op(store, "pauseUntil", redis.eval(pauseUntil)(keys.pause(key), until)).pipe(Effect.map(Number)),
      pausedUntil: (key) =>
        op(store, "pausedUntil", redis.send<string | null>("GET", keys.pause(key))).pipe(
          Effect.map((until) => (until === null ? Option.none() : Option.some(Number(until))))
        ),
      ping: op(store, "ping", redis.send("PING")).pipe(Effect.asVoid)
    })
  })

/** `RateLimitStore` on the `Redis` service in context. */
export const layer = (keys: Keys) => Layer.effect(RateLimitStore.RateLimitStore, make(keys))
