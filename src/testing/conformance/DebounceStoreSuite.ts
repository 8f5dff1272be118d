/**
 * Conformance suite for {@link DebounceStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Option } from "effect"
import { type DebounceOffer, DebounceStore } from "../../stores/DebounceStore.ts"
import { expectInvalid, illFormedIds, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

/** Far in the future: windows of the other tests are never due in the `due` test (which works at small times). */
const later = 9_000_000_000_000
const base = 1_000_000_000_000

/**
 * Registers the DebounceStore conformance tests (call it at the top level of
 * a vitest file).
 *
 * @category conformance
 * @since 0.1.0
 */
export const debounceStoreSuite = (options: SuiteOptions<DebounceStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "DebounceStore", DebounceStore)
  const offerOf = (over: Partial<DebounceOffer> = {}): DebounceOffer => ({
    tenantId: ids("tenant"),
    key: ids("key"),
    executionId: ids("exec"),
    threadId: ids("thread"),
    definition: { workflow: "sync" },
    input: { n: 1 },
    fireAt: later,
    now: base,
    ...over
  })

  register((test) => {
    test("the first offer opens a window; later offers of the key replace its input and fireAt, keeping its ids; another tenant's key is another window", function*(stores) {
      const first = offerOf()
      const opened = yield* stores.first.offer(first)
      assert.isTrue(opened.opened)
      assert.deepStrictEqual(opened.window, {
        tenantId: first.tenantId,
        key: first.key,
        executionId: first.executionId,
        threadId: first.threadId,
        definition: first.definition,
        input: { n: 1 },
        fireAt: later,
        open: true,
        version: 1,
        createdAt: base,
        updatedAt: base
      })
      const next = yield* stores.second.offer({ ...first, executionId: ids("exec"), threadId: ids("thread"), input: { n: 2 }, fireAt: later + 5, now: base + 5 })
      assert.isFalse(next.opened)
      assert.deepStrictEqual(next.window, { ...opened.window, input: { n: 2 }, fireAt: later + 5, version: 2, updatedAt: base + 5 })
      assert.deepStrictEqual(some(yield* stores.first.get(first.tenantId, first.executionId), "get"), next.window)
      const other = yield* stores.first.offer({ ...first, tenantId: ids("tenant"), executionId: ids("exec") })
      assert.isTrue(other.opened, "per tenant")
      assert.isTrue(Option.isNone(yield* stores.second.get(ids("tenant"), first.executionId)))
    })

    test("an offer with maxWaitMillis moves an open window no later than its opening plus that wait; one without, to its own fireAt", function*(stores) {
      const first = offerOf({ fireAt: base + 60, maxWaitMillis: 100 })
      const opened = yield* stores.first.offer(first)
      assert.strictEqual(opened.window.fireAt, base + 60, "a new window fires at the offer's fireAt")
      const capped = yield* stores.second.offer({ ...first, executionId: ids("exec"), input: { n: 2 }, fireAt: base + 110, now: base + 50 })
      assert.strictEqual(capped.window.fireAt, base + 100, "its opening (createdAt) plus maxWaitMillis, not the offer's later fireAt")
      const before = yield* stores.first.offer({ ...first, executionId: ids("exec"), input: { n: 3 }, fireAt: base + 90, now: base + 55 })
      assert.strictEqual(before.window.fireAt, base + 90, "an earlier fireAt than the cap stands")
      const { maxWaitMillis: _, ...uncapped } = first
      const free = yield* stores.second.offer({ ...uncapped, executionId: ids("exec"), input: { n: 4 }, fireAt: base + 140, now: base + 80 })
      assert.strictEqual(free.window.fireAt, base + 140, "without maxWaitMillis the offer's fireAt")
      assert.deepStrictEqual([free.window.createdAt, free.window.version, free.window.input], [base, 4, { n: 4 }])
    })

    test("an offer whose executionId names a window already kept (a closed one of its key) is refused naming executionId, and the window stays", function*(stores) {
      const first = offerOf()
      yield* stores.first.offer(first)
      const closed = some(yield* stores.first.close(first.tenantId, first.executionId, 1, base + 1), "close")
      yield* expectInvalid(stores.second.offer({ ...first, input: { n: 2 }, now: base + 2 }), "executionId", "the id of a closed window")
      assert.deepStrictEqual(some(yield* stores.first.get(first.tenantId, first.executionId), "get"), closed, "the closed window is as it was")
      const next = yield* stores.second.offer({ ...first, executionId: ids("exec"), input: { n: 3 }, now: base + 3 })
      assert.isTrue(next.opened, "a new id opens the key's next window")
    })

    test(`of ${racers} racing offers of one key exactly one opens; every offer answers that window`, function*(stores) {
      const shared = offerOf()
      const exits = yield* race(racers, (i) => stores.at(i).offer({ ...shared, executionId: `${shared.executionId}-${i}`, input: { n: i } }))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      assert.strictEqual(results.filter((r) => r.opened).length, 1)
      assert.strictEqual(new Set(results.map((r) => r.window.executionId)).size, 1)
      const kept = some(yield* stores.first.get(shared.tenantId, results[0]!.window.executionId), "get")
      assert.strictEqual(kept.version, racers, "each offer moved it once")
    })

    test("close is a compare-and-set on version: a later offer wins over it; a closed window takes no offer, the next offer opens a new one", function*(stores) {
      const o = offerOf()
      yield* stores.first.offer(o)
      yield* stores.second.offer({ ...o, executionId: ids("exec"), input: { n: 2 } })
      assert.isTrue(Option.isNone(yield* stores.first.close(o.tenantId, o.executionId, 1, base + 1)), "stale version")
      const closed = some(yield* stores.second.close(o.tenantId, o.executionId, 2, base + 2), "close")
      assert.deepStrictEqual([closed.open, closed.version, closed.input, closed.updatedAt], [false, 3, { n: 2 }, base + 2])
      assert.isTrue(Option.isNone(yield* stores.first.close(o.tenantId, o.executionId, 3, base + 3)), "closed already")
      const fresh = yield* stores.first.offer({ ...o, executionId: ids("exec"), input: { n: 3 } })
      assert.isTrue(fresh.opened, "a new window")
      assert.notStrictEqual(fresh.window.executionId, o.executionId)
      assert.deepStrictEqual(some(yield* stores.second.get(o.tenantId, o.executionId), "the closed one stays").input, { n: 2 })
      assert.isTrue(yield* stores.first.delete(o.tenantId, o.executionId))
      assert.isFalse(yield* stores.first.delete(o.tenantId, o.executionId), "gone already")
    })

    test("due answers the open windows due, of every tenant, earliest first, then the closed ones; nextDue the earliest open one", function*(stores) {
      const a = offerOf({ fireAt: 1_000 })
      const b = offerOf({ fireAt: 500 })
      const notYet = offerOf({ fireAt: 2_500 })
      const c = offerOf({ fireAt: 1_500 })
      for (const o of [a, b, notYet, c]) yield* stores.first.offer(o)
      yield* stores.first.close(c.tenantId, c.executionId, 1, base)
      const mine = new Set([a, b, notYet, c].map((o) => o.executionId))
      const due = (yield* stores.second.due(2_000, 1_000)).filter((w) => mine.has(w.executionId))
      assert.deepStrictEqual(due.map((w) => w.executionId), [b, a, c].map((o) => o.executionId))
      assert.strictEqual((yield* stores.second.due(2_000, 1)).length, 1, "at most limit")
      assert.isAtMost(Option.getOrThrow(yield* stores.first.nextDue), 500)
      for (const o of [a, b, notYet, c]) yield* stores.first.delete(o.tenantId, o.executionId)
      assert.isTrue((yield* stores.second.due(later, 1_000)).every((w) => !mine.has(w.executionId)), "deleted windows are never due")
    })

    test("bad input is refused with InvalidInputError naming the field", function*({ first: s }) {
      yield* expectInvalid(s.offer(offerOf({ key: "" })), "key", "empty key")
      yield* expectInvalid(s.offer(offerOf({ input: 10n })), "input", "not JSON")
      yield* expectInvalid(s.offer(offerOf({ fireAt: Number.NaN })), "fireAt", "NaN")
      yield* expectInvalid(s.offer(offerOf({ maxWaitMillis: 0 })), "maxWaitMillis", "no wait at all")
      yield* expectInvalid(s.offer(offerOf({ maxWaitMillis: Number.NaN })), "maxWaitMillis", "NaN")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.offer(offerOf({ tenantId: bad })), "tenantId", `tenant with ${what}`)
        yield* expectInvalid(s.get("t", bad), "executionId", `get, id with ${what}`)
      }
      yield* expectInvalid(s.close("t", "e", 0, base), "expected", "version 0")
      yield* expectInvalid(s.due(base, 0), "limit", "limit 0")
      yield* expectInvalid(s.delete("", "e"), "tenantId", "empty tenant")
    })
  })
}
