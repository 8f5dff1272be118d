/**
 * Keyed starts over a real backend (run by test/pg/keyed.test.ts): three
 * instances on the TestClock over one database. Four starts of one
 * concurrency key with limit 1 run one at a time (checked at every step of
 * the clock), in arrival order; a burst of three debounced starts is one
 * execution, run once with the last input.
 */
import { assert, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { ConcurrencyKeyStore } from "../../../src/stores/ConcurrencyKeyStore.ts"
import { Harness } from "../../../src/testing/index.ts"
import { job, makeLog, statuses } from "./fixtures.ts"

export const backendScenario = (name: string, stores: () => Layer.Layer<any, any>) =>
  it.effect(`${name}: one key with limit 1 runs one at a time, in arrival order; a debounced burst runs once with the last input`, () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log, "1 second", `keyed-job-${name}`)
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
      const opts = { concurrencyKey: { key: `k-${name}`, limit: 1 } }
      const handles = []
      for (let n = 1; n <= 4; n++) handles.push(yield* h.baton(n % 3).start(wf, { n }, opts))
      const ids = handles.map((x) => x.executionId)
      // A real database answers in real time, which the harness's settling does not see: move 50 ms at a time.
      for (let i = 0; i < 400; i++) {
        const now = yield* statuses("default", ids)
        assert.isAtMost(log.inStep.size, 1, `one in its step at step ${i}`)
        assert.isAtMost((yield* ConcurrencyKeyStore.use((s) => s.list("default", opts.concurrencyKey.key))).filter((e) => e.admitted).length, 1)
        if (now.every((s) => s === "Finished")) break
        yield* h.advance(50)
      }
      assert.deepStrictEqual(yield* statuses("default", ids), ["Finished", "Finished", "Finished", "Finished"])
      assert.deepStrictEqual(log.began, [1, 2, 3, 4], "arrival order")

      const debounce = { key: `d-${name}`, window: "2 seconds" } as const
      const burst = []
      for (let n = 5; n <= 7; n++) {
        burst.push(yield* h.baton(n % 3).start(wf, { n }, { debounce }))
        yield* h.advance(500)
      }
      assert.strictEqual(new Set(burst.map((b) => b.executionId)).size, 1, "one execution")
      for (let i = 0; i < 400; i++) {
        if ((yield* statuses("default", [burst[0]!.executionId]))[0] === "Finished") break
        yield* h.advance(50)
      }
      const done = yield* h.baton(0).await(burst[0]!)
      assert.deepStrictEqual(done._tag === "Finished" && done.output.done, 7)
      assert.deepStrictEqual(log.began, [1, 2, 3, 4, 7], "the burst ran once, with the last input")
    }).pipe(Effect.scoped, Effect.provide(stores())), 60_000)
