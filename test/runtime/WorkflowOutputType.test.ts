/**
 * The type of `Finished.output`: without an `output` schema it is the graph's
 * state, inferred from the `StateGraph` given to `Workflow.make`; with one it
 * is the schema's type. Checked by `npm run typecheck` (expectTypeOf), and the
 * inferred type is the value a run hands back.
 */
import { assert, describe, expectTypeOf, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Effect, Layer, Schema } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import { Baton, Workflow } from "../../src/index.ts"

const State = Annotation.Root({
  total: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const graph = () =>
  new StateGraph(State)
    .addNode("add", Workflow.step(async (s: typeof State.State) => ({ total: s.total + 1, log: ["added"] })))
    .addEdge(START, "add")
    .addEdge("add", END)

const inferred = Workflow.make({ name: "inferred", version: "1", graph: graph() })
const declared = Workflow.make({ name: "declared", version: "1", graph: graph(), output: Schema.Struct({ total: Schema.Number }) })

describe("Workflow.make's output type", () => {
  it("without an output schema: the graph's state type", () => {
    expectTypeOf(inferred).toEqualTypeOf<Workflow.Workflow<unknown, { total: number; log: Array<string> }, unknown, never>>()
    expectTypeOf<Workflow.GraphOutput<ReturnType<typeof graph>>>().toEqualTypeOf<typeof State.State>()
  })

  it("with an output schema: the schema's type", () => {
    expectTypeOf(declared).toEqualTypeOf<Workflow.Workflow<unknown, { readonly total: number }, unknown, never>>()
  })

  it.effect("a finished execution's output has that type, and holds that value", () =>
    Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const out = yield* baton.execute(inferred, { total: 1, log: [] })
      expectTypeOf(out).toEqualTypeOf<Baton.ExecutionOutput<typeof State.State>>()
      assert.strictEqual(out._tag, "Finished")
      if (out._tag === "Finished") {
        const total: number = out.output.total
        assert.deepStrictEqual([total, out.output.log], [2, ["added"]])
      }
    }).pipe(Effect.provide(Baton.layer({ workflows: [inferred] }).pipe(Layer.provide(MemoryStores.layer)))))
})
