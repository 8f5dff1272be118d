/**
 * One scenario of sleeps and signals over a real backend (run by
 * test/sqlite/timers.test.ts and test/pg/timers.test.ts): two instances on
 * the TestClock over one database; the instance a sleep started on is killed
 * and the other wakes it at its time, not before; a signal sent from the
 * live instance wakes a waiting tree with its payload, once.
 */
import { assert, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { TimerStore } from "../../../src/stores/TimerStore.ts"
import { Harness } from "../../../src/testing/index.ts"
import { approver, napper, type Runs } from "./timerFixtures.ts"

/** Moves the clock 10 ms at a time (at most 200 times) until the execution ended. */
const untilEnded = (h: Harness.Harness, executionId: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const { status } = yield* h.baton(1).status(executionId)
      if (status !== "Paused" && status !== "Running") return
      yield* h.advance(10)
    }
  })

export const backendScenario = (name: string, stores: () => Layer.Layer<any, any>) =>
  it.effect(`${name}: a killed instance's sleep wakes on time on the other; a signal wakes a wait once`, () =>
    Effect.gen(function*() {
      const runs: Runs = { at: [] }
      const sleeper = napper(runs, "10 minutes", `napper-${name}`)
      const waiter = approver(undefined, `approver-${name}`)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [sleeper, waiter] } })
      const sleeping = yield* h.baton(0).start(sleeper, {})
      const waiting = yield* h.baton(0).start(waiter, {})
      yield* h.settle
      const { wakesAt } = yield* h.baton(1).status(sleeping.executionId)
      assert.strictEqual((yield* TimerStore.use((t) => t.listByRoot("default", sleeping.executionId))).length, 1, "one row per sleep")
      yield* h.kill(0)
      yield* h.advance(wakesAt! - (yield* h.baton(1).status(sleeping.executionId)).updatedAt - 1)
      assert.strictEqual((yield* h.baton(1).status(sleeping.executionId)).status, "Paused", "not early")
      yield* h.advance(1)
      // A real database answers in real time, which the harness's settling does not see: let its queries land.
      yield* untilEnded(h, sleeping.executionId)
      assert.strictEqual((yield* h.baton(1).status(sleeping.executionId)).status, "Finished")
      assert.deepStrictEqual(runs.at.map((r) => r.instanceId), ["instance-1"])
      const sent = yield* h.baton(1).signal(waiting.threadId, "approve", { by: name })
      yield* untilEnded(h, waiting.executionId)
      const done = yield* h.baton(1).await(waiting)
      assert.deepStrictEqual(done._tag === "Finished" && done.output.got, { _tag: "Received", payload: { by: name }, seq: sent.seq })
      assert.deepStrictEqual(done._tag === "Finished" && done.output.log, ["ask", "Received"])
    }).pipe(Effect.scoped, Effect.provide(stores())), 60_000)
