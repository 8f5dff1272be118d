/**
 * Conformance suite for {@link ScheduleStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Option } from "effect"
import { type NewSchedule, ScheduleStore } from "../../stores/ScheduleStore.ts"
import { expectInvalid, illFormedIds, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

/** Far in the future: rows of the other tests are never due in the `due` test (which works at small times). */
const later = 9_000_000_000_000
const base = 1_000_000_000_000

/**
 * Registers the ScheduleStore conformance tests (call it at the top level of
 * a vitest file).
 *
 * @category conformance
 * @since 0.1.0
 */
export const scheduleStoreSuite = (options: SuiteOptions<ScheduleStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "ScheduleStore", ScheduleStore)
  const newOf = (over: Partial<NewSchedule> = {}): NewSchedule => ({
    tenantId: ids("tenant"),
    scheduleId: ids("schedule"),
    definition: { workflow: "report", input: { n: 1 } },
    paused: false,
    nextFireAt: later,
    now: base,
    ...over
  })

  register((test) => {
    test("create keeps a new schedule (version 1, no state) that every instance reads; another tenant sees none", function*(stores) {
      const s = newOf()
      const made = yield* stores.first.create(s)
      assert.isTrue(made.created)
      const expected = {
        tenantId: s.tenantId,
        scheduleId: s.scheduleId,
        definition: s.definition,
        paused: false,
        nextFireAt: later,
        state: null,
        version: 1,
        createdAt: base,
        updatedAt: base
      }
      assert.deepStrictEqual(made.schedule, expected)
      assert.deepStrictEqual(some(yield* stores.second.get(s.tenantId, s.scheduleId), "get"), expected)
      assert.isTrue(Option.isNone(yield* stores.second.get(ids("tenant"), s.scheduleId)), "per tenant")
      assert.isTrue(Option.isNone(yield* stores.second.get(s.tenantId, ids("schedule"))), "unknown id")
    })

    test(`of ${racers} racing creates of one id exactly one creates; the others answer the kept row unchanged`, function*(stores) {
      const shared = newOf()
      const exits = yield* race(racers, (i) => stores.at(i).create({ ...shared, definition: { racer: i } }))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      const winners = results.filter((r) => r.created)
      assert.strictEqual(winners.length, 1)
      for (const r of results) assert.deepStrictEqual(r.schedule.definition, winners[0]!.schedule.definition)
      assert.strictEqual(some(yield* stores.first.get(shared.tenantId, shared.scheduleId), "get").version, 1)
    })

    test("update is a compare-and-set on version: it writes only the fields given, + 1; a stale version or a gone row answers none", function*(stores) {
      const s = newOf()
      yield* stores.first.create(s)
      const state = { lastTickAt: later, lastExecutionId: "exec-1" }
      const moved = some(yield* stores.second.update(s.tenantId, s.scheduleId, 1, { nextFireAt: later + 60_000, state }, base + 5), "update")
      assert.deepStrictEqual(moved, { ...moved, paused: false, nextFireAt: later + 60_000, state, version: 2, updatedAt: base + 5, createdAt: base })
      assert.isTrue(Option.isNone(yield* stores.first.update(s.tenantId, s.scheduleId, 1, { paused: true }, base + 6)), "stale version")
      const paused = some(yield* stores.first.update(s.tenantId, s.scheduleId, 2, { paused: true }, base + 7), "pause")
      assert.deepStrictEqual([paused.paused, paused.nextFireAt, paused.state, paused.version], [true, later + 60_000, state, 3], "other fields kept")
      const cleared = some(yield* stores.first.update(s.tenantId, s.scheduleId, 3, { state: null }, base + 8), "clear the state")
      assert.strictEqual(cleared.state, null)
      assert.isTrue(Option.isNone(yield* stores.first.update(ids("tenant"), s.scheduleId, 4, { paused: false }, base)), "another tenant's")
    })

    test(`of ${racers} racing updates from one version exactly one wins`, function*(stores) {
      const s = newOf()
      yield* stores.first.create(s)
      const exits = yield* race(racers, (i) => stores.at(i).update(s.tenantId, s.scheduleId, 1, { state: { racer: i } }, base + i))
      const won = successes(exits).filter(Option.isSome)
      assert.strictEqual(won.length, 1)
      assert.deepStrictEqual(some(yield* stores.first.get(s.tenantId, s.scheduleId), "get").state, won[0]!.value.state)
    })

    test("due answers the rows not paused whose next tick is at or before now, of every tenant, earliest first, at most limit; nextDue the earliest", function*(stores) {
      const t1 = ids("tenant")
      const t2 = ids("tenant")
      const a = newOf({ tenantId: t2, nextFireAt: 1_000 })
      const b = newOf({ tenantId: t1, nextFireAt: 1_000 })
      const c = newOf({ tenantId: t1, nextFireAt: 1_500 })
      const pausedOne = newOf({ tenantId: t1, nextFireAt: 900, paused: true })
      const notYet = newOf({ tenantId: t1, nextFireAt: 2_500 })
      for (const s of [a, b, c, pausedOne, notYet]) yield* stores.first.create(s)
      const mine = new Set([a, b, c, pausedOne, notYet].map((s) => s.scheduleId))
      const due = (yield* stores.second.due(2_000, 100)).filter((r) => mine.has(r.scheduleId))
      const first = t1 < t2 ? [b, a] : [a, b]
      assert.deepStrictEqual(due.map((r) => r.scheduleId), [...first, c].map((s) => s.scheduleId), "by time, then tenant; no paused or future row")
      assert.strictEqual((yield* stores.second.due(2_000, 1)).length, 1, "at most limit")
      assert.strictEqual(Option.getOrUndefined(yield* stores.first.nextDue), 1_000, "the earliest row not paused")
      yield* stores.first.update(pausedOne.tenantId, pausedOne.scheduleId, 1, { paused: false }, 3_000)
      assert.strictEqual(Option.getOrUndefined(yield* stores.second.nextDue), 900, "resumed, it counts")
      for (const s of [a, b, c, pausedOne, notYet]) assert.isTrue(yield* stores.first.delete(s.tenantId, s.scheduleId))
      assert.isTrue((yield* stores.second.due(2_000, 100)).every((r) => !mine.has(r.scheduleId)), "deleted rows are never due")
    })

    test("list pages a tenant's schedules by id; delete answers whether a row went", function*(stores) {
      const tenantId = ids("tenant")
      const made = ["s-c", "s-a", "s-b"].map((scheduleId) => newOf({ tenantId, scheduleId }))
      for (const s of made) yield* stores.first.create(s)
      yield* stores.first.create(newOf({ scheduleId: "s-a" }))
      const page = yield* stores.second.list(tenantId, { limit: 2 })
      assert.deepStrictEqual(page.map((r) => r.scheduleId), ["s-a", "s-b"])
      const rest = yield* stores.second.list(tenantId, { after: "s-b", limit: 2 })
      assert.deepStrictEqual(rest.map((r) => r.scheduleId), ["s-c"])
      assert.isTrue(yield* stores.second.delete(tenantId, "s-b"))
      assert.isFalse(yield* stores.first.delete(tenantId, "s-b"), "already gone")
      assert.isFalse(yield* stores.first.delete(ids("tenant"), "s-a"), "another tenant's id")
      assert.deepStrictEqual((yield* stores.first.list(tenantId, { limit: 10 })).map((r) => r.scheduleId), ["s-a", "s-c"])
      assert.isTrue((yield* stores.first.create(newOf({ tenantId, scheduleId: "s-b" }))).created, "a deleted id is free again")
    })

    test("bad input is refused with InvalidInputError naming the field", function*({ first: s }) {
      yield* expectInvalid(s.create(newOf({ scheduleId: "" })), "scheduleId", "empty id")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.create(newOf({ tenantId: bad })), "tenantId", `tenant with ${what}`)
        yield* expectInvalid(s.get("t", bad), "scheduleId", `get, id with ${what}`)
      }
      yield* expectInvalid(s.create(newOf({ definition: 10n })), "definition", "not JSON")
      yield* expectInvalid(s.create(newOf({ paused: "no" as never })), "paused", "not a boolean")
      yield* expectInvalid(s.create(newOf({ nextFireAt: Number.NaN })), "nextFireAt", "NaN")
      yield* expectInvalid(s.update("t", "s", 0, {}, base), "expected", "version 0")
      yield* expectInvalid(s.update("t", "s", 1, { nextFireAt: -1 }, base), "change.nextFireAt", "negative time")
      yield* expectInvalid(s.update("t", "s", 1, { state: 10n }, base), "change.state", "not JSON")
      yield* expectInvalid(s.update("t", "s", 1, { paused: 1 as never }, base), "change.paused", "not a boolean")
      yield* expectInvalid(s.due(base, 0), "limit", "limit 0")
      yield* expectInvalid(s.list("t", { limit: 0 }), "limit", "limit 0")
      yield* expectInvalid(s.delete("", "s"), "tenantId", "empty tenant")
    })
  })
}
