/**
 * Conformance suite for {@link LedgerStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import * as LedgerStore from "../../stores/LedgerStore.ts"
import { expectInvalid, illFormedIds, race, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

/**
 * Registers the LedgerStore conformance tests (call it at the top level of a
 * vitest file).
 *
 * @category conformance
 * @since 0.1.0
 */
export const ledgerStoreSuite = (options: SuiteOptions<LedgerStore.LedgerStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "LedgerStore", LedgerStore.LedgerStore)
  const counter = (over: Partial<LedgerStore.LedgerKey> = {}): LedgerStore.LedgerKey => ({
    tenantId: ids("tenant"),
    scope: "execution",
    scopeId: ids("exec"),
    day: "2026-03-01",
    ...over
  })

  register((test) => {
    test("add without a limit accumulates; get answers the total (0 for a counter never added to)", function*(stores) {
      const key = counter()
      assert.strictEqual(yield* stores.first.get(key), 0)
      assert.deepStrictEqual(yield* stores.first.add(key, 5), { _tag: "Added", total: 5 })
      assert.deepStrictEqual(yield* stores.second.add(key, 2.5), { _tag: "Added", total: 7.5 })
      assert.deepStrictEqual(yield* stores.first.add(key, 0), { _tag: "Added", total: 7.5 })
      assert.strictEqual(yield* stores.second.get(key), 7.5)
    })

    test("add with a limit: reaching the limit is allowed, passing it answers WouldExceed and leaves the total", function*(stores) {
      const key = counter()
      assert.deepStrictEqual(yield* stores.first.add(key, 5, 10), { _tag: "Added", total: 5 })
      assert.deepStrictEqual(yield* stores.second.add(key, 6, 10), { _tag: "WouldExceed", total: 5, limit: 10 })
      assert.strictEqual(yield* stores.first.get(key), 5, "WouldExceed added nothing")
      assert.deepStrictEqual(yield* stores.second.add(key, 5, 10), { _tag: "Added", total: 10 }, "exactly the limit")
      assert.deepStrictEqual(yield* stores.first.add(key, 1, 10), { _tag: "WouldExceed", total: 10, limit: 10 })
      assert.deepStrictEqual(yield* stores.first.add(key, 0, 10), { _tag: "Added", total: 10 })
      // a first add that alone passes the limit
      const fresh = counter()
      assert.deepStrictEqual(yield* stores.first.add(fresh, 11, 10), { _tag: "WouldExceed", total: 0, limit: 10 })
      assert.strictEqual(yield* stores.first.get(fresh), 0)
    })

    test(`${racers} concurrent adds never pass the limit, and the total is the sum of the adds that succeeded`, function*(stores) {
      const key = counter()
      // room for half the racers' adds of 3, and 2 more: the next add would pass it
      const fit = Math.floor(racers / 2)
      const limit = 3 * fit + 2
      const exits = yield* race(racers, (i) => stores.at(i).add(key, 3, limit))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      const added = results.filter((r) => r._tag === "Added")
      assert.strictEqual(added.length, fit, `${fit} adds of 3 fit under ${limit}, one more would pass it`)
      for (const r of results) {
        assert.isAtMost(r.total, limit)
        if (r._tag === "WouldExceed") assert.strictEqual(r.limit, limit)
      }
      assert.deepStrictEqual(
        added.map((r) => r.total).sort((a, b) => a - b),
        Array.from({ length: fit }, (_, i) => 3 * (i + 1)),
        "each add saw its own total"
      )
      assert.strictEqual(yield* stores.first.get(key), 3 * fit)
    })

    test(`${racers} concurrent adds of different amounts: the total is the sum of the successful ones, within the limit`, function*(stores) {
      const key = counter({ scope: "tenant" })
      const limit = 25
      const amount = (i: number) => (i % 4) + 1
      const exits = yield* race(racers, (i) => stores.at(i).add(key, amount(i), limit))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      const sum = results.reduce((acc, r, i) => (r._tag === "Added" ? acc + amount(i) : acc), 0)
      const total = yield* stores.second.get(key)
      assert.strictEqual(total, sum, "the total is exactly the sum of the adds answered Added")
      assert.isAtMost(total, limit)
      const refused = results.flatMap((r, i) => (r._tag === "WouldExceed" ? [i] : []))
      for (const i of refused) assert.isAbove(total + amount(i), limit, "an add was refused only if it would not fit at the end")
    })

    test("days, scopes, scope ids and tenants are separate counters", function*(stores) {
      const base = counter()
      const variants: Array<LedgerStore.LedgerKey> = [
        { ...base, day: "2026-03-02" },
        { ...base, day: "2025-03-01" },
        ...(["tenant", "application"] as ReadonlyArray<LedgerStore.LedgerScope>).map((scope) => ({ ...base, scope })),
        { ...base, scopeId: ids("exec") },
        { ...base, tenantId: ids("tenant") }
      ]
      assert.deepStrictEqual(yield* stores.first.add(base, 7), { _tag: "Added", total: 7 })
      for (const [i, key] of variants.entries()) {
        assert.strictEqual(yield* stores.second.get(key), 0, `variant ${i} starts at 0`)
        assert.deepStrictEqual(yield* stores.second.add(key, i + 1, 100), { _tag: "Added", total: i + 1 })
      }
      assert.strictEqual(yield* stores.first.get(base), 7, "the first counter is untouched")
      for (const [i, key] of variants.entries()) assert.strictEqual(yield* stores.first.get(key), i + 1)
      assert.strictEqual(LedgerStore.dayOf(Date.UTC(2026, 2, 1, 23, 59)), "2026-03-01")
    })

    test("totals answers one counter's totals on many days in one call, in their order, 0 for a day never added to", function*(stores) {
      const key = counter()
      yield* stores.first.add({ ...key, day: "2026-03-01" }, 4)
      yield* stores.second.add({ ...key, day: "2026-03-03" }, 1.5)
      yield* stores.first.add({ ...key, day: "0000-01-01" }, 9)
      // Another counter's days are not counted.
      yield* stores.first.add({ ...key, scopeId: ids("exec"), day: "2026-03-02" }, 100)
      const { day: _, ...of } = key
      assert.deepStrictEqual(yield* stores.second.totals(of, ["0000-01-01", "2026-03-01", "2026-03-02", "2026-03-03"]), [9, 4, 0, 1.5])
      assert.deepStrictEqual(yield* stores.first.totals(of, ["2026-03-03", "2026-03-01"]), [1.5, 4], "in the order asked")
      assert.deepStrictEqual(yield* stores.first.totals(of, []), [])
      // More days than one statement reads (a long execution): every one answered.
      const days = Array.from({ length: 1_200 }, (_, i) => LedgerStore.dayOf(Date.UTC(2026, 0, 1) + i * 86_400_000))
      const totals = yield* stores.first.totals(of, days)
      assert.strictEqual(totals.length, days.length)
      assert.strictEqual(totals[days.indexOf("2026-03-01")], 4)
      assert.strictEqual(totals[days.indexOf("2026-03-03")], 1.5)
      assert.strictEqual(totals.reduce((a, b) => a + b, 0), 5.5)
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*({ first: s }) {
      const key = counter()
      const bad: Array<[Partial<Record<keyof LedgerStore.LedgerKey, unknown>>, string]> = [
        [{ tenantId: "" }, "tenantId"],
        [{ scope: "planet" }, "scope"],
        [{ scopeId: "" }, "scopeId"],
        ...illFormedIds.flatMap(([, bad]): Array<[Partial<Record<keyof LedgerStore.LedgerKey, unknown>>, string]> => [
          [{ tenantId: bad }, "tenantId"],
          [{ scopeId: bad }, "scopeId"]
        ]),
        [{ day: "" }, "day"],
        [{ day: "2026-3-1" }, "day"],
        [{ day: "2026-13-45" }, "day"],
        [{ day: "yesterday" }, "day"]
      ]
      for (const [over, field] of bad) {
        yield* expectInvalid(s.add({ ...key, ...over } as LedgerStore.LedgerKey, 1), field, `add, ${JSON.stringify(over)}`)
        yield* expectInvalid(s.get({ ...key, ...over } as LedgerStore.LedgerKey), field, `get, ${JSON.stringify(over)}`)
        const { day, ...of } = { ...key, ...over }
        if (field !== "day") yield* expectInvalid(s.totals(of as LedgerStore.LedgerKey, ["2026-03-01"]), field, `totals, ${JSON.stringify(over)}`)
        else yield* expectInvalid(s.totals(of as LedgerStore.LedgerKey, ["2026-03-01", day as string]), "days", `totals, day ${JSON.stringify(day)}`)
      }
      yield* expectInvalid(s.totals(key, "2026-03-01" as never), "days", "totals, days not a list")
      for (const amount of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
        yield* expectInvalid(s.add(key, amount), "amount", `add, amount ${amount}`)
      }
      for (const limit of [0, 0.5, -3, Number.NaN]) {
        yield* expectInvalid(s.add(key, 1, limit), "limit", `add, limit ${limit}`)
      }
      assert.strictEqual(yield* s.get(key), 0, "no bad add wrote anything")
    })
  })
}
