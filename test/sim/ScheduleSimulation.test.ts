/**
 * A seeded fault simulation of schedules: three instances over the memory
 * stores on the TestClock, two schedules (every 7 minutes with missed "all",
 * an hourly cron with missed "skip"; overlap "allow"), and a random plan of
 * kill, freeze, thaw, restart and clock moves — the same plan for the same
 * seed. Afterwards every instance is brought back and the clock moved on, and
 * the checks: no tick started twice (each tick's request key names one
 * execution, every execution belongs to one tick), the "all" schedule
 * missed no tick, and the "skip" one started no tick it had counted as not
 * started. `BATON_SCHEDULE_SIM_SEEDS` sets the seed count (default 20).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { api, executionsOf, hour, memoryStores, minute, report } from "../runtime/schedules/fixtures.ts"

const seeds = Number(process.env.BATON_SCHEDULE_SIM_SEEDS ?? 20)

/** mulberry32: a small seedable PRNG. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const every = 7 * minute

/** The executions each tick's key names, for the ticks `ticks`; a tick without a key is absent. */
const keyed = (tenantId: string, scheduleId: string, ticks: ReadonlyArray<number>, now: number) =>
  Effect.gen(function*() {
    const requests = yield* RequestStore
    const out = new Map<number, string>()
    for (const t of ticks) {
      const kept = yield* requests.get(tenantId, `@baton/schedule/${scheduleId}/${t}`, now)
      if (Option.isSome(kept)) out.set(t, (kept.value.handle as { executionId: string }).executionId)
    }
    return out
  })

const simulate = (seed: number) =>
  Effect.gen(function*() {
    const random = prng(seed)
    const log: Array<string> = []
    const violations: Array<string> = []
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [report], waitPoll: "1 hour" } })
    const schedules = yield* api
    yield* schedules.create("all", report, { log: [] }, { tenantId: "t-all", every: "7 minutes", missed: "all", maxCatchUp: 1000, overlap: "allow" })
    yield* schedules.create("skip", report, { log: [] }, { tenantId: "t-skip", cron: "0 * * * *", missed: "skip", overlap: "allow" })
    const state = ["alive", "alive", "alive"] as Array<"alive" | "dead" | "frozen">
    for (let step = 0; step < 24; step++) {
      const i = Math.floor(random() * 3)
      const roll = random()
      if (roll < 0.15 && state[i] === "alive") {
        yield* h.kill(i)
        state[i] = "dead"
        log.push(`kill ${i}`)
      } else if (roll < 0.25 && state[i] === "alive") {
        yield* h.freeze(i)
        state[i] = "frozen"
        log.push(`freeze ${i}`)
      } else if (roll < 0.4 && state[i] === "frozen") {
        yield* h.thaw(i)
        state[i] = "alive"
        log.push(`thaw ${i}`)
      } else if (roll < 0.55 && state[i] === "dead") {
        yield* h.restart(i)
        state[i] = "alive"
        log.push(`restart ${i}`)
      }
      const move = Math.floor(random() * 12 * minute)
      yield* h.advance(move)
      log.push(`advance ${move}`)
    }
    // Everyone back, and time for the leader to catch up.
    for (let i = 0; i < 3; i++) {
      if (state[i] === "frozen") yield* h.thaw(i)
      if (state[i] === "dead") yield* h.restart(i)
    }
    yield* h.advance(2 * minute)
    const now = (yield* schedules.get("all", { tenantId: "t-all" })).updatedAt

    // "all": every tick from the first to the last one due has exactly one execution.
    const all = yield* schedules.get("all", { tenantId: "t-all" })
    // The seeds share one TestClock: each schedule's ticks are from its own creation on.
    const anchor = all.timing._tag === "Every" ? all.timing.anchor : 0
    const allTicks = Array.from({ length: Math.round((all.nextFireAt - anchor) / every) }, (_, k) => anchor + every * k)
    const allKeys = yield* keyed("t-all", "all", allTicks, now)
    const allExecutions = yield* executionsOf("t-all")
    if (allKeys.size !== allTicks.length) violations.push(`all: ${allTicks.length} ticks due, ${allKeys.size} keys`)
    if (new Set(allKeys.values()).size !== allKeys.size) violations.push("all: one execution answers two ticks")
    if (allExecutions.length !== allKeys.size) violations.push(`all: ${allExecutions.length} executions for ${allKeys.size} ticks`)
    if (all.started !== allTicks.length) violations.push(`all: started ${all.started}, ${allTicks.length} ticks`)
    if (!allExecutions.every((r) => [...allKeys.values()].includes(r.executionId))) violations.push("all: an execution of no tick")

    // "skip": no tick twice; started + notStarted = the ticks passed; every execution is a tick's.
    const skip = yield* schedules.get("skip", { tenantId: "t-skip" })
    const firstHour = Math.floor(skip.createdAt / hour) + 1
    const skipTicks = Array.from({ length: skip.nextFireAt / hour - firstHour }, (_, k) => hour * (firstHour + k))
    const skipKeys = yield* keyed("t-skip", "skip", skipTicks, now)
    const skipExecutions = yield* executionsOf("t-skip")
    if (skipExecutions.length !== skipKeys.size || new Set(skipKeys.values()).size !== skipKeys.size) {
      violations.push(`skip: ${skipExecutions.length} executions for ${skipKeys.size} keyed ticks`)
    }
    if (skip.started !== skipKeys.size) violations.push(`skip: started ${skip.started}, ${skipKeys.size} keyed ticks`)
    if (skip.started + skip.notStarted !== skipTicks.length) violations.push(`skip: ${skip.started} + ${skip.notStarted} ≠ ${skipTicks.length} ticks`)
    return { violations, log, ticks: allTicks.length + skipTicks.length }
  }).pipe(Effect.scoped, Effect.provide(Layer.fresh(memoryStores)))

describe("seeded fault simulation of schedules", () => {
  it.effect(`${seeds} seeds: no tick twice, none missed under missed "all"`, () =>
    Effect.gen(function*() {
      let ticks = 0
      for (let seed = 1; seed <= seeds; seed++) {
        const result = yield* simulate(seed)
        ticks += result.ticks
        if (result.violations.length > 0) assert.fail(`seed ${seed} failed:\n  ${result.violations.join("\n  ")}\nplan:\n  ${result.log.join("\n  ")}`)
      }
      assert.isAbove(ticks, seeds * 10, "the schedules ticked")
    }), { timeout: 600_000 })
})
