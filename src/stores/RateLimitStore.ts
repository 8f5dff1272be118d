/**
 * Shared rate-limit state: concurrency slots, counting windows and pauses,
 * seen alike by every instance. Most keys are application-wide (a model
 * provider, say); a key can also belong to one tenant (its quota's permits, a
 * tree's cap on its children): such a key names its tenant in one of the two
 * forms `tenantOfKey` reads, so that a bundle kept per tenant
 * (`ShardedStores`) keeps it with that tenant's other rows.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { InstanceId, TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * What a `RateLimitStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * One held concurrency slot. `epoch` grows each time the slot is handed out, so a stale holder's renew fails.
 *
 * @category models
 * @since 0.1.0
 */
export interface SlotLease {
  readonly key: string
  readonly slot: number
  readonly holder: InstanceId
  readonly epoch: number
  readonly expiresAt: number
}

/**
 * Semantics every implementation keeps:
 * - `acquireSlot` hands out one of `max` slots of `key` — one that is free or
 *   expired at `now` — or `None`; concurrent callers never hold more than `max`;
 * - `renewSlot` is true only while the slot is live and still (holder, epoch);
 * - `addToWindow` counts in fixed windows `[k·window, (k+1)·window)` of `now`:
 *   it adds `amount` unless the total would pass `limit` (then `None`, nothing
 *   added) and answers the new total;
 * - `pauseUntil` keeps the later of the stored and the given time;
 * - `heldSlot` (optional) answers the live slot of `key` that `holder`
 *   holds at `now`, if any: a caller whose `acquireSlot` answer was lost
 *   (the connection broke after the store committed) finds the slot it got.
 *
 * @category models
 * @since 0.1.0
 */
