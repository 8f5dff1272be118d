/**
 * A workflow's `recursionLimit`: LangGraph's limit on the steps of one pass,
 * passed to every invoke of the workflow's graph (a loop longer than
 * LangGraph's default 25 fails without it, finishes with it), and checked
 * when the Layer is built.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Cause, Effect, Exit, Fiber, Layer } from "effect"
import { Baton, Workflow } from "../../../src/index.ts"
import { MemoryStores } from "../../../layers/memory/index.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const Count = Annotation.Root({ n: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) })

/** `tick` 40 times. */
const looping = (name: string, recursionLimit?: number) =>
  Workflow.make({
    name,
    version: "1",
    ...(recursionLimit === undefined ? {} : { recursionLimit }),
    graph: new StateGraph(Count)
      .addNode("tick", Workflow.step(async (s: typeof Count.State) => ({ n: s.n + 1 })))
      .addEdge(START, "tick")
      .addConditionalEdges("tick", (s: typeof Count.State) => (s.n < 40 ? "tick" : END))
  })

for (const backend of backends) {
  describe(`recursionLimit on ${backend.name}`, () => {
    it.effect("a 40-step loop fails at LangGraph's default limit and finishes with recursionLimit 100", () =>
      Effect.gen(function*() {
        const short = looping("looping")
        const long = looping("looping-long", 100)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [short, long] } })
        const failed = yield* Fiber.await(yield* h.run(0, (b) => b.execute(short, {}, { threadId: "short" })))
        assert.isTrue(Exit.isFailure(failed), "the default limit stops the loop")
        const error = Exit.isFailure(failed) ? Cause.squash(failed.cause) as { _tag?: string; message?: string } : undefined
        assert.strictEqual(error?._tag, "ExecutionFailedError")
        assert.match(error?.message ?? "", /Recursion limit of 25/)
        const done = yield* Fiber.join(yield* h.run(0, (b) => b.execute(long, {}, { threadId: "long" })))
        assert.strictEqual(done._tag, "Finished")
        assert.deepStrictEqual(done._tag === "Finished" ? done.output : undefined, { n: 40 })
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("recursionLimit is checked at Layer build", () => {
  it.effect("0, 1.5 and 2,000,000 are refused naming the workflow and the range", () =>
    Effect.gen(function*() {
      for (const bad of [0, 1.5, 2_000_000]) {
        const exit = yield* Effect.exit(Effect.scoped(Layer.build(Baton.layer({ workflows: [looping("looping", bad)] }).pipe(Layer.provide(Layer.fresh(MemoryStores.layer))))))
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) as { _tag?: string; field?: string; message: string } : undefined
        assert.strictEqual(error?._tag, "BatonConfigError")
        assert.strictEqual(error?.field, "workflows")
        assert.match(error?.message ?? "", /workflow "looping": recursionLimit must be a whole number from 1 to 1000000/)
      }
    }))
})
