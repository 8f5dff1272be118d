/**
 * Conformance suite for {@link ConcurrencyKeyStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Option } from "effect"
import { ConcurrencyKeyStore, type KeyEntry, type NewKeyEntry } from "../../stores/ConcurrencyKeyStore.ts"
import { expectInvalid, illFormedIds, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

const base = 1_000_000_000_000

const admittedIds = (entries: ReadonlyArray<KeyEntry>) => entries.filter((e) => e.admitted).map((e) => e.executionId)
const waitingIds = (entries: ReadonlyArray<KeyEntry>) => entries.filter((e) => !e.admitted).map((e) => e.executionId)

/**
 * Registers the ConcurrencyKeyStore conformance tests (call it at the top
 * level of a vitest file).
 *
 * @category conformance
 * @since 0.1.0
 */
export const concurrencyKeyStoreSuite = (options: SuiteOptions<ConcurrencyKeyStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "ConcurrencyKeyStore", ConcurrencyKeyStore)
  const newOf = (over: Partial<NewKeyEntry> = {}): NewKeyEntry => ({
    tenantId: ids("tenant"),
    key: ids("key"),
    executionId: ids("exec"),
    limit: 1,
    now: base,
    ...over
  })

  register((test) => {
    test("enqueue admits while fewer than the limit hold slots, then lines up in arrival order; every instance reads the line", function*(stores) {
      const s = newOf({ limit: 2 })
      const e = (i: number) => ({ ...s, executionId: `${s.executionId}-${i}`, now: base + i })
      const first = yield* stores.first.enqueue(e(1))
      assert.deepStrictEqual(first.entry, {
        tenantId: s.tenantId,
        key: s.key,
        executionId: `${s.executionId}-1`,
        seq: first.entry.seq,
        admitted: true,
        enqueuedAt: base + 1,
        admittedAt: base + 1
      })
      assert.deepStrictEqual(first.admitted.map((a) => a.executionId), [`${s.executionId}-1`], "admitted by its own call")
      assert.isTrue((yield* stores.second.enqueue(e(2))).entry.admitted)
      const third = yield* stores.second.enqueue(e(3))
      assert.isFalse(third.entry.admitted, "the limit is reached")
      assert.strictEqual(third.entry.admittedAt, null)
      assert.deepStrictEqual(third.admitted, [])
      yield* stores.first.enqueue(e(4))
      const line = yield* stores.second.list(s.tenantId, s.key)
      assert.deepStrictEqual(line.map((x) => x.executionId), [1, 2, 3, 4].map((i) => `${s.executionId}-${i}`), "seq order")
      assert.isTrue(line.every((x, i) => i === 0 || x.seq > line[i - 1]!.seq), "seq grows")
      assert.deepStrictEqual(admittedIds(line), [`${s.executionId}-1`, `${s.executionId}-2`])
      assert.deepStrictEqual(some(yield* stores.first.get(s.tenantId, `${s.executionId}-3`), "get"), third.entry)
      assert.deepStrictEqual(yield* stores.first.list(ids("tenant"), s.key), [], "another tenant's key of that name is another line")
      assert.isTrue(Option.isNone(yield* stores.first.get(ids("tenant"), `${s.executionId}-1`)), "per tenant")
    })

    test("enqueue of an execution already entered changes nothing", function*(stores) {
      const s = newOf()
      const made = yield* stores.first.enqueue(s)
      const again = yield* stores.second.enqueue({ ...s, limit: 5, now: base + 9 })
      assert.deepStrictEqual(again, { entry: made.entry, admitted: [] })
      assert.strictEqual((yield* stores.first.list(s.tenantId, s.key)).length, 1)
    })

    test("release frees the slot and admits the earliest waiting entries of the key; a waiting entry leaves the line", function*(stores) {
      const s = newOf({ limit: 1 })
      const id = (i: number) => `${s.executionId}-${i}`
      for (const i of [1, 2, 3, 4]) yield* stores.at(i).enqueue({ ...s, executionId: id(i), now: base + i })
      const gone = yield* stores.second.release(s.tenantId, id(3), base + 10)
      assert.deepStrictEqual(gone, { released: true, admitted: [] }, "a waiting entry released: the slot stays held")
      const freed = yield* stores.first.release(s.tenantId, id(1), base + 11)
      assert.isTrue(freed.released)
      assert.deepStrictEqual(freed.admitted.map((e) => [e.executionId, e.admitted, e.admittedAt]), [[id(2), true, base + 11]])
      assert.deepStrictEqual(admittedIds(yield* stores.second.list(s.tenantId, s.key)), [id(2)])
      assert.deepStrictEqual(waitingIds(yield* stores.second.list(s.tenantId, s.key)), [id(4)])
      assert.deepStrictEqual(yield* stores.second.release(s.tenantId, id(1), base + 12), { released: false, admitted: [] }, "released twice")
      assert.deepStrictEqual(yield* stores.second.release(ids("tenant"), id(2), base + 12), { released: false, admitted: [] }, "another tenant's")
      assert.deepStrictEqual((yield* stores.first.release(s.tenantId, id(2), base + 13)).admitted.map((e) => e.executionId), [id(4)])
      assert.deepStrictEqual((yield* stores.first.release(s.tenantId, id(4), base + 14)).admitted, [])
      assert.deepStrictEqual(yield* stores.first.list(s.tenantId, s.key), [])
    })

    test("the last enqueue sets the key's limit: a raised limit admits the waiting ones in order", function*(stores) {
      const s = newOf({ limit: 1 })
      const id = (i: number) => `${s.executionId}-${i}`
      for (const i of [1, 2, 3]) yield* stores.first.enqueue({ ...s, executionId: id(i), now: base + i })
      const raised = yield* stores.second.enqueue({ ...s, executionId: id(4), limit: 3, now: base + 4 })
      assert.deepStrictEqual(raised.admitted.map((e) => e.executionId), [id(2), id(3)], "earliest first")
      assert.isFalse(raised.entry.admitted, "it came last")
      yield* stores.first.enqueue({ ...s, executionId: id(5), limit: 1, now: base + 5 })
      const freed = yield* stores.first.release(s.tenantId, id(1), base + 6)
      assert.deepStrictEqual(freed.admitted, [], "a lowered limit admits nothing until the admitted fall below it")
    })

    test(`of ${racers} racing enqueues of one key with limit 3 exactly 3 are admitted; racing releases admit one each`, function*(stores) {
      const s = newOf({ limit: 3 })
      const exits = yield* race(racers, (i) => stores.at(i).enqueue({ ...s, executionId: `${s.executionId}-${i}`, now: base + i }))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      const line = yield* stores.first.list(s.tenantId, s.key)
      assert.strictEqual(line.length, racers)
      assert.strictEqual(admittedIds(line).length, 3)
      assert.strictEqual(new Set(line.map((e) => e.seq)).size, racers, "every arrival has its own seq")
      assert.deepStrictEqual(results.flatMap((r) => r.admitted.map((a) => a.executionId)).sort(), admittedIds(line).sort(), "each admission told once")
      const holders = admittedIds(line)
      const released = successes(yield* race(holders.length, (i) => stores.at(i).release(s.tenantId, holders[i]!, base + 100)))
      assert.strictEqual(released.flatMap((r) => r.admitted).length, 3, "three freed slots, three admitted")
      const after = yield* stores.second.list(s.tenantId, s.key)
      const waitingBefore = line.filter((e) => !e.admitted).map((e) => e.executionId)
      assert.deepStrictEqual(admittedIds(after).sort(), waitingBefore.slice(0, 3).sort(), "the three earliest waiting")
    })

    test("listAdmitted pages the admitted entries of every tenant by (tenant, execution)", function*(stores) {
      const t1 = ids("tenant")
      const t2 = ids("tenant")
      const k = ids("key")
      const mine = [
        newOf({ tenantId: t1, key: k, executionId: "x-b" }),
        newOf({ tenantId: t1, key: k, executionId: "x-a" }),
        newOf({ tenantId: t2, key: k, executionId: "x-c", limit: 2 })
      ]
      for (const e of mine) yield* stores.first.enqueue(e)
      const all: Array<KeyEntry> = []
      let after: Option.Option<{ tenantId: string; executionId: string }> = Option.none()
      while (true) {
        const page = yield* stores.second.listAdmitted(2, after)
        all.push(...page)
        if (page.length < 2) break
        after = Option.some({ tenantId: page[1]!.tenantId, executionId: page[1]!.executionId })
      }
      const seen = all.filter((e) => e.tenantId === t1 || e.tenantId === t2)
      const expected = [[t1, "x-b"], [t2, "x-c"]].sort((a, b) => (a[0]! < b[0]! ? -1 : 1))
      assert.deepStrictEqual(seen.map((e) => [e.tenantId, e.executionId]), expected, "admitted only (x-a waits), in order")
      assert.isTrue(all.every((e) => e.admitted))
    })

    test("bad input is refused with InvalidInputError naming the field", function*({ first: s }) {
      yield* expectInvalid(s.enqueue(newOf({ key: "" })), "key", "empty key")
      yield* expectInvalid(s.enqueue(newOf({ limit: 0 })), "limit", "limit 0")
      yield* expectInvalid(s.enqueue(newOf({ limit: 1.5 })), "limit", "not whole")
      yield* expectInvalid(s.enqueue(newOf({ now: Number.NaN })), "now", "NaN")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.enqueue(newOf({ tenantId: bad })), "tenantId", `tenant with ${what}`)
        yield* expectInvalid(s.get("t", bad), "executionId", `get, id with ${what}`)
      }
      yield* expectInvalid(s.release("t", "", base), "executionId", "empty id")
      yield* expectInvalid(s.list("t", ""), "key", "empty key")
      yield* expectInvalid(s.listAdmitted(0, Option.none()), "limit", "limit 0")
    })
  })
}