export interface RateLimitStoreShape {
  readonly acquireSlot: (
    key: string,
    max: number,
    holder: InstanceId,
    ttlMillis: number,
    now: number
  ) => Effect.Effect<Option.Option<SlotLease>, Failure>
  readonly renewSlot: (slot: SlotLease, ttlMillis: number, now: number) => Effect.Effect<boolean, Failure>
  readonly releaseSlot: (slot: SlotLease) => Effect.Effect<boolean, Failure>
  /**
   * The live slot of `key` held by `holder` at `now`, if any (the lowest
   * numbered one). Optional: without it, a lost `acquireSlot` answer is not
   * looked up (the slot it took comes back when its lease expires).
   *
   * @since 0.1.0
   */
  readonly heldSlot?: ((key: string, holder: InstanceId, now: number) => Effect.Effect<Option.Option<SlotLease>, Failure>) | undefined
  readonly addToWindow: (
    key: string,
    amount: number,
    windowMillis: number,
    now: number,
    limit?: number | undefined
  ) => Effect.Effect<Option.Option<number>, Failure>
  readonly clearWindow: (key: string) => Effect.Effect<void, Failure>
  /** Returns the pause in force after the call (the later of both). */
  readonly pauseUntil: (key: string, until: number) => Effect.Effect<number, Failure>
  readonly pausedUntil: (key: string) => Effect.Effect<Option.Option<number>, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

const tenantPrefix = "@tenant/"
const quotaPrefix = "tenant-quota/"

/**
 * The key of a limit that belongs to tenant `tenantId`:
 * `@tenant/<length of the tenant id>/<tenant id>/<name>`, from which
 * `tenantOfKey` reads the tenant back whatever characters the id holds.
 *
 * @category keys
 * @since 0.1.0
 */
export const tenantKey = (tenantId: TenantId, name: string): string => `${tenantPrefix}${tenantId.length}/${tenantId}/${name}`

/**
 * The tenant a key belongs to, or `undefined` for a key of the whole fleet
 * (a provider's). Two forms name a tenant: a key made by `tenantKey`, and
 * `tenant-quota/<tenant id>` (the tenant quota's permits, in that form
 * since 0.1.0).
 *
 * @category keys
 * @since 0.1.0
 */
export const tenantOfKey = (key: unknown): TenantId | undefined => {
  if (typeof key !== "string") return undefined
  if (key.startsWith(quotaPrefix)) return key.length > quotaPrefix.length ? key.slice(quotaPrefix.length) : undefined
  if (!key.startsWith(tenantPrefix)) return undefined
  const slash = key.indexOf("/", tenantPrefix.length)
  const digits = key.slice(tenantPrefix.length, slash)
  if (slash < 0 || !/^[1-9][0-9]*$/.test(digits)) return undefined
  const end = slash + 1 + Number(digits)
  return end < key.length && key[end] === "/" ? key.slice(slash + 1, end) : undefined
}

const checkSlot = (op: string, s: SlotLease) => [
  V.nonEmpty(op, "slot.key", s?.key),
  V.wholeAtLeast(op, "slot.slot", s?.slot, 0),
  V.nonEmpty(op, "slot.holder", s?.holder),
  V.wholeAtLeast(op, "slot.epoch", s?.epoch, 1)
]

/**
 * The service of shared rate limits; see `RateLimitStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class RateLimitStore extends Context.Service<RateLimitStore, RateLimitStoreShape>()("baton/RateLimitStore") {}

/**
 * Wraps a backend with the contract's argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: RateLimitStoreShape): RateLimitStoreShape => ({
  acquireSlot: (key, max, holder, ttl, now) =>
    V.checked([
      V.nonEmpty("RateLimitStore.acquireSlot", "key", key),
      V.wholeAtLeast("RateLimitStore.acquireSlot", "max", max, 1),
      V.nonEmpty("RateLimitStore.acquireSlot", "holder", holder),
      V.positiveMillis("RateLimitStore.acquireSlot", "ttlMillis", ttl),
      V.time("RateLimitStore.acquireSlot", "now", now)
    ], () => impl.acquireSlot(key, max, holder, ttl, now)),
  ...(impl.heldSlot === undefined ? {} : {
    heldSlot: (key: string, holder: InstanceId, now: number) =>
      V.checked([
        V.nonEmpty("RateLimitStore.heldSlot", "key", key),
        V.nonEmpty("RateLimitStore.heldSlot", "holder", holder),
        V.time("RateLimitStore.heldSlot", "now", now)
      ], () => impl.heldSlot!(key, holder, now))
  }),
  renewSlot: (slot, ttl, now) =>
    V.checked([
      ...checkSlot("RateLimitStore.renewSlot", slot),
      V.positiveMillis("RateLimitStore.renewSlot", "ttlMillis", ttl),
      V.time("RateLimitStore.renewSlot", "now", now)
    ], () => impl.renewSlot(slot, ttl, now)),
  releaseSlot: (slot) => V.checked(checkSlot("RateLimitStore.releaseSlot", slot), () => impl.releaseSlot(slot)),
  addToWindow: (key, amount, window, now, limit) =>
    V.checked([
      V.nonEmpty("RateLimitStore.addToWindow", "key", key),
      V.nonNegative("RateLimitStore.addToWindow", "amount", amount),
      V.positiveMillis("RateLimitStore.addToWindow", "windowMillis", window),
      V.time("RateLimitStore.addToWindow", "now", now),
      limit === undefined ? Effect.void : V.atLeast("RateLimitStore.addToWindow", "limit", limit, 1)
    ], () => impl.addToWindow(key, amount, window, now, limit)),
  clearWindow: (key) => V.checked([V.nonEmpty("RateLimitStore.clearWindow", "key", key)], () => impl.clearWindow(key)),
  pauseUntil: (key, until) =>
    V.checked([
      V.nonEmpty("RateLimitStore.pauseUntil", "key", key),
      V.time("RateLimitStore.pauseUntil", "until", until)
    ], () => impl.pauseUntil(key, until)),
  pausedUntil: (key) => V.checked([V.nonEmpty("RateLimitStore.pausedUntil", "key", key)], () => impl.pausedUntil(key)),
  ping: impl.ping
})
