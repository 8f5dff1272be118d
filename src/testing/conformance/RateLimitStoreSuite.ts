/**
 * Conformance suite for {@link RateLimitStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { RateLimitStore, type SlotLease } from "../../stores/RateLimitStore.ts"
import { expectInvalid, illFormedIds, none, now, race, racersOf, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

const ttl = 10_000
const window = 60_000

/**
 * Registers the RateLimitStore conformance tests (call it at the top level of
 * a vitest file). Rate-limit keys are application-wide, so every test uses
 * keys of its own.
 *
 * @category conformance
 * @since 0.1.0
 */
export const rateLimitStoreSuite = (options: SuiteOptions<RateLimitStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "RateLimitStore", RateLimitStore, Math.max(racersOf(options), 12))

  /** Moves the clock to the start of the next window, so a test's window is a whole one. */
  const toNextWindow = Effect.flatMap(now, (t) => TestClock.adjust(window - (t % window)))

  register((test) => {
    test(`slots are never over-granted: max 3, ${racers} racers → exactly 3 distinct slots`, function*(stores) {
      const key = ids("provider")
      const t = yield* now
      const exits = yield* race(racers, (i) => stores.at(i).acquireSlot(key, 3, `holder${i}`, ttl, t))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      const granted = results.filter(Option.isSome).map((o) => o.value)
      assert.strictEqual(granted.length, 3, "exactly max slots are handed out")
      assert.strictEqual(new Set(granted.map((s) => s.slot)).size, 3, "three different slots")
      for (const s of granted) {
        assert.strictEqual(s.key, key)
        assert.strictEqual(s.expiresAt, t + ttl)
        assert.isAtLeast(s.epoch, 1)
      }
      none(yield* stores.first.acquireSlot(key, 3, "late", ttl, t), "a fourth holder while three are live")
    })

    test("heldSlot (when implemented) answers the live slot a holder holds — the one its lost acquireSlot took — and none once released or expired", function*(stores) {
      if (stores.first.heldSlot === undefined) return
      const key = ids("permit")
      const t = yield* now
      none(yield* stores.first.heldSlot(key, "a", t), "nothing held yet")
      some(yield* stores.first.acquireSlot(key, 2, "b", ttl, t), "b acquires")
      const a = some(yield* stores.first.acquireSlot(key, 2, "a", ttl, t), "a acquires")
      assert.deepStrictEqual(some(yield* stores.second.heldSlot!(key, "a", t), "a's slot, seen from another connection"), a)
      none(yield* stores.second.heldSlot!(ids("permit"), "a", t), "another key")
      none(yield* stores.second.heldSlot!(key, "a", t + ttl), "expired")
      assert.isTrue(yield* stores.first.releaseSlot(a))
      none(yield* stores.second.heldSlot!(key, "a", t), "released")
    })

    test("a released slot is free again at once, with a new epoch; only its holder releases it", function*(stores) {
      const key = ids("provider")
      const t = yield* now
      const a = some(yield* stores.first.acquireSlot(key, 1, "a", ttl, t), "a acquires")
      none(yield* stores.second.acquireSlot(key, 1, "b", ttl, t), "the only slot is taken")
      assert.isFalse(yield* stores.second.releaseSlot({ ...a, holder: "b" }), "another holder cannot release")
      assert.isFalse(yield* stores.second.releaseSlot({ ...a, epoch: a.epoch + 1 }), "another epoch cannot release")
      none(yield* stores.second.acquireSlot(key, 1, "b", ttl, t), "still taken")
      assert.isTrue(yield* stores.second.releaseSlot(a), "the holder releases")
      const b = some(yield* stores.second.acquireSlot(key, 1, "b", ttl, t), "b acquires the released slot")
      assert.strictEqual(b.slot, a.slot)
      assert.isAbove(b.epoch, a.epoch)
      assert.isFalse(yield* stores.first.renewSlot(a, ttl, t), "a's renew after release")
      assert.isFalse(yield* stores.first.releaseSlot(a), "a's stale release")
      assert.isTrue(yield* stores.first.renewSlot(b, ttl, t), "b still holds it")
    })

    test("an expired slot is reusable with a new epoch; the stale holder's renew and release are false", function*(stores) {
      const key = ids("provider")
      const a = some(yield* stores.first.acquireSlot(key, 1, "a", ttl, yield* now), "a acquires")
      yield* TestClock.adjust(ttl - 1)
      none(yield* stores.second.acquireSlot(key, 1, "b", ttl, yield* now), "one millisecond before expiry")
      yield* TestClock.adjust(1)
      const t = yield* now
      const b = some(yield* stores.second.acquireSlot(key, 1, "b", ttl, t), "at expiry")
      assert.strictEqual(b.slot, a.slot)
      assert.isAbove(b.epoch, a.epoch)
      assert.strictEqual(b.expiresAt, t + ttl)
      assert.isFalse(yield* stores.first.renewSlot(a, ttl, t), "the stale holder's renew")
      assert.isFalse(yield* stores.first.releaseSlot(a), "the stale holder's release")
      assert.isTrue(yield* stores.second.renewSlot(b, ttl, t), "the new holder renews")
    })

    test("renewSlot keeps a live slot (the expiry moves); false once expired", function*(stores) {
      const key = ids("provider")
      const a = some(yield* stores.first.acquireSlot(key, 1, "a", ttl, yield* now), "a acquires")
      yield* TestClock.adjust(ttl / 2)
      assert.isTrue(yield* stores.second.renewSlot(a, ttl, yield* now))
      yield* TestClock.adjust(ttl / 2)
      none(yield* stores.second.acquireSlot(key, 1, "b", ttl, yield* now), "at the first expiry the renewed slot is held")
      yield* TestClock.adjust(ttl / 2)
      assert.isFalse(yield* stores.first.renewSlot(a, ttl, yield* now), "renew at exactly the renewed expiry")
      some(yield* stores.second.acquireSlot(key, 1, "b", ttl, yield* now), "free at the renewed expiry")
    })

    test(`of ${racers} racers for expired slots at most max win`, function*(stores) {
      const key = ids("provider")
      for (const h of ["a", "b"]) some(yield* stores.first.acquireSlot(key, 2, h, ttl, yield* now), `${h} acquires`)
      yield* TestClock.adjust(ttl)
      const t = yield* now
      const exits = yield* race(racers, (i) => stores.at(i).acquireSlot(key, 2, `racer${i}`, ttl, t))
      const granted = successes(exits).filter(Option.isSome).map((o) => o.value)
      assert.strictEqual(granted.length, 2)
      assert.strictEqual(new Set(granted.map((s) => s.slot)).size, 2)
    })

    test("addToWindow counts in fixed windows; a limit that would be passed answers None and adds nothing", function*(stores) {
      const key = ids("calls")
      yield* toNextWindow
      const add = (amount: number, limit?: number) =>
        Effect.flatMap(now, (t) => stores.at(Math.round(amount)).addToWindow(key, amount, window, t, limit))
      assert.deepStrictEqual(yield* add(1), Option.some(1))
      assert.deepStrictEqual(yield* add(2), Option.some(3))
      assert.deepStrictEqual(yield* add(3, 5), Option.none(), "3 + 3 would pass 5")
      assert.deepStrictEqual(yield* add(0), Option.some(3), "the refused add added nothing")
      assert.deepStrictEqual(yield* add(2, 5), Option.some(5), "reaching the limit is allowed")
      yield* TestClock.adjust(window - 1)
      assert.deepStrictEqual(yield* add(1), Option.some(6), "the last millisecond is in the same window")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* add(1, 5), Option.some(1), "a new window starts from 0")
      yield* TestClock.adjust(window * 3 + 10)
      assert.deepStrictEqual(yield* add(4, 5), Option.some(4), "after idle windows, from 0 again")
    })

    test(`addToWindow with a limit: of ${racers} concurrent adds only those that fit succeed`, function*(stores) {
      const key = ids("tokens")
      yield* toNextWindow
      const t = yield* now
      const exits = yield* race(racers, (i) => stores.at(i).addToWindow(key, 2, window, t, 9))
      const totals = successes(exits).filter(Option.isSome).map((o) => o.value)
      assert.deepStrictEqual(totals.sort((a, b) => a - b), [2, 4, 6, 8])
      assert.deepStrictEqual(yield* stores.first.addToWindow(key, 0, window, t), Option.some(8))
    })

    test("windows of different keys are separate; clearWindow starts a key from 0", function*(stores) {
      const [a, b] = [ids("calls"), ids("calls")]
      yield* toNextWindow
      const t = yield* now
      assert.deepStrictEqual(yield* stores.first.addToWindow(a, 5, window, t), Option.some(5))
      assert.deepStrictEqual(yield* stores.first.addToWindow(b, 1, window, t), Option.some(1))
      yield* stores.second.clearWindow(a)
      assert.deepStrictEqual(yield* stores.first.addToWindow(a, 1, window, t), Option.some(1), "cleared")
      assert.deepStrictEqual(yield* stores.first.addToWindow(b, 1, window, t), Option.some(2), "another key is kept")
      yield* stores.second.clearWindow(ids("never-used"))
    })

    test("pauseUntil keeps the later time; pausedUntil reads it", function*(stores) {
      const key = ids("provider")
      none(yield* stores.first.pausedUntil(key), "never paused")
      const t = yield* now
      assert.strictEqual(yield* stores.first.pauseUntil(key, t + 5_000), t + 5_000)
      assert.strictEqual(yield* stores.second.pauseUntil(key, t + 3_000), t + 5_000, "an earlier time does not shorten it")
      assert.strictEqual(some(yield* stores.second.pausedUntil(key), "paused"), t + 5_000)
      assert.strictEqual(yield* stores.second.pauseUntil(key, t + 9_000), t + 9_000, "a later time wins")
      assert.strictEqual(some(yield* stores.first.pausedUntil(key), "paused"), t + 9_000)
      none(yield* stores.first.pausedUntil(ids("provider")), "another key")
      const exits = yield* race(racers, (i) => stores.at(i).pauseUntil(key, t + 10_000 + i))
      assert.strictEqual(successes(exits).length, racers)
      assert.strictEqual(some(yield* stores.first.pausedUntil(key), "after racing pauses"), t + 10_000 + racers - 1, "the latest wins")
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*({ first: s }) {
      const key = ids("provider")
      const t = yield* now
      yield* expectInvalid(s.acquireSlot("", 1, "h", ttl, t), "key", "acquireSlot, empty key")
      for (const max of [0, -1, 1.5, Number.NaN]) {
        yield* expectInvalid(s.acquireSlot(key, max, "h", ttl, t), "max", `acquireSlot, max ${max}`)
      }
      yield* expectInvalid(s.acquireSlot(key, 1, "", ttl, t), "holder", "acquireSlot, empty holder")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.acquireSlot(bad, 1, "h", ttl, t), "key", `acquireSlot, key with ${what}`)
        yield* expectInvalid(s.acquireSlot(key, 1, bad, ttl, t), "holder", `acquireSlot, holder with ${what}`)
        yield* expectInvalid(s.addToWindow(bad, 1, window, t), "key", `addToWindow, key with ${what}`)
      }
      for (const bad of [0, -1, Number.NaN]) {
        yield* expectInvalid(s.acquireSlot(key, 1, "h", bad, t), "ttlMillis", `acquireSlot, ttl ${bad}`)
      }
      yield* expectInvalid(s.acquireSlot(key, 1, "h", ttl, Number.NaN), "now", "acquireSlot, now NaN")
      const slot = some(yield* s.acquireSlot(key, 1, "h", ttl, t), "no bad acquire took the only slot")
      const badSlots: Array<[Partial<Record<keyof SlotLease, unknown>>, string]> = [
        [{ key: "" }, "slot.key"],
        [{ slot: -1 }, "slot.slot"],
        [{ holder: "" }, "slot.holder"],
        [{ epoch: 0 }, "slot.epoch"]
      ]
      for (const [over, field] of badSlots) {
        yield* expectInvalid(s.renewSlot({ ...slot, ...over } as SlotLease, ttl, t), field, `renewSlot, ${field}`)
        yield* expectInvalid(s.releaseSlot({ ...slot, ...over } as SlotLease), field, `releaseSlot, ${field}`)
      }
      yield* expectInvalid(s.renewSlot(slot, 0, t), "ttlMillis", "renewSlot, ttl 0")
      yield* expectInvalid(s.renewSlot(slot, ttl, -1), "now", "renewSlot, now -1")
      assert.isTrue(yield* s.renewSlot(slot, ttl, t), "no bad call released the slot")

      const calls = ids("calls")
      yield* expectInvalid(s.addToWindow("", 1, window, t), "key", "addToWindow, empty key")
      yield* expectInvalid(s.addToWindow(calls, -1, window, t), "amount", "addToWindow, amount -1")
      yield* expectInvalid(s.addToWindow(calls, Number.NaN, window, t), "amount", "addToWindow, amount NaN")
      yield* expectInvalid(s.addToWindow(calls, 1, 0, t), "windowMillis", "addToWindow, window 0")
      yield* expectInvalid(s.addToWindow(calls, 1, window, Number.NaN), "now", "addToWindow, now NaN")
      yield* expectInvalid(s.addToWindow(calls, 1, window, t, 0), "limit", "addToWindow, limit 0")
      assert.deepStrictEqual(yield* s.addToWindow(calls, 1, window, t), Option.some(1), "no bad add counted")
      yield* expectInvalid(s.clearWindow(""), "key", "clearWindow, empty key")
      yield* expectInvalid(s.pauseUntil("", t), "key", "pauseUntil, empty key")
      yield* expectInvalid(s.pauseUntil(key, Number.NaN), "until", "pauseUntil, NaN")
      yield* expectInvalid(s.pausedUntil(""), "key", "pausedUntil, empty key")
      none(yield* s.pausedUntil(key), "no bad pauseUntil wrote a pause")
    })
  })
}
