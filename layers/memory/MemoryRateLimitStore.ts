/**
 * In-memory `RateLimitStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as RateLimitStore from "../../src/stores/RateLimitStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

/**
 * The in-memory `RateLimitStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  RateLimitStore.make({
    acquireSlot: (k, max, holder, ttl, now) =>
      Effect.sync(() => {
        let slots = rows.slots.get(k)
        if (slots === undefined) rows.slots.set(k, slots = [])
        for (let i = 0; i < max; i++) {
          const slot = slots[i] ??= { holder: null, epoch: 0, expiresAt: 0 }
          if (slot.holder === null || slot.expiresAt <= now) {
            slot.holder = holder
            slot.epoch += 1
            slot.expiresAt = now + ttl
            return Option.some({ key: k, slot: i, holder, epoch: slot.epoch, expiresAt: slot.expiresAt })
          }
        }
        return Option.none()
      }),
    heldSlot: (k, holder, now) =>
      Effect.sync(() => {
        const slots = rows.slots.get(k) ?? []
        const i = slots.findIndex((slot) => slot !== undefined && slot.holder === holder && slot.expiresAt > now)
        if (i < 0) return Option.none()
        const slot = slots[i]!
        return Option.some({ key: k, slot: i, holder, epoch: slot.epoch, expiresAt: slot.expiresAt })
      }),
    renewSlot: (s, ttl, now) =>
      Effect.sync(() => {
        const slot = rows.slots.get(s.key)?.[s.slot]
        if (slot === undefined || slot.holder !== s.holder || slot.epoch !== s.epoch || slot.expiresAt <= now) return false
        slot.expiresAt = now + ttl
        return true
      }),
    releaseSlot: (s) =>
      Effect.sync(() => {
        const slot = rows.slots.get(s.key)?.[s.slot]
        if (slot === undefined || slot.holder !== s.holder || slot.epoch !== s.epoch) return false
        slot.holder = null
        slot.expiresAt = 0
        return true
      }),
    addToWindow: (k, amount, windowMillis, now, limit) =>
      Effect.sync(() => {
        const start = Math.floor(now / windowMillis) * windowMillis
        const windowKey = Rows.key(k, String(windowMillis))
        const current = rows.windows.get(windowKey)
        const total = current !== undefined && current.start === start ? current.total : 0
        if (limit !== undefined && total + amount > limit) return Option.none()
        rows.windows.set(windowKey, { start, total: total + amount })
        return Option.some(total + amount)
      }),
    clearWindow: (k) =>
      Effect.sync(() => {
        for (const windowKey of rows.windows.keys()) {
          if ((JSON.parse(windowKey) as Array<string>)[0] === k) rows.windows.delete(windowKey)
        }
      }),
    pauseUntil: (k, until) =>
      Effect.sync(() => {
        const effective = Math.max(rows.pausedUntil.get(k) ?? until, until)
        rows.pausedUntil.set(k, effective)
        return effective
      }),
    pausedUntil: (k) => Effect.sync(() => Option.fromNullishOr(rows.pausedUntil.get(k))),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
