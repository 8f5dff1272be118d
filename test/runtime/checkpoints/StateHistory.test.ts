/**
 * `Baton.checkpoints`: a thread's state history read from another
 * instance, page by page — ids, parents, steps, sources, the nodes whose
 * step wrote each one, when, and the execution that wrote it — tenant- and
 * owner-checked; and over HTTP.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Effect, Fiber, Layer } from "effect"
import { Workflow } from "../../../src/index.ts"
import type { CheckpointsOptions, CheckpointView } from "../../../src/runtime/Baton.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag } from "../fixtures.ts"

const State = Annotation.Root({ count: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) })

/** `step` five times (a checkpoint each), then `done`. */
const counter = Workflow.make({
  name: "counter",
  version: "1",
  graph: new StateGraph(State)
    .addNode("step", Workflow.step(async (s: typeof State.State) => ({ count: s.count + 1 })))
    .addNode("done", Workflow.step(async (s: typeof State.State) => ({ count: s.count * 10 })))
    .addEdge(START, "step")
    .addConditionalEdges("step", (s: typeof State.State) => (s.count < 5 ? "step" : "done"))
    .addEdge("done", END)
})

for (const backend of backends) {
  describe(`checkpoints (state history) on ${backend.name}`, () => {
    it.effect("pages a thread's checkpoints newest first with step, source, nodes, time, parent and the writing execution", () =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [counter] } })
        yield* h.advance("5 seconds")
        const scope = { tenantId: "acme", ownerId: "ann" }
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(counter, {}, { ...scope, threadId: "h" })))
        assert.strictEqual(out._tag, "Finished")
        const all: Array<CheckpointView> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = yield* Fiber.join(yield* h.run(1, (b) => b.checkpoints("h", { ...scope, limit: 3, cursor })))
          assert.isAtMost(page.checkpoints.length, 3)
          all.push(...page.checkpoints)
          cursor = page.next ?? undefined
          pages++
        } while (cursor !== undefined)
        // The input (-1), its writes applied (0), `step` five times (1..5), `done` (6): 8 checkpoints.
        assert.deepStrictEqual(all.map((c) => c.step), [6, 5, 4, 3, 2, 1, 0, -1], "newest first, each once")
        assert.strictEqual(pages, 3)
        assert.deepStrictEqual(all.map((c) => c.source), ["loop", "loop", "loop", "loop", "loop", "loop", "loop", "input"])
        assert.deepStrictEqual(all[0]!.nodes, ["done"])
        assert.deepStrictEqual(all[1]!.nodes, ["step"], "known across a page boundary too")
        assert.deepStrictEqual(all[3]!.nodes, ["step"], "the oldest of a page reads its parent")
        assert.deepStrictEqual(all[7]!.nodes, [], "the input checkpoint: no node wrote it")
        all.forEach((c, i) => assert.strictEqual(c.parentCheckpointId, all[i + 1]?.checkpointId ?? null, "each one's parent is the next older"))
        assert.isTrue(all.every((c) => c.executionId === out.executionId), "written by the execution")
        assert.isTrue(all.every((c) => c.createdAt === 5_000), "at the writer's Clock time (the TestClock stood at 5 s)")
        assert.isTrue(all.every((c) => c.checkpointNs === ""))
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("another tenant's thread is unknown, another owner's refused; a bad cursor or limit is InvalidInputError", () =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [counter] } })
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(counter, {}, { tenantId: "acme", ownerId: "ann", threadId: "h" })))
        const read = (options: CheckpointsOptions) =>
          Effect.flatMap(h.run(0, (b) => b.checkpoints("h", options)), Fiber.await)
        assert.strictEqual(errorTag(yield* read({ tenantId: "beta", ownerId: "ann" })), "UnknownThreadError")
        assert.strictEqual(errorTag(yield* read({ tenantId: "acme", ownerId: "bob" })), "ThreadOwnerError")
        assert.strictEqual(errorTag(yield* read({ tenantId: "acme", ownerId: "ann", cursor: "nope" })), "InvalidInputError")
        assert.strictEqual(errorTag(yield* read({ tenantId: "acme", ownerId: "ann", limit: 0 })), "InvalidInputError")
        assert.strictEqual(errorTag(yield* read({ tenantId: "acme", ownerId: "ann", limit: 1 })), "Success")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
