/**
 * Conformance suite for {@link EventStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect } from "effect"
import { type EventInput, EventStore, type EventStoreShape } from "../../stores/EventStore.ts"
import type { Lease } from "../../stores/Lease.ts"
import type { LeaseStore } from "../../stores/LeaseStore.ts"
import { deleteAllInPages, expectInvalid, expectTag, illFormedIds, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineLeasedSuite, freshLease, type WithLeases } from "./SuiteDefinition.ts"

const base = 1_000_000_000_000
const oldEnough = 1_000_000

/**
 * Registers the EventStore conformance tests (call it at the top level of a
 * vitest file). The Layer provides `LeaseStore` too: events are appended
 * under the tree's lease.
 *
 * @category conformance
 * @since 0.1.0
 */
export const eventStoreSuite = (options: SuiteOptions<EventStore | LeaseStore>): void => {
  const { ids, racers, register } = defineLeasedSuite(options, "EventStore", EventStore)
  const ttl = 30_000

  const leased = (stores: WithLeases<EventStoreShape>, tenant: string, holder = "holder-1", at = base) =>
    freshLease(stores, tenant, ids("exec"), holder, ttl, at)

  const eventsOf = (lease: Lease, keys: ReadonlyArray<string>, at = base, instanceId = "i-1"): Array<EventInput> =>
    keys.map((key, i) => ({ key, executionId: lease.rootExecutionId, mode: i % 2 === 0 ? "updates" : "values", data: { key, n: i, text: "é ✓" }, at, instanceId }))

  register((test) => {
    test("appended events read back in order with growing ids on every instance; another tenant or thread sees none", function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const thread = ids("thread")
      const first = yield* stores.first.append(lease, thread, eventsOf(lease, ["a", "b"]), base + 1)
      const second = yield* stores.second.append(lease, thread, eventsOf(lease, ["c"]), base + 2)
      assert.strictEqual(first.length, 2)
      assert.strictEqual(second.length, 1)
      assert.isTrue(first[0]! < first[1]! && first[1]! < second[0]!, "ids grow")
      for (const s of [stores.first, stores.second]) {
        const read = yield* s.read(lease.tenantId, thread, 0, 10)
        assert.deepStrictEqual(read.map((e) => e.id), [...first, ...second])
        assert.deepStrictEqual(read.map((e) => (e.data as { key: string }).key), ["a", "b", "c"])
        assert.deepStrictEqual(read[0], {
          id: first[0]!,
          tenantId: lease.tenantId,
          threadId: thread,
          executionId: lease.rootExecutionId,
          mode: "updates",
          data: { key: "a", n: 0, text: "é ✓" },
          at: base,
          instanceId: "i-1"
        })
      }
      assert.deepStrictEqual(yield* stores.first.read(ids("tenant"), thread, 0, 10), [], "another tenant")
      assert.deepStrictEqual(yield* stores.first.read(lease.tenantId, ids("thread"), 0, 10), [], "another thread")
    })

    test("read pages after an id, at most `limit`, with no gap and no repeat", function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const thread = ids("thread")
      const keys = Array.from({ length: 7 }, (_, i) => `k${i}`)
      for (const k of keys) yield* stores.at(keys.indexOf(k)).append(lease, thread, eventsOf(lease, [k]), base + 1)
      const seen: Array<string> = []
      let after = 0
      for (let n = 0; n < 10; n++) {
        const page = yield* stores.at(n).read(lease.tenantId, thread, after, 3)
        assert.isTrue(page.length <= 3)
        seen.push(...page.map((e) => (e.data as { key: string }).key))
        if (page.length === 0) break
        after = page[page.length - 1]!.id
      }
      assert.deepStrictEqual(seen, keys)
    })

    test("an event whose key the thread holds is not appended again (a step run again after a takeover)", function*(stores) {
      const tenant = ids("tenant")
      const old = yield* leased(stores.first, tenant, "old", base)
      const thread = ids("thread")
      yield* stores.first.append(old, thread, eventsOf(old, ["s1", "s2"]), base + 1)
      const next = some(yield* stores.second.leases.acquire(tenant, old.rootExecutionId, "new", ttl, base + ttl + 1), "takeover")
      const again = yield* stores.second.append(next, thread, eventsOf(next, ["s2", "s3"], base + ttl + 2, "i-2"), base + ttl + 2)
      assert.strictEqual(again.length, 1, "only s3 is new")
      assert.deepStrictEqual(yield* stores.second.append(next, thread, eventsOf(next, ["s1"]), base + ttl + 3), [], "all held: none appended, no error")
      const read = yield* stores.first.read(tenant, thread, 0, 10)
      assert.deepStrictEqual(read.map((e) => (e.data as { key: string }).key), ["s1", "s2", "s3"])
      assert.deepStrictEqual(read.map((e) => e.instanceId), ["i-1", "i-1", "i-2"])
    })

    test("a holder whose lease passed to another (or expired, or was released) is refused with LeaseLostError and appends nothing", function*(stores) {
      const tenant = ids("tenant")
      const thread = ids("thread")
      const old = yield* leased(stores.first, tenant, "old-holder")
      const expired = base + ttl
      yield* expectTag(stores.first.append(old, thread, eventsOf(old, ["x"]), expired), "LeaseLostError", "append at the lease's expiry")
      const next = some(yield* stores.second.leases.acquire(tenant, old.rootExecutionId, "new-holder", ttl, expired + 1), "takeover")
      yield* expectTag(stores.first.append(old, thread, eventsOf(old, ["y"]), expired + 2), "LeaseLostError", "stale holder")
      assert.deepStrictEqual(yield* stores.first.read(tenant, thread, 0, 10), [], "nothing appended")
      assert.strictEqual((yield* stores.second.append(next, thread, eventsOf(next, ["z"]), expired + 3)).length, 1)
      const released = yield* leased(stores.first, tenant)
      assert.isTrue(yield* stores.first.leases.release(released))
      yield* expectTag(stores.second.append(released, ids("thread"), eventsOf(released, ["w"]), base + 1), "LeaseLostError", "released lease")
    })

    test(`${racers} appends of one holder at once: every event once, ids distinct and growing in each append`, function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const thread = ids("thread")
      const exits = yield* race(racers, (i) => stores.at(i).append(lease, thread, eventsOf(lease, [`r${i}a`, `r${i}b`]), base + 1).pipe(
        // Two appends numbering one thread at once may collide on the id: a transient error the writer retries.
        Effect.retry({ times: 50, while: (e) => e._tag === "StoreError" })
      ))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers, "every append lands")
      const read = yield* stores.second.read(lease.tenantId, thread, 0, 1000)
      assert.strictEqual(read.length, racers * 2)
      assert.strictEqual(new Set(read.map((e) => e.id)).size, racers * 2)
      for (let i = 0; i < racers; i++) {
        const a = read.findIndex((e) => (e.data as { key: string }).key === `r${i}a`)
        const b = read.findIndex((e) => (e.data as { key: string }).key === `r${i}b`)
        assert.isTrue(a >= 0 && a < b, "an append's events keep their order")
      }
    })

    test("deleteBefore deletes at most `limit` per call, only events before the cutoff, never a thread's newest: ids never start again", function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"), "h", 0)
      const thread = ids("thread")
      yield* stores.first.append(lease, thread, eventsOf(lease, ["o1", "o2", "o3"], oldEnough - 10), 1)
      const newest = yield* stores.first.append(lease, thread, eventsOf(lease, ["o4"], oldEnough - 5), 1)
      const young = ids("thread")
      yield* stores.first.append(lease, young, eventsOf(lease, ["y1", "y2"], oldEnough + 1), 1)
      assert.isTrue((yield* deleteAllInPages((limit) => stores.second.deleteBefore(oldEnough, limit), 2)) >= 3)
      const left = yield* stores.first.read(lease.tenantId, thread, 0, 10)
      assert.deepStrictEqual(left.map((e) => e.id), newest, "the newest old event stays")
      assert.strictEqual((yield* stores.first.read(lease.tenantId, young, 0, 10)).length, 2, "young events stay")
      const later = yield* stores.first.append(lease, thread, eventsOf(lease, ["o5"], oldEnough + 2), 2)
      assert.isTrue(later[0]! > newest[0]!, "ids go on growing")
    })

    test("bad input is refused with InvalidInputError naming the field", function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const e = stores.first
      const thread = ids("thread")
      yield* expectInvalid(e.append(lease, thread, [], base), "events", "no events")
      yield* expectInvalid(e.append(lease, thread, eventsOf(lease, ["a", "a"]), base), "events", "a key twice")
      yield* expectInvalid(e.append(lease, thread, [{ ...eventsOf(lease, ["a"])[0]!, mode: "debug" as never }], base), "events[0].mode", "unknown mode")
      yield* expectInvalid(e.append(lease, thread, [{ ...eventsOf(lease, ["a"])[0]!, data: 10n }], base), "events[0].data", "not JSON")
      yield* expectInvalid(e.append(lease, "", eventsOf(lease, ["a"]), base), "threadId", "no thread")
      yield* expectInvalid(e.read(lease.tenantId, thread, -1, 1), "after", "negative after")
      yield* expectInvalid(e.read(lease.tenantId, thread, 0.5, 1), "after", "fractional after")
      yield* expectInvalid(e.read(lease.tenantId, thread, 0, 0), "limit", "limit 0")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(e.read(bad, thread, 0, 1), "tenantId", `tenant with ${what}`)
        yield* expectInvalid(e.read(lease.tenantId, bad, 0, 1), "threadId", `thread with ${what}`)
      }
      yield* expectInvalid(e.deleteBefore(Number.NaN, 1), "cutoff", "NaN cutoff")
      assert.deepStrictEqual(yield* e.read(lease.tenantId, thread, 0, 10), [], "nothing appended by refused calls")
    })
  })
}
