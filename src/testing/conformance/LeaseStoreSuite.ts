/**
 * Conformance suite for {@link LeaseStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import type { Lease } from "../../stores/Lease.ts"
import { LeaseStore, maxGetMany } from "../../stores/LeaseStore.ts"
import { expectInvalid, illFormedIds, none, now, race, some, successes, type SuiteOptions, unicodeTwins } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

const ttl = 30_000

/**
 * Registers the LeaseStore conformance tests (call it at the top level of a
 * vitest file).
 *
 * @category conformance
 * @since 0.1.0
 */
export const leaseStoreSuite = (options: SuiteOptions<LeaseStore>): void => {
  const { Stores, ids, racers, register } = defineServiceSuite(options, "LeaseStore", LeaseStore)
  const tree = () => ({ tenant: ids("tenant"), root: ids("root") })
  /** A fresh tree's lease, acquired now on the first instance by a new holder `a` (`b`: another holder). */
  const held = Effect.gen(function*() {
    const stores = yield* Stores
    const { root, tenant } = tree()
    const [a, b] = [ids("holder"), ids("holder")]
    const lease = some(yield* stores.first.acquire(tenant, root, a, ttl, yield* now), "a acquires")
    return { stores, root, tenant, a, b, lease }
  })

  register((test, it) => {
    test(`of ${racers} racers for a free lease exactly one wins, with epoch 1`, function*(stores) {
      const { root, tenant } = tree()
      const t = yield* now
      const holders = Array.from({ length: racers }, (_, i) => ids(`holder${i}x`))
      const exits = yield* race(racers, (i) => stores.at(i).acquire(tenant, root, holders[i]!, ttl, t))
      const won = successes(exits).filter(Option.isSome).map((o) => o.value)
      assert.strictEqual(successes(exits).length, racers, "every acquire answers (Some or None)")
      assert.strictEqual(won.length, 1, "exactly one racer holds the lease")
      const lease = won[0]!
      assert.strictEqual(lease.epoch, 1)
      assert.strictEqual(lease.expiresAt, t + ttl)
      assert.strictEqual(lease.tenantId, tenant)
      assert.strictEqual(lease.rootExecutionId, root)
      assert.include(holders, lease.holder)
      for (const s of [stores.first, stores.second]) {
        assert.deepStrictEqual(some(yield* s.get(tenant, root), "get after acquire"), lease)
      }
    })

    test(`of ${racers} racers for an expired lease exactly one wins, with the next epoch`, function*(stores) {
      const { root, tenant } = tree()
      const first = some(yield* stores.first.acquire(tenant, root, ids("holder"), ttl, yield* now), "first acquire")
      yield* TestClock.adjust(ttl)
      const t = yield* now
      const exits = yield* race(racers, (i) => stores.at(i).acquire(tenant, root, ids(`holder${i}x`), ttl, t))
      const won = successes(exits).filter(Option.isSome).map((o) => o.value)
      assert.strictEqual(won.length, 1, "exactly one racer takes the expired lease")
      assert.strictEqual(won[0]!.epoch, first.epoch + 1)
      assert.strictEqual(won[0]!.expiresAt, t + ttl)
    })

    it.effect("a lease another holder keeps alive cannot be acquired", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, b, lease } = yield* held
        yield* TestClock.adjust(ttl - 1)
        none(yield* stores.second.acquire(tenant, root, b, ttl, yield* now), "b acquires a live lease")
        assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "get"), lease, "the failed acquire changed nothing")
      }))

    it.effect("the holder re-acquiring its live lease extends it and keeps the epoch", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, a, lease } = yield* held
        yield* TestClock.adjust(10_000)
        const t = yield* now
        const again = some(yield* stores.second.acquire(tenant, root, a, ttl, t), "re-acquire")
        assert.strictEqual(again.epoch, lease.epoch)
        assert.strictEqual(again.holder, a)
        assert.strictEqual(again.expiresAt, t + ttl)
        assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "get"), again)
      }))

    it.effect("a lease is free at exactly expiresAt: a new holder gets epoch + 1, the old one's renew is false", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, b, lease } = yield* held
        yield* TestClock.adjust(ttl - 1)
        none(yield* stores.second.acquire(tenant, root, b, ttl, yield* now), "one millisecond before expiresAt")
        yield* TestClock.adjust(1)
        const t = yield* now
        assert.strictEqual(t, lease.expiresAt)
        const taken = some(yield* stores.second.acquire(tenant, root, b, ttl, t), "at expiresAt")
        assert.strictEqual(taken.holder, b)
        assert.strictEqual(taken.epoch, lease.epoch + 1)
        assert.isFalse(yield* stores.first.renew(lease, ttl, t), "the old holder's renew after takeover")
        assert.isFalse(yield* stores.first.release(lease), "the old holder's release after takeover")
        assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "get"), taken, "the stale calls changed nothing")
      }))

    it.effect("the same holder re-acquiring an expired lease is a new holding: epoch + 1", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, a, lease } = yield* held
        yield* TestClock.adjust(ttl)
        const again = some(yield* stores.first.acquire(tenant, root, a, ttl, yield* now), "re-acquire after expiry")
        assert.strictEqual(again.epoch, lease.epoch + 1)
        assert.isFalse(yield* stores.first.renew(lease, ttl, yield* now), "the previous holding's renew")
      }))

    it.effect("renew: true for the live holder (moves expiresAt), false after expiry or with another epoch or holder", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, lease } = yield* held
        yield* TestClock.adjust(10_000)
        const t = yield* now
        assert.isTrue(yield* stores.second.renew(lease, ttl, t), "holder renews")
        assert.strictEqual(some(yield* stores.first.get(tenant, root), "get").expiresAt, t + ttl)
        assert.isFalse(yield* stores.first.renew({ ...lease, epoch: lease.epoch + 1 }, ttl, t), "another epoch")
        assert.isFalse(yield* stores.first.renew({ ...lease, holder: ids("holder") }, ttl, t), "another holder")
        // the renewal counts: the old expiresAt is no longer the end
        yield* TestClock.adjust(ttl - 1)
        none(yield* stores.second.acquire(tenant, root, ids("holder"), ttl, yield* now), "acquire before the renewed expiry")
        yield* TestClock.adjust(1)
        assert.isFalse(yield* stores.first.renew(lease, ttl, yield* now), "renew at exactly the renewed expiresAt")
        assert.strictEqual(some(yield* stores.first.get(tenant, root), "get").expiresAt, t + ttl, "a refused renew moves nothing")
      }))

    it.effect("renew never moves a holder's expiry backward (a shorter ttl keeps the later expiry)", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, lease } = yield* held
        const t = yield* now
        assert.isTrue(yield* stores.second.renew(lease, ttl, t), "renew with the full ttl")
        assert.isTrue(yield* stores.first.renew(lease, Math.floor(ttl / 2), t + 1), "renew with half the ttl")
        assert.strictEqual(some(yield* stores.first.get(tenant, root), "get").expiresAt, t + ttl, "the later expiry is kept")
      }))

    it.effect("release frees the lease only for the same (holder, epoch); the next holder gets epoch + 1", () =>
      Effect.gen(function*() {
        const { stores, root, tenant, b, lease } = yield* held
        assert.isFalse(yield* stores.second.release({ ...lease, holder: b }), "another holder cannot release")
        assert.isFalse(yield* stores.second.release({ ...lease, epoch: lease.epoch + 1 }), "another epoch cannot release")
        assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "still held"), lease)
        assert.isTrue(yield* stores.second.release(lease), "the holder releases")
        none(yield* stores.first.get(tenant, root), "get after release")
        assert.isFalse(yield* stores.first.renew(lease, ttl, yield* now), "renew after release")
        // free at once, long before the old expiresAt; epochs never go back
        const next = some(yield* stores.first.acquire(tenant, root, b, ttl, yield* now), "acquire after release")
        assert.strictEqual(next.epoch, lease.epoch + 1)
        assert.isTrue(yield* stores.first.release(next))
        const same = some(yield* stores.second.acquire(tenant, root, b, ttl, yield* now), "same holder after its release")
        assert.strictEqual(same.epoch, next.epoch + 1, "re-acquiring after a release is a new holding too")
        assert.isFalse(yield* stores.first.release(next), "a stale (holder, epoch) cannot release the new holding")
        assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "get"), same)
      }))

    test("epochs only grow over a history of takeovers, releases and expiries", function*(stores) {
      const { root, tenant } = tree()
      const epochs: Array<number> = []
      let lease: Lease = some(yield* stores.first.acquire(tenant, root, ids("holder"), ttl, yield* now), "start")
      epochs.push(lease.epoch)
      for (let round = 0; round < 6; round++) {
        const s = stores.at(round)
        if (round % 2 === 0) {
          assert.isTrue(yield* s.release(lease), `round ${round}: release`)
        } else {
          yield* TestClock.adjust(ttl)
        }
        lease = some(yield* s.acquire(tenant, root, ids("holder"), ttl, yield* now), `round ${round}: acquire`)
        epochs.push(lease.epoch)
      }
      assert.deepStrictEqual(epochs, [1, 2, 3, 4, 5, 6, 7])
    })

    test("get: None for a tree never taken; a lease past expiresAt is still reported as stored", function*(stores) {
      const { root, tenant } = tree()
      none(yield* stores.first.get(tenant, root), "never taken")
      const lease = some(yield* stores.first.acquire(tenant, root, ids("holder"), ttl, yield* now), "acquire")
      yield* TestClock.adjust(ttl * 2)
      assert.deepStrictEqual(some(yield* stores.second.get(tenant, root), "expired but stored"), lease)
    })

    test("getMany: the held leases among the roots, as get answers them (expired ones too), other tenants' apart; none asked, none read", function*(stores) {
      const tenant = ids("tenant")
      const other = ids("tenant")
      const roots = Array.from({ length: 5 }, () => ids("root"))
      const t = yield* now
      const held = [
        some(yield* stores.first.acquire(tenant, roots[0]!, ids("holder"), ttl, t), "acquire 0"),
        some(yield* stores.first.acquire(tenant, roots[1]!, ids("holder"), 1_000, t), "acquire 1 (short)"),
        some(yield* stores.first.acquire(tenant, roots[2]!, ids("holder"), ttl, t), "acquire 2")
      ]
      assert.isTrue(yield* stores.first.release(held[2]!), "2 released")
      yield* stores.first.acquire(other, roots[3]!, ids("holder"), ttl, t)
      yield* TestClock.adjust(2_000)
      const asked = roots.map((rootExecutionId) => ({ tenantId: tenant, rootExecutionId }))
      const found = yield* stores.second.getMany(asked)
      const byRoot = (ls: ReadonlyArray<Lease>) => [...ls].sort((a, b) => (a.rootExecutionId < b.rootExecutionId ? -1 : 1))
      assert.deepStrictEqual(byRoot(found), byRoot([held[0]!, held[1]!]), "0 live, 1 expired but stored; 2 released, 3 another tenant's, 4 never taken")
      for (const r of asked) {
        const one = yield* stores.second.get(r.tenantId, r.rootExecutionId)
        assert.deepStrictEqual(Option.getOrUndefined(one), found.find((l) => l.rootExecutionId === r.rootExecutionId), "as get answers")
      }
      assert.deepStrictEqual(yield* stores.second.getMany([]), [])
      yield* expectInvalid(stores.first.getMany([{ tenantId: "", rootExecutionId: roots[0]! }]), "roots[].tenantId", "getMany, empty tenant")
      yield* expectInvalid(
        stores.first.getMany(Array.from({ length: maxGetMany + 1 }, () => asked[0]!)),
        "roots",
        "getMany, more than maxGetMany roots"
      )
    })

    test("tenants are separate: the same root under another tenant is another lease", function*(stores) {
      const { root, tenant } = tree()
      const other = ids("tenant")
      const lease = some(yield* stores.first.acquire(tenant, root, ids("holder"), ttl, yield* now), "acquire")
      none(yield* stores.second.get(other, root), "another tenant sees no lease")
      assert.isFalse(yield* stores.second.renew({ ...lease, tenantId: other }, ttl, yield* now), "renew under another tenant")
      assert.isFalse(yield* stores.second.release({ ...lease, tenantId: other }), "release under another tenant")
      const theirs = some(yield* stores.second.acquire(other, root, ids("holder"), ttl, yield* now), "another tenant acquires")
      assert.strictEqual(theirs.epoch, 1)
      assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "get"), lease, "the first tenant's lease is untouched")
    })

    test("tenants and trees that differ only by U+FFFD or a surrogate pair are kept apart, each answered as given", function*(stores) {
      const t = yield* now
      const tenants = unicodeTwins(ids("tenant"))
      const roots = unicodeTwins(ids("root"))
      for (const tenant of tenants) {
        for (const root of roots) {
          const lease = some(yield* stores.first.acquire(tenant, root, `${tenant}/${root}`, ttl, t), "a free tree")
          assert.strictEqual(lease.epoch, 1, "a twin is a tree of its own")
        }
      }
      for (const tenant of tenants) {
        for (const root of roots) {
          const lease = some(yield* stores.second.get(tenant, root), "the twin's lease")
          assert.deepStrictEqual([lease.tenantId, lease.rootExecutionId, lease.holder], [tenant, root, `${tenant}/${root}`])
        }
      }
    })

    test("takeOver (when the store has it): a live lease passes at once with epoch + 1, only from the holder and epoch named; of racers one wins; the old lease is refused after", function*(stores) {
      if (stores.first.takeOver === undefined) {
        // Optional: a store without it keeps lease expiry, and says nothing it does not do.
        assert.strictEqual(stores.second.takeOver, undefined, "both handles of one store agree")
        return
      }
      const { root, tenant } = tree()
      const [a, b, c] = [ids("holder"), ids("holder"), ids("holder")]
      const t = yield* now
      const old = some(yield* stores.first.acquire(tenant, root, a, ttl, t), "a acquires")
      none(yield* stores.second.takeOver!({ ...old, epoch: old.epoch + 1 }, b, ttl, t), "takeOver naming another epoch")
      none(yield* stores.second.takeOver!({ ...old, holder: c }, b, ttl, t), "takeOver naming another holder")
      assert.deepStrictEqual(some(yield* stores.first.get(tenant, root), "get"), old, "refused takeOvers changed nothing")
      yield* TestClock.adjust(1)
      const t2 = yield* now
      const exits = yield* race(racers, (i) => stores.at(i).takeOver!(old, ids(`taker${i}x`), ttl, t2))
      const won = successes(exits).filter(Option.isSome).map((o) => o.value)
      assert.strictEqual(successes(exits).length, racers, "every takeOver answers")
      assert.strictEqual(won.length, 1, "exactly one racer takes the lease over")
      const taken = won[0]!
      assert.strictEqual(taken.epoch, old.epoch + 1)
      assert.strictEqual(taken.expiresAt, t2 + ttl, "the lease before expiry, pushed to now + ttl")
      assert.deepStrictEqual(some(yield* stores.second.get(tenant, root), "get after takeOver"), taken)
      assert.isFalse(yield* stores.first.renew(old, ttl, t2), "the old holder's renewal is refused")
      assert.isFalse(yield* stores.first.release(old), "the old holder's release is refused")
      none(yield* stores.first.acquire(tenant, root, a, ttl, t2), "the old holder cannot take it back while live")
      assert.isTrue(yield* stores.second.release(taken), "the new holder releases")
      none(yield* stores.first.takeOver!(taken, c, ttl, t2), "a released lease is not taken over")
      yield* expectInvalid(stores.first.takeOver!({ ...taken, epoch: 0 }, c, ttl, t2), "lease.epoch", "takeOver, epoch 0")
      yield* expectInvalid(stores.first.takeOver!(taken, "", ttl, t2), "holder", "takeOver, empty holder")
      yield* expectInvalid(stores.first.takeOver!(taken, c, 0, t2), "ttlMillis", "takeOver, ttl 0")
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*({ first: s }) {
      const { root, tenant } = tree()
      const h = ids("holder")
      const t = yield* now
      yield* expectInvalid(s.acquire("", root, h, ttl, t), "tenantId", "acquire, empty tenant")
      yield* expectInvalid(s.acquire(tenant, "", h, ttl, t), "rootExecutionId", "acquire, empty root")
      yield* expectInvalid(s.acquire(tenant, root, "", ttl, t), "holder", "acquire, empty holder")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.acquire(bad, root, h, ttl, t), "tenantId", `acquire, tenant with ${what}`)
        yield* expectInvalid(s.acquire(tenant, bad, h, ttl, t), "rootExecutionId", `acquire, root with ${what}`)
        yield* expectInvalid(s.acquire(tenant, root, bad, ttl, t), "holder", `acquire, holder with ${what}`)
        yield* expectInvalid(s.get(bad, root), "tenantId", `get, tenant with ${what}`)
      }
      for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        yield* expectInvalid(s.acquire(tenant, root, h, bad, t), "ttlMillis", `acquire, ttl ${bad}`)
      }
      yield* expectInvalid(s.acquire(tenant, root, h, ttl, Number.NaN), "now", "acquire, now NaN")
      yield* expectInvalid(s.acquire(tenant, root, h, ttl, -1), "now", "acquire, now -1")
      none(yield* s.get(tenant, root), "no bad acquire wrote a lease")

      const lease = some(yield* s.acquire(tenant, root, h, ttl, t), "a good acquire")
      for (const bad of [0, -5, Number.NaN]) {
        yield* expectInvalid(s.renew(lease, bad, t), "ttlMillis", `renew, ttl ${bad}`)
      }
      yield* expectInvalid(s.renew(lease, ttl, Number.NaN), "now", "renew, now NaN")
      yield* expectInvalid(s.renew({ ...lease, epoch: 0 }, ttl, t), "lease.epoch", "renew, epoch 0")
      yield* expectInvalid(s.renew({ ...lease, epoch: 1.5 }, ttl, t), "lease.epoch", "renew, epoch 1.5")
      yield* expectInvalid(s.renew({ ...lease, holder: "" }, ttl, t), "lease.holder", "renew, empty holder")
      yield* expectInvalid(s.release({ ...lease, tenantId: "" }), "lease.tenantId", "release, empty tenant")
      yield* expectInvalid(s.release({ ...lease, rootExecutionId: "" }), "lease.rootExecutionId", "release, empty root")
      yield* expectInvalid(s.get("", root), "tenantId", "get, empty tenant")
      yield* expectInvalid(s.get(tenant, ""), "rootExecutionId", "get, empty root")
      assert.deepStrictEqual(some(yield* s.get(tenant, root), "get"), lease, "no bad renew or release changed the lease")
    })
  })
}
