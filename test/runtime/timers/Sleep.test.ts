/**
 * Durable sleep across instances on the TestClock: the tree rests with no
 * lease and no pass while it sleeps, `status` shows when it wakes, it is
 * never woken early, the instance that would have woken it may die and
 * another wakes it on time, two sweeping instances wake it exactly once, a
 * resting sleep can be cancelled, and the node form sleeps until an instant.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { MemoryStores } from "../../../layers/memory/index.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { TimerStore } from "../../../src/stores/TimerStore.ts"
import { Harness } from "../../../src/testing/index.ts"
import { napper, type Runs, sleepsUntil } from "./timerFixtures.ts"

const hour = 3_600_000

const timersOf = (root: string) => TimerStore.use((t) => t.listByRoot("default", root))

describe("durable sleep", () => {
  it.effect("a sleeping tree rests: no lease, no pass, one timer row; status shows when it wakes; it wakes on time, not before", () =>
    Effect.gen(function*() {
      const runs: Runs = { at: [] }
      const wf = napper(runs)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      const t0 = (yield* h.baton(1).status(started.executionId)).createdAt
      const status = yield* h.baton(1).status(started.executionId)
      assert.strictEqual(status.status, "Paused")
      assert.deepStrictEqual(status.pendingPauses, [], "a sleep is no pause to resume")
      assert.strictEqual(status.waits?.length, 1)
      assert.strictEqual(status.waits?.[0]?._tag, "Sleep")
      assert.strictEqual(status.wakesAt, t0 + hour, "status shows when it wakes")
      const lease = yield* LeaseStore.use((l) => l.get("default", started.executionId))
      assert.isTrue(Option.isNone(lease) || Option.isNone(Option.filter(lease, (x) => x.holder !== null && x.expiresAt > t0 + 60_000)), "no lease is held while it sleeps")
      assert.strictEqual(h.instances.reduce((n, i) => n + i.instance.passes.active.size, 0), 0, "no busy instance")
      assert.strictEqual((yield* timersOf(started.executionId)).length, 1, "one timer row")
      yield* h.advance(hour - 1 - (status.updatedAt - t0))
      assert.strictEqual((yield* h.baton(0).status(started.executionId)).status, "Paused", "not woken a millisecond early")
      assert.deepStrictEqual(runs.at, [])
      yield* h.advance(1)
      const done = yield* h.baton(1).await(started)
      assert.strictEqual(done._tag, "Finished")
      assert.deepStrictEqual(done._tag === "Finished" && done.output.log, ["before", "woke", "after"])
      assert.strictEqual(runs.at.length, 1, "the step went past its sleep once")
      assert.deepStrictEqual(yield* timersOf(started.executionId), [], "the timer went with the tree")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("the instance that would have woken it is killed: another wakes it on time", () =>
    Effect.gen(function*() {
      const runs: Runs = { at: [] }
      const wf = napper(runs)
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      const { wakesAt } = yield* h.baton(1).status(started.executionId)
      yield* h.kill(0)
      yield* h.advance(hour - 1)
      assert.strictEqual((yield* h.baton(2).status(started.executionId)).status, "Paused")
      yield* h.advance(1)
      const status = yield* h.baton(2).status(started.executionId)
      assert.strictEqual(status.status, "Finished", `woken at its time ${wakesAt} by a live instance`)
      assert.strictEqual(runs.at.length, 1)
      assert.notStrictEqual(runs.at[0]?.instanceId, "instance-0")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("a sleep shorter than the sweep interval, its starter killed: another instance heard the tree rest and wakes it on time", () =>
    Effect.gen(function*() {
      const runs: Runs = { at: [] }
      const wf = napper(runs, "1 minute", "napper-short")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], sweepInterval: "10 minutes" } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      yield* h.kill(0)
      yield* h.advance("1 minute")
      assert.strictEqual((yield* h.baton(1).status(started.executionId)).status, "Finished", "woken at its time, not at the next sweep interval")
      assert.deepStrictEqual(runs.at.map((r) => r.instanceId), ["instance-1"])
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("two sweeping instances meet one due timer: exactly one wakes it", () =>
    Effect.gen(function*() {
      const runs: Runs = { at: [] }
      const wf = napper(runs, "10 minutes")
      let due = -1
      const claims: Array<string> = []
      const looks = new Set<string>()
      const store = yield* TimerStore
      // Both instances' wakers look at the wake instant: note who looked and who got the timer.
      const counting: typeof store = {
        ...store,
        claimDue: (now, limit, claimant, ms) =>
          Effect.tap(store.claimDue(now, limit, claimant, ms), (got) =>
            Effect.sync(() => {
              if (now === due) looks.add(claimant)
              got.forEach(() => claims.push(claimant))
            }))
      }
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } }).pipe(Effect.provideService(TimerStore, counting))
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      due = (yield* h.baton(1).status(started.executionId)).wakesAt!
      yield* h.advance("10 minutes")
      assert.strictEqual((yield* h.baton(1).await(started))._tag, "Finished")
      assert.deepStrictEqual([...looks].sort(), ["instance-0", "instance-1"], "both instances looked at the due instant")
      assert.deepStrictEqual(claims.length, 1, "one claim of the timer")
      assert.strictEqual(runs.at.length, 1, "woken once")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("a resting sleep is cancelled from another instance: the tree ends Cancelled, its timer goes, nothing wakes", () =>
    Effect.gen(function*() {
      const runs: Runs = { at: [] }
      const wf = napper(runs, "30 days")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const started = yield* h.baton(0).start(wf, {})
      yield* h.settle
      assert.strictEqual((yield* timersOf(started.executionId)).length, 1, "a 30-day sleep is one row")
      assert.isTrue((yield* h.baton(1).cancel(started.threadId)).cancelled)
      assert.strictEqual((yield* h.baton(0).status(started.executionId)).status, "Cancelled")
      assert.deepStrictEqual(yield* timersOf(started.executionId), [])
      yield* h.advance("1 hour")
      assert.deepStrictEqual(runs.at, [])
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))

  it.effect("Workflow.sleepNode sleeps until an instant from the state; one in the past goes on at once", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [sleepsUntil] } })
      const now = (yield* h.baton(0).execute(sleepsUntil, { until: 0 }))
      assert.strictEqual(now._tag, "Finished", "an instant passed already: no rest")
      const t = (yield* h.baton(0).status(now.executionId)).updatedAt
      const later = yield* h.baton(0).start(sleepsUntil, { until: t + 5_000 })
      yield* h.settle
      assert.strictEqual((yield* h.baton(0).status(later.executionId)).wakesAt, t + 5_000)
      yield* h.advance("5 seconds")
      assert.strictEqual((yield* h.baton(0).await(later))._tag, "Finished")
    }).pipe(Effect.scoped, Effect.provide(MemoryStores.layer)))
})
