/**
 * Reported from the e2e worker: an Effect step runs on the runtime's
 * step clock — the instance's Clock with its sleeps counted as parked. Every
 * Clock method must work there: built by spreading a Clock object, it lost the
 * live Clock's prototype methods, and a Schedule in a step body died with
 * "clock.currentTimeNanosUnsafe is not a function" / "clock.currentTimeMillisUnsafe
 * is not a function".
 *
 * The live Clock is the point (the TestClock is a plain object, which a
 * spread keeps): the step reads it and retries with zero-length schedules, so
 * nothing waits on real time.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, DateTime, Effect, Layer, Schedule } from "effect"
import * as Baton from "../../../src/runtime/Baton.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One Effect step that uses every part of the Clock a step body may reach. */
const clockUser = (seen: Array<string>) =>
  Workflow.make({
    name: "clock-user",
    version: "1",
    graph: new StateGraph(State)
      .addNode("uses-clock", Workflow.effectStep(() =>
        Effect.gen(function*() {
          const clock = yield* Clock.Clock
          const before = Date.now()
          seen.push(`millisUnsafe:${clock.currentTimeMillisUnsafe() >= before}`)
          seen.push(`nanosUnsafe:${typeof clock.currentTimeNanosUnsafe()}`)
          seen.push(`monotonicUnsafe:${typeof clock.monotonicTimeNanosUnsafe()}`)
          seen.push(`millis:${(yield* Clock.currentTimeMillis) >= before}`)
          seen.push(`nanos:${typeof (yield* Clock.currentTimeNanos)}`)
          seen.push(`dateTime:${DateTime.toEpochMillis(yield* DateTime.now) >= before}`)
          // A Schedule reads the clock at every step: two failures, then success.
          let tries = 0
          const flaky = Effect.suspend(() => (++tries < 3 ? Effect.fail(new Error(`try ${tries}`)) : Effect.succeed(tries)))
          seen.push(`retried:${yield* Effect.retry(flaky, Schedule.recurs(5))}`)
          tries = 0
          seen.push(`retriedSpaced:${yield* Effect.retry(flaky, { schedule: Schedule.spaced(0), times: 5 })}`)
          seen.push(`timeout:${yield* Effect.timeout(Effect.succeed("in time"), "1 minute")}`)
          const [elapsed] = yield* Effect.timed(Effect.void)
          seen.push(`timed:${elapsed !== undefined}`)
          return { log: ["done"] }
        })
      ))
      .addEdge(START, "uses-clock")
      .addEdge("uses-clock", END)
  })

for (const backend of backends) {
  describe(`an Effect step on the live Clock, on ${backend.name}`, () => {
    it.live("reaches every Clock method: unsafe reads, DateTime.now, a retry Schedule, a timeout", () =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        const wf = clockUser(seen)
        const context = yield* Layer.build(Baton.layer({ workflows: [wf] }).pipe(Layer.provide(Layer.fresh(backend.stores))))
        const out = yield* Context.get(context, Baton.Baton).execute(wf, { log: [] })
        assert.strictEqual(out._tag, "Finished", `the step failed: ${JSON.stringify(out)}`)
        assert.deepStrictEqual(seen, [
          "millisUnsafe:true",
          "nanosUnsafe:bigint",
          "monotonicUnsafe:bigint",
          "millis:true",
          "nanos:bigint",
          "dateTime:true",
          "retried:3",
          "retriedSpaced:3",
          "timeout:in time",
          "timed:true"
        ])
      }).pipe(Effect.scoped))
  })
}
