/**
 * The schedules API (create, get, list, pause, resume, delete) in the
 * harness: tenant and owner checks, the idempotent create, refused options
 * naming the field, and what pause, resume and delete do to the ticks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag } from "../fixtures.ts"
import { api, executionsOf, hour, memoryStores, minute, report } from "./fixtures.ts"

const tenantId = "acme"
const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.map(Effect.exit(effect), (exit) => {
  assert.isTrue(Exit.isFailure(exit))
  return exit as Exit.Exit<A, E>
})
const fieldOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? (Exit.findErrorOption(exit) as { value?: { field?: string } }).value?.field : undefined

describe("Schedules API", () => {
  it.effect("pause stops the ticks; resume goes on from the next tick without catching up; delete ends it", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("hourly", report, { log: [] }, { tenantId, cron: "0 * * * *" })
      yield* h.advance(hour)
      assert.strictEqual((yield* executionsOf(tenantId)).length, 1)
      const paused = yield* schedules.pause("hourly", { tenantId })
      assert.isTrue(paused.paused)
      assert.isTrue((yield* schedules.pause("hourly", { tenantId })).paused, "pausing again changes nothing")
      yield* h.advance(3 * hour + 30 * minute)
      assert.strictEqual((yield* executionsOf(tenantId)).length, 1, "nothing while paused")
      const resumed = yield* schedules.resume("hourly", { tenantId })
      assert.deepStrictEqual([resumed.paused, resumed.nextFireAt], [false, 5 * hour], "from the next tick; the paused ones are not caught up")
      yield* h.advance(30 * minute)
      assert.deepStrictEqual((yield* executionsOf(tenantId)).map((r) => r.createdAt), [hour, 5 * hour])
      assert.deepStrictEqual(yield* schedules.delete("hourly", { tenantId }), { deleted: true })
      yield* h.advance(2 * hour)
      assert.strictEqual((yield* executionsOf(tenantId)).length, 2, "nothing after the delete")
      assert.strictEqual(errorTag(yield* failure(schedules.get("hourly", { tenantId }))), "UnknownScheduleError")
      assert.strictEqual(errorTag(yield* failure(schedules.delete("hourly", { tenantId }))), "UnknownScheduleError")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("a schedule is its tenant's and its owner's: another tenant sees none, another owner is refused, list shows what the caller may see", () =>
    Effect.gen(function*() {
      yield* Harness.make({ instances: 1, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("mine", report, { log: [] }, { tenantId, ownerId: "alice", every: "1 hour" })
      yield* schedules.create("shared", report, { log: [] }, { tenantId, every: "1 hour" })
      yield* schedules.create("bobs", report, { log: [] }, { tenantId, ownerId: "bob", every: "1 hour" })
      assert.strictEqual(errorTag(yield* failure(schedules.get("mine", { tenantId: "other", ownerId: "alice" }))), "UnknownScheduleError")
      const calls: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
        schedules.get("mine", { tenantId, ownerId: "bob" }),
        schedules.pause("mine", { tenantId }),
        schedules.resume("mine", { tenantId, ownerId: "bob" }),
        schedules.delete("mine", { tenantId, ownerId: "bob" })
      ]
      for (const call of calls) {
        assert.strictEqual(errorTag(yield* failure(call)), "ScheduleOwnerError")
      }
      assert.isFalse((yield* schedules.get("mine", { tenantId, ownerId: "alice" })).paused, "nothing changed")
      const page = yield* schedules.list({ tenantId, ownerId: "alice" })
      assert.deepStrictEqual(page.schedules.map((s) => s.scheduleId), ["mine", "shared"])
      assert.deepStrictEqual((yield* schedules.list({ tenantId: "other" })).schedules, [])
      const first = yield* schedules.list({ tenantId, ownerId: "bob", limit: 1 })
      assert.deepStrictEqual([first.schedules.map((s) => s.scheduleId), first.next], [["bobs"], "bobs"])
      const second = yield* schedules.list({ tenantId, ownerId: "bob", limit: 1, cursor: first.next! })
      assert.deepStrictEqual(second.schedules.map((s) => s.scheduleId), [], "alice's is not shown to bob")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("create is idempotent for one definition (also an interval re-created later); another definition under the id is ScheduleExistsError", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      const first = yield* schedules.create("boot", report, { log: [] }, { tenantId, every: "15 minutes" })
      yield* h.advance(5 * minute)
      const again = yield* schedules.create("boot", report, { log: [] }, { tenantId, every: "15 minutes" })
      assert.deepStrictEqual(again, first, "the kept schedule, its first tick unchanged")
      assert.strictEqual(errorTag(yield* failure(schedules.create("boot", report, { log: ["x"] }, { tenantId, every: "15 minutes" }))), "ScheduleExistsError")
      assert.strictEqual(errorTag(yield* failure(schedules.create("boot", report, { log: [] }, { tenantId, every: "10 minutes" }))), "ScheduleExistsError")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("options that cannot work are InvalidInputError naming the field, and nothing is written", () =>
    Effect.gen(function*() {
      yield* Harness.make({ instances: 1, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      const refused: Array<[string, Effect.Effect<unknown, unknown>]> = [
        ["cron", schedules.create("s", report, { log: [] }, { tenantId })],
        ["cron", schedules.create("s", report, { log: [] }, { tenantId, cron: "0 * * * *", every: "1 hour" })],
        ["cron", schedules.create("s", report, { log: [] }, { tenantId, cron: "61 * * * *" })],
        ["timeZone", schedules.create("s", report, { log: [] }, { tenantId, cron: "0 9 * * *", timeZone: "Mars/Olympus" })],
        ["timeZone", schedules.create("s", report, { log: [] }, { tenantId, every: "1 hour", timeZone: "UTC" })],
        ["dstOverlap", schedules.create("s", report, { log: [] }, { tenantId, cron: "0 9 * * *", dstOverlap: "twice" as never })],
        ["every", schedules.create("s", report, { log: [] }, { tenantId, every: "10 millis" })],
        ["startAt", schedules.create("s", report, { log: [] }, { tenantId, cron: "0 9 * * *", startAt: 5 })],
        ["missed", schedules.create("s", report, { log: [] }, { tenantId, every: "1 hour", missed: "some" as never })],
        ["overlap", schedules.create("s", report, { log: [] }, { tenantId, every: "1 hour", overlap: "queue" as never })],
        ["maxCatchUp", schedules.create("s", report, { log: [] }, { tenantId, every: "1 hour", maxCatchUp: 0 })],
        ["grace", schedules.create("s", report, { log: [] }, { tenantId, every: "1 hour", grace: "2 days" })],
        ["evrey", schedules.create("s", report, { log: [] }, { tenantId, evrey: "1 hour" } as never)],
        ["scheduleId", schedules.create("x".repeat(161), report, { log: [] }, { tenantId, every: "1 hour" })],
        ["scheduleId", schedules.create("", report, { log: [] }, { tenantId, every: "1 hour" })],
        ["input", schedules.create("s", report, "text" as never, { tenantId, every: "1 hour" })],
        ["limit", schedules.list({ tenantId, limit: 0 })]
      ]
      for (const [field, call] of refused) {
        const exit = yield* failure(call)
        assert.strictEqual(errorTag(exit), "InvalidInputError", field)
        assert.strictEqual(fieldOf(exit), field)
      }
      assert.deepStrictEqual((yield* schedules.list({ tenantId })).schedules, [], "nothing written")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("a schedule of a workflow no instance registers records the refusal as the tick's outcome and goes on", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [report], waitPoll: "1 hour" } })
      const schedules = yield* api
      const { waiting } = yield* Effect.promise(() => import("./fixtures.ts"))
      yield* schedules.create("orphan", waiting, { log: [] }, { tenantId, every: "1 hour" })
      yield* h.advance(hour)
      const view = yield* schedules.get("orphan", { tenantId })
      assert.deepStrictEqual([view.lastOutcome, view.started, view.notStarted, view.nextFireAt], ["Failed", 0, 1, 2 * hour])
      assert.match(view.lastError ?? "", /workflow "waiting" is not registered on instance instance-0/)
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))
})
