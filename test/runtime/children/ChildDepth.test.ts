/**
 * `maxChildDepth`: a child deeper than the limit of the instance that runs it
 * is refused there, before it is recorded; its launching step fails with
 * `ChildExecutionsFailedError` naming `ChildDepthExceededError`. Checked
 * where the child runs: a worker with a lower limit than the launcher refuses
 * a child the launcher would have run.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
import type { Placement } from "../../../src/runtime/Children.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const Leaf = Annotation.Root({ n: Annotation<number>() })
const leaf = Workflow.make({
  name: "leaf",
  version: "1",
  graph: new StateGraph(Leaf).addNode("work", Workflow.step(async () => ({ n: 1 }))).addEdge(START, "work").addEdge("work", END)
})
const State = Annotation.Root({ failed: Annotation<string>(), n: Annotation<number>() })
/** Launches one `child`, keeping the failure's first tag. */
const launcher = (name: string, child: Workflow.AnyWorkflow, placement: Placement) =>
  Workflow.make({
    name,
    version: "1",
    children: [child],
    graph: new StateGraph(State)
      .addNode("fan", Workflow.step(async (_s, ctx) => {
        try {
          const outs = await ctx.launch(child, [{}], { placement })
          // a middle child that caught its own child's refusal passes it on
          return { failed: (outs[0] as { failed?: string }).failed ?? "none", n: 1 }
        } catch (e) {
          const failures = (e as { failures?: Array<{ tag: string; message: string }> }).failures
          if (failures === undefined) throw e
          return { failed: failures[0]!.tag, n: 0 }
        }
      }))
      .addEdge(START, "fan").addEdge("fan", END)
  })

const failedOf = (out: unknown) => (out as { _tag: string; output: { failed: string } }).output.failed

for (const backend of backends) {
  describe(`maxChildDepth on ${backend.name}`, () => {
    for (const placement of ["parent", "any"] as const) {
      it.effect(`placement ${placement}: root → middle → leaf (depth 3) with maxChildDepth 2 — the leaf is refused, never recorded; with 3 it runs`, () =>
        Effect.gen(function*() {
          const middle = launcher("middle", leaf, placement)
          const root = launcher("root", middle, placement)
          const h = yield* Harness.make({ instances: 1, baton: { workflows: [root], maxChildDepth: 2 } })
          const run = yield* h.run(0, (b) => b.execute(root, {}))
          for (let i = 0; i < 20 && run.pollUnsafe() === undefined; i++) yield* h.advance("1 second")
          assert.strictEqual(failedOf(yield* Fiber.join(run)), "ChildDepthExceededError")
          const leaves = (yield* RecordStore.use((r) => r.findByStatus("Running", 100, Option.none()))).filter((r) => r.depth === 3)
          assert.strictEqual(leaves.length, 0)
          const deeper = yield* Harness.make({ instances: 1, baton: { workflows: [root], maxChildDepth: 3 } })
          const ok = yield* deeper.run(0, (b) => b.execute(root, {}))
          for (let i = 0; i < 20 && ok.pollUnsafe() === undefined; i++) yield* deeper.advance("1 second")
          assert.strictEqual(failedOf(yield* Fiber.join(ok)), "none")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    }

    it.effect("checked where the child runs: a worker with maxChildDepth 1 refuses the queued child a launcher without a limit queued", () =>
      Effect.gen(function*() {
        const root = launcher("root", leaf, "any")
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [root] },
          instanceOptions: (i) => (i === 0 ? { maxClaimedChildren: 0 } : { maxChildDepth: 1 })
        })
        const run = yield* h.run(0, (b) => b.execute(root, {}))
        for (let i = 0; i < 20 && run.pollUnsafe() === undefined; i++) yield* h.advance("1 second")
        assert.strictEqual(failedOf(yield* Fiber.join(run)), "ChildDepthExceededError")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("maxChildDepth in BatonConfig", () => {
  it.effect("a whole number from 1; a bad one fails the build naming the field", () =>
    Effect.gen(function*() {
      const bad = yield* Effect.exit(BatonConfig.make({ maxChildDepth: 0 }))
      assert.isTrue(Exit.isFailure(bad))
      const error = Option.getOrUndefined(Exit.findErrorOption(bad)) as { _tag: string; field: string }
      assert.strictEqual(error._tag, "BatonConfigError")
      assert.strictEqual(error.field, "maxChildDepth")
    }))
})
