/**
 * Schedule scenarios over any backend given as one store Layer (a SQLite
 * file, a Postgres schema): three harness instances on the TestClock.
 */
import { assert } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { ScheduleStore } from "../../../src/stores/ScheduleStore.ts"
import type { HarnessStores } from "../../../src/testing/Harness.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { api, executionsOf, leaderIndex, minute, report } from "./fixtures.ts"

const baton = { workflows: [report], waitPoll: "1 hour" } as const

/**
 * Moves the clock a second at a time, letting the event loop turn, until
 * `done` holds (at most 10 s of real time): a backend whose calls are real
 * network I/O (Postgres) answers after the harness settled, which sees only
 * the passes and the Clock's waits — and a tick whose starter died between
 * claiming its key and recording it waits on the Clock for that lease.
 */
const until = (h: Harness.Harness, done: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (!(yield* done) && Date.now() - started < 10_000) {
      yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 10)))
      yield* h.advance("1 second")
    }
  })

/**
 * Ticks every 10 minutes for an hour, the leader killed at 25 minutes, then
 * every instance down across three ticks and all restarted (missed: "all",
 * overlap "allow"): one execution per tick, each tick once. `onTime`: the
 * first ticks fired at their instants (a backend without network I/O, whose
 * answers the harness's settling sees).
 */
export const oncePerTickUnderKills = <E>(stores: Layer.Layer<HarnessStores | ScheduleStore, E>, tenantId: string, onTime: boolean) =>
  Effect.gen(function*() {
    const h = yield* Harness.make({ instances: 3, baton })
    const schedules = yield* api
    yield* schedules.create("ten", report, { log: [] }, { tenantId, every: "10 minutes", missed: "all", overlap: "allow" })
    yield* h.advance(25 * minute)
    const leader = yield* leaderIndex
    assert.isDefined(leader)
    yield* h.kill(leader!)
    yield* h.advance(20 * minute) // ticks at 30 and 40 minutes: another leader takes over within the lease
    yield* h.restart(leader!)
    for (const i of [0, 1, 2]) yield* h.kill(i)
    yield* h.advance(30 * minute) // ticks at 50, 60 and 70 minutes with nobody up
    for (const i of [0, 1, 2]) yield* h.restart(i)
    yield* h.advance(2 * minute)
    yield* until(h, Effect.map(Effect.orDie(schedules.get("ten", { tenantId })), (v) => v.lastTickAt === 70 * minute))
    const all = yield* executionsOf(tenantId)
    const view = yield* schedules.get("ten", { tenantId })
    assert.strictEqual(all.length, 7, `ticks at 10 … 70 minutes, each once (${JSON.stringify(view)})`)
    assert.strictEqual(new Set(all.map((r) => r.executionId)).size, 7)
    assert.deepStrictEqual([view.started, view.notStarted, view.lastTickAt, view.nextFireAt], [7, 0, 70 * minute, 80 * minute], "each tick started once, none missed")
    if (onTime) assert.deepStrictEqual(all.slice(0, 2).map((r) => r.createdAt), [10 * minute, 20 * minute], "on time while the first leader lived")
  }).pipe(Effect.provide(Layer.fresh(stores)))
