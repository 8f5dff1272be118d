/**
 * Schedules in the harness, on the TestClock, over the memory stores: every
 * tick starts exactly one execution however many instances run (also when
 * the leader is killed before a tick, and when a tick is fired again), the
 * missed-tick policies after all instances were down across three ticks, and
 * the overlap policies.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as Harness from "../../../src/testing/Harness.ts"
import { ScheduleStore } from "../../../src/stores/ScheduleStore.ts"
import { RequestStore } from "../../../src/stores/RequestStore.ts"
import { api, executionsOf, hour, leaderIndex, memoryStores, minute, report, waiting } from "./fixtures.ts"

const tenantId = "acme"

describe("schedule ticks", () => {
  it.effect("three instances: an hourly cron starts exactly one execution per tick, at the tick", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      const made = yield* schedules.create("hourly", report, { log: [] }, { tenantId, cron: "0 * * * *" })
      assert.strictEqual(made.nextFireAt, hour)
      yield* h.advance(hour - 1)
      assert.strictEqual((yield* executionsOf(tenantId)).length, 0, "nothing before the first tick")
      yield* h.advance(1)
      const first = yield* executionsOf(tenantId)
      assert.deepStrictEqual(first.map((r) => r.createdAt), [hour], "the first tick fires at its instant")
      yield* h.advance(2 * hour)
      const all = yield* executionsOf(tenantId)
      assert.deepStrictEqual(all.map((r) => r.createdAt), [hour, 2 * hour, 3 * hour], "one execution per tick")
      assert.isTrue(all.every((r) => r.status === "Finished"))
      const view = yield* schedules.get("hourly", { tenantId })
      assert.strictEqual(view.started, 3)
      assert.strictEqual(view.lastTickAt, 3 * hour)
      assert.strictEqual(view.lastExecutionId, all[2]!.executionId)
      assert.strictEqual(view.nextFireAt, 4 * hour)
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("the leader killed just before a tick: another instance fires it once, within the grace, and the ticks after", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("ten", report, { log: [] }, { tenantId, every: "10 minutes" })
      yield* h.advance("1 second")
      const leader = yield* leaderIndex
      assert.isDefined(leader)
      yield* h.advance(10 * minute - 2_000)
      yield* h.kill(leader!)
      yield* h.advance(40 * minute)
      const all = yield* executionsOf(tenantId)
      assert.strictEqual(all.length, 4, "ticks at 10, 20, 30 and 40 minutes, each once")
      assert.isTrue(all[0]!.createdAt > 10 * minute && all[0]!.createdAt <= 10 * minute + 31_000, "the first after the dead leader's lease expired")
      assert.deepStrictEqual(all.slice(1).map((r) => r.createdAt), [20 * minute, 30 * minute, 40 * minute])
      assert.notStrictEqual(yield* leaderIndex, leader)
      const view = yield* schedules.get("ten", { tenantId })
      assert.deepStrictEqual([view.started, view.notStarted], [4, 0])
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("a leader frozen before a tick and thawed after another fired it fires nothing twice", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("frozen", report, { log: [] }, { tenantId, every: "10 minutes" })
      yield* h.advance("1 second")
      const leader = (yield* leaderIndex)!
      yield* h.advance(10 * minute - 2_000)
      yield* h.freeze(leader) // its wake-up at the tick waits for the thaw
      yield* h.advance(2 * minute)
      const whileFrozen = yield* executionsOf(tenantId)
      assert.strictEqual(whileFrozen.length, 1, "the other instance fired the tick after the frozen leader's lease expired")
      assert.strictEqual(yield* leaderIndex, 1 - leader)
      yield* h.thaw(leader)
      yield* h.advance(9 * minute)
      const all = yield* executionsOf(tenantId)
      assert.strictEqual(all.length, 2, "the ticks at 10 and 20 minutes, each once")
      assert.strictEqual(all[0]!.executionId, whileFrozen[0]!.executionId)
      assert.deepStrictEqual((yield* schedules.get("frozen", { tenantId })).started, 2)
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("a tick fired again (its row not moved on after the start) answers the execution it started: no second one", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("again", report, { log: [] }, { tenantId, cron: "0 * * * *" })
      yield* h.advance(hour)
      const [first] = yield* executionsOf(tenantId)
      const store = yield* ScheduleStore
      const row = Option.getOrThrow(yield* store.get(tenantId, "again"))
      // As if the leader died right after the start: the row still says the tick is due.
      yield* store.update(tenantId, "again", row.version, { nextFireAt: hour, state: null }, hour)
      const kept = yield* (yield* RequestStore).get(tenantId, `@baton/schedule/again/${hour}`, hour)
      assert.isTrue(Option.isSome(kept), "the tick's request key is kept")
      yield* h.advance("31 seconds") // the leader's next look (at most sweepInterval away)
      const all = yield* executionsOf(tenantId)
      assert.deepStrictEqual(all.map((r) => r.executionId), [first!.executionId], "the same execution, once")
      const view = yield* schedules.get("again", { tenantId })
      assert.deepStrictEqual([view.lastExecutionId, view.lastTickAt, view.nextFireAt], [first!.executionId, hour, 2 * hour])
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))
})

describe("missed ticks: every instance down across three ticks", () => {
  const downAcrossThreeTicks = (missed: "skip" | "one" | "all") =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("nightly", report, { log: [] }, { tenantId, cron: "0 * * * *", missed, overlap: "allow" })
      yield* h.advance(30 * minute)
      for (const i of [0, 1, 2]) yield* h.kill(i)
      yield* h.advance(3 * hour) // ticks at 1 h, 2 h and 3 h pass with nobody up
      assert.strictEqual((yield* executionsOf(tenantId)).length, 0)
      for (const i of [0, 1, 2]) yield* h.restart(i)
      yield* h.advance("1 second")
      const caughtUp = (yield* executionsOf(tenantId)).length
      yield* h.advance(30 * minute) // the tick at 4 h
      const view = yield* schedules.get("nightly", { tenantId })
      return { caughtUp, total: (yield* executionsOf(tenantId)).length, view }
    }).pipe(Effect.provide(Layer.fresh(memoryStores)))

  it.effect("skip: none of them fires; the schedule goes on at the next tick", () =>
    Effect.gen(function*() {
      const { caughtUp, total, view } = yield* downAcrossThreeTicks("skip")
      assert.deepStrictEqual([caughtUp, total], [0, 1])
      assert.deepStrictEqual([view.started, view.notStarted, view.lastTickAt], [1, 3, 4 * hour])
    }))

  it.effect("one: one execution for the whole stretch (the latest missed tick), then the next tick", () =>
    Effect.gen(function*() {
      const { caughtUp, total, view } = yield* downAcrossThreeTicks("one")
      assert.deepStrictEqual([caughtUp, total], [1, 2])
      assert.deepStrictEqual([view.started, view.notStarted], [2, 2])
    }))

  it.effect("all: each missed tick fires once, oldest first, then the next tick", () =>
    Effect.gen(function*() {
      const { caughtUp, total, view } = yield* downAcrossThreeTicks("all")
      assert.deepStrictEqual([caughtUp, total], [3, 4])
      assert.deepStrictEqual([view.started, view.notStarted], [4, 0])
    }))

  it.effect("all is bounded by maxCatchUp: the latest ones fire", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("bounded", report, { log: [] }, { tenantId, every: "1 minute", missed: "all", maxCatchUp: 5, grace: 0, overlap: "allow" })
      yield* h.kill(0)
      yield* h.advance(30 * minute + 30_000)
      yield* h.restart(0)
      yield* h.advance("1 millis")
      const view = yield* schedules.get("bounded", { tenantId })
      assert.deepStrictEqual([view.started, view.notStarted, view.lastTickAt], [5, 25, 30 * minute])
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))
})

describe("overlap: a tick while the previous run still runs (paused)", () => {
  const twoTicks = (overlap: "skip" | "allow" | "cancel") =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [waiting], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("ask", waiting, { log: [] }, { tenantId, every: "1 hour", overlap })
      yield* h.advance(2 * hour)
      return { executions: yield* executionsOf(tenantId), view: yield* schedules.get("ask", { tenantId }) }
    }).pipe(Effect.provide(Layer.fresh(memoryStores)))

  it.effect("skip: the second tick starts nothing", () =>
    Effect.gen(function*() {
      const { executions, view } = yield* twoTicks("skip")
      assert.deepStrictEqual(executions.map((r) => r.status), ["Paused"])
      assert.deepStrictEqual([view.lastOutcome, view.started, view.notStarted, view.lastExecutionId], ["Skipped", 1, 1, executions[0]!.executionId])
    }))

  it.effect("allow: the second tick starts another beside it", () =>
    Effect.gen(function*() {
      const { executions, view } = yield* twoTicks("allow")
      assert.deepStrictEqual(executions.map((r) => r.status), ["Paused", "Paused"])
      assert.deepStrictEqual([view.lastOutcome, view.started], ["Started", 2])
    }))

  it.effect("cancel: the second tick cancels the first, then starts", () =>
    Effect.gen(function*() {
      const { executions, view } = yield* twoTicks("cancel")
      assert.deepStrictEqual(executions.map((r) => r.status), ["Cancelled", "Paused"])
      assert.deepStrictEqual([view.lastOutcome, view.started, view.lastExecutionId], ["Started", 2, executions[1]!.executionId])
    }))
})
