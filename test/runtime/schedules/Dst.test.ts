/**
 * Cron schedules across daylight-saving changes (Europe/Berlin, 2026): a
 * local time the spring change skips fires one gap later (03:30 local), a
 * local time the autumn change repeats fires once (its first occurrence) —
 * or at its second, or at both, as `dstOverlap` says. The tick math first,
 * then the harness firing the ticks on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Timing from "../../../src/runtime/internal/schedules/Timing.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { api, executionsOf, hour, memoryStores, report } from "./fixtures.ts"

const at = (iso: string) => Date.parse(iso)
const iso = (millis: number) => new Date(millis).toISOString()
const berlin = (dstOverlap: "earlier" | "later" | "both" = "earlier"): Timing.Timing => ({ _tag: "Cron", expression: "30 2 * * *", timeZone: "Europe/Berlin", dstOverlap })
/** The ticks from the first after `from` to `to`, as a schedule created at `from` fires them. */
const ticksBetween = (timing: Timing.Timing, from: string, to: string) => Timing.due(timing, Timing.nextAfter(timing, at(from)), at(to), 100).ticks.map(iso)

describe("daylight-saving changes: the ticks", () => {
  it("spring forward: 02:30 does not exist on 29 March; that day's tick is at 03:30 local (01:30Z), once", () => {
    assert.deepStrictEqual(ticksBetween(berlin(), "2026-03-28T00:00:00Z", "2026-03-30T23:00:00Z"), [
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:30:00.000Z", // the skipped 02:30, one hour on: 03:30 CEST
      "2026-03-30T00:30:00.000Z" // 02:30 CEST
    ])
  })

  it("fall back: 02:30 happens twice on 25 October; it fires once at the first by default, at the second with \"later\", at both with \"both\"", () => {
    const window = ["2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z"] as const
    assert.deepStrictEqual(ticksBetween(berlin(), ...window), ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"])
    assert.deepStrictEqual(ticksBetween(berlin("later"), ...window), ["2026-10-25T01:30:00.000Z", "2026-10-26T01:30:00.000Z"])
    assert.deepStrictEqual(ticksBetween(berlin("both"), ...window), ["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z", "2026-10-26T01:30:00.000Z"])
  })

  it("an hourly cron has 23 ticks on the spring day and 24 on the autumn day (the repeated hour once), an interval counts elapsed time", () => {
    const hourly: Timing.Timing = { _tag: "Cron", expression: "0 * * * *", timeZone: "Europe/Berlin", dstOverlap: "earlier" }
    assert.strictEqual(Timing.due(hourly, at("2026-03-28T23:00:00Z"), at("2026-03-29T21:59:59Z"), 100).total, 23) // from midnight local
    assert.strictEqual(Timing.due(hourly, at("2026-10-24T22:00:00Z"), at("2026-10-25T22:59:59Z"), 100).total, 24)
    const every: Timing.Timing = { _tag: "Every", everyMillis: hour, anchor: at("2026-10-24T22:00:00Z") }
    assert.strictEqual(Timing.due(every, at("2026-10-24T22:00:00Z"), at("2026-10-25T22:59:59Z"), 100).total, 25)
  })
})

describe("daylight-saving changes: the firing", () => {
  const fired = (start: string, dstOverlap: "earlier" | "both", days: number) =>
    Effect.gen(function*() {
      yield* TestClock.setTime(at(start))
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [report], sweepInterval: "1 hour", lease: "1 hour", waitPoll: "1 hour" } })
      const schedules = yield* api
      yield* schedules.create("night", report, { log: [] }, { tenantId: "acme", cron: "30 2 * * *", timeZone: "Europe/Berlin", dstOverlap })
      yield* h.advance(days * 24 * hour)
      return (yield* executionsOf("acme")).map((r) => iso(r.createdAt))
    }).pipe(Effect.provide(Layer.fresh(memoryStores)))

  it.effect("across the spring change: one execution on the day 02:30 is skipped, at 03:30 local", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* fired("2026-03-28T12:00:00Z", "earlier", 2), ["2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z"])
    }))

  it.effect("across the autumn change: one execution by default, two with dstOverlap \"both\"", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* fired("2026-10-24T12:00:00Z", "earlier", 1), ["2026-10-25T00:30:00.000Z"])
      assert.deepStrictEqual(yield* fired("2026-10-24T12:00:00Z", "both", 1), ["2026-10-25T00:30:00.000Z", "2026-10-25T01:30:00.000Z"])
    }))
})
