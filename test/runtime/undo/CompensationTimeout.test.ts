/**
 * A per-undo `compensationTimeout`: a try of the undo that runs longer (on
 * the Clock) counts as a failed try and the next try runs after the backoff;
 * without it, one hanging try holds the unwinding. A bad value is refused
 * when the step is made, naming the field.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { type Duration, Effect, Fiber, Layer } from "effect"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({ booked: Annotation<string>() })

/** book (undo: its first try hangs for an hour, the next ones return at once) → fail. */
const trip = (tries: Array<number>, undone: Array<number>, compensationTimeout?: Duration.Input) => {
  const book = Workflow.effectStep(() => Effect.succeed({ booked: "LH1" }), {
    undo: (_result, ctx) =>
      Effect.gen(function*() {
        tries.push(ctx.attempt)
        if (ctx.attempt === 1) yield* Effect.sleep("1 hour")
        undone.push(ctx.attempt)
      }),
    ...(compensationTimeout === undefined ? {} : { compensationTimeout })
  })
  return Workflow.make({
    name: "trip",
    version: "1",
    graph: new StateGraph(State)
      .addNode("book", book)
      .addNode("hotel", Workflow.step(async (): Promise<{ booked: string }> => {
        throw new Error("no room left")
      }))
      .addEdge(START, "book").addEdge("book", "hotel").addEdge("hotel", END),
    steps: { book }
  })
}

for (const backend of backends) {
  describe(`compensationTimeout on ${backend.name}`, () => {
    it.effect("a try past compensationTimeout fails (timed out) and the next try runs after the backoff: the execution ends Failed, undone", () =>
      Effect.gen(function*() {
        const tries: Array<number> = []
        const undone: Array<number> = []
        const wf = trip(tries, undone, "10 seconds")
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], undoBackoff: "1 second" } })
        const run = yield* h.run(0, (b) => b.execute(wf, { booked: "" }))
        for (let i = 0; i < 30 && run.pollUnsafe() === undefined; i++) yield* h.advance("1 second")
        assert.deepStrictEqual(tries, [1, 2])
        assert.deepStrictEqual(undone, [2], "the second try undid it")
        const error = yield* Effect.flip(Fiber.join(run))
        assert.strictEqual(error._tag, "ExecutionFailedError")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("without it, the hanging try holds the unwinding", () =>
      Effect.gen(function*() {
        const tries: Array<number> = []
        const undone: Array<number> = []
        const wf = trip(tries, undone)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], undoBackoff: "1 second" } })
        const run = yield* h.run(0, (b) => b.execute(wf, { booked: "" }))
        for (let i = 0; i < 30; i++) yield* h.advance("1 second")
        assert.deepStrictEqual(tries, [1])
        assert.strictEqual(run.pollUnsafe(), undefined)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("compensationTimeout is checked when the step is made", () => {
  it("a bad value throws InvalidInputError naming the field", () => {
    let caught: unknown
    try {
      Workflow.step(async () => ({}), { undo: () => undefined, compensationTimeout: "soon" as Duration.Input })
    } catch (e) {
      caught = e
    }
    assert.strictEqual((caught as { _tag?: string })._tag, "InvalidInputError")
    assert.strictEqual((caught as { field?: string }).field, "compensationTimeout")
  })
})
