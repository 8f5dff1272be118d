/**
 * The warning a close logs at its deadline names how many step bodies are
 * still running then, and which (each body's node and step key): a step that
 * ignores its abort signal is one. (The count
 * was read when the wait began, before the body was tracked: it said 0 while
 * the body ran on.) On the TestClock; the body is a promise the test holds.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import * as Baton from "../../../src/runtime/Baton.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { memoryStores } from "../fixtures.ts"

const State = Annotation.Root({ x: Annotation<number>() })

describe("close at its deadline", () => {
  it.effect("logs the step bodies still running then", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      let started = false
      let release: () => void = () => {}
      const stuck = Workflow.make({
        name: "stuck",
        version: "1",
        graph: new StateGraph(State)
          .addNode("n", Workflow.step(() => {
            started = true
            return new Promise<{ x: number }>((resolve) => (release = () => resolve({ x: 1 })))
          }))
          .addEdge(START, "n")
          .addEdge("n", END)
      })
      yield* Effect.gen(function*() {
        const baton = yield* Baton.Baton
        yield* baton.start(stuck, {})
        while (!started) yield* Effect.yieldNow
        const closing = yield* Effect.forkChild(baton.close({ timeout: "1 second" }))
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(closing)
        release()
      }).pipe(Effect.provide(
        Baton.layer({ workflows: [stuck] }).pipe(
          Layer.provide(Layer.fresh(memoryStores)),
          Layer.provide(Logger.layer([Logger.make(({ message }) => logs.push(String(message)))]))
        )
      ))
      const warning = logs.find((line) => line.includes("step bodies still running at the close deadline"))
      assert.isDefined(warning, logs.join("\n"))
      assert.include(warning!, "still running at the close deadline: 1 of execution")
      // Named: the node (and step key) of each body still running when the close's grace ended.
      assert.match(warning!, /: 1 of execution \S+: n \(\S+\)$/)
    }))
})
