/**
 * An Effect undo runs with the instance's Clock as it is: one that reads the
 * time (a span, an SQL query, `Clock.currentTimeNanos`) works on the live
 * Clock too, not only on the TestClock. Run live, with memory stores: the
 * undo reads the Clock and opens a span, and the booking it undoes is gone.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { MemoryStores } from "../../../layers/memory/index.ts"
import * as Baton from "../../../src/runtime/Baton.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"

const State = Annotation.Root({ booked: Annotation<string>() })
type State = typeof State.State

describe("an Effect undo on the live Clock", () => {
  it.live("reads the Clock and opens a span: the undo succeeds and the execution ends Failed with its booking undone", () =>
    Effect.gen(function*() {
      const booked = new Set<string>()
      const undoneAt: Array<bigint> = []
      const book = Workflow.effectStep(
        (_: State, ctx) => Effect.sync(() => (booked.add(ctx.idempotencyKey), { booked: ctx.idempotencyKey })),
        {
          undo: (result) =>
            Effect.gen(function*() {
              undoneAt.push(yield* Clock.currentTimeNanos)
              booked.delete(result.booked)
            }).pipe(Effect.withSpan("cancel booking"))
        }
      )
      const fail = Workflow.step(async (): Promise<Partial<State>> => {
        throw new Error("no room left")
      })
      const trip = Workflow.make({
        name: "trip",
        version: "1",
        graph: new StateGraph(State).addNode("book", book).addNode("fail", fail)
          .addEdge(START, "book").addEdge("book", "fail").addEdge("fail", END),
        steps: { book }
      })
      const failed = yield* Effect.gen(function*() {
        return yield* Effect.flip((yield* Baton.Baton).execute(trip, {}))
      }).pipe(
        Effect.provide(Baton.layer({ workflows: [trip], undoAttempts: 1 }).pipe(Layer.provide(MemoryStores.layer)))
      )
      assert.strictEqual(failed._tag, "ExecutionFailedError", `ended ${failed._tag}: ${failed.message}`)
      assert.strictEqual(undoneAt.length, 1, "the undo read the Clock once")
      assert.strictEqual(booked.size, 0, "the booking was undone")
    }))
})
