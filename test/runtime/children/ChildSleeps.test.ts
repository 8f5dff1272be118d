/**
 * Sleeps and signal waits in launched children, for both placements: a
 * child rests on its timer like a root; the parent's caller sees the wait
 * in `status().waits` marked with its child (not as a pause to answer);
 * another instance's waker wakes it at its time — the launching instance
 * killed — or a signal sent to the child's thread wakes it, and the parent
 * finishes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Effect, Layer, Schema } from "effect"
import type { Placement } from "../../../src/runtime/Children.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const ChildState = Annotation.Root({ item: Annotation<string>(), got: Annotation<string>() })

/** nap: sleeps 10 minutes, then notes where it woke. */
const napping = (log: Array<string>) =>
  Workflow.make({
    name: "napping-child",
    version: "1",
    graph: new StateGraph(ChildState)
      .addNode("nap", Workflow.step(async (s: typeof ChildState.State, ctx) => {
        await ctx.sleep("10 minutes")
        log.push(`${s.item}@${ctx.instanceId}`)
        return { got: s.item }
      }))
      .addEdge(START, "nap").addEdge("nap", END)
  })

/** wait: waits for the signal "go" and keeps its payload. */
const waiting = Workflow.make({
  name: "waiting-child",
  version: "1",
  signals: { go: Schema.String },
  graph: new StateGraph(ChildState)
    .addNode("wait", Workflow.step(async (s: typeof ChildState.State, ctx) => {
      const got = await ctx.waitFor<string>("go")
      return { got: got._tag === "Received" ? `${s.item}:${got.payload}` : `${s.item}:timed out` }
    }))
    .addEdge(START, "wait").addEdge("wait", END)
})

const ParentState = Annotation.Root({ items: Annotation<Array<string>>(), got: Annotation<Array<string>>() })

const parentOf = (child: Workflow.AnyWorkflow, placement: Placement) =>
  Workflow.make({
    name: `parent-of-${child.name}-${placement}`,
    version: "1",
    children: [child],
    graph: new StateGraph(ParentState)
      .addNode("fan", Workflow.step(async (s: typeof ParentState.State, ctx) => {
        const outs = await ctx.launch(child, s.items.map((item) => ({ item })), { placement })
        return { got: outs.map((o) => (o as { got: string }).got) }
      }))
      .addEdge(START, "fan").addEdge("fan", END)
  })

/** Moves the Clock a second at a time (at most 30 times) until the execution finished. */
const untilFinished = (h: Harness.Harness, executionId: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 30 && (yield* h.baton(1).status(executionId)).status !== "Finished"; i++) yield* h.advance("1 second")
  })

for (const backend of backends) {
  describe(`children that sleep and wait on ${backend.name}`, () => {
    for (const placement of ["any", "parent"] as const) {
      it.effect(`placement ${placement}: a child's sleep wakes on time on another instance, the launcher killed`, () =>
        Effect.gen(function*() {
          const log: Array<string> = []
          const child = napping(log)
          const parent = parentOf(child, placement)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent, child] } })
          const started = yield* h.baton(0).start(parent, { items: ["a", "b"], got: [] })
          yield* h.settle
          const resting = yield* h.baton(1).status(started.executionId)
          assert.strictEqual(resting.status, "Paused")
          assert.deepStrictEqual(resting.pendingPauses, [], "a sleep is no pause for the caller to answer")
          assert.deepStrictEqual((resting.waits ?? []).map((w) => [w._tag, w._tag === "Sleep" && w.wakesAt, w.child?.workflowName]), [
            ["Sleep", 600_000, "napping-child"],
            ["Sleep", 600_000, "napping-child"]
          ])
          assert.strictEqual(resting.wakesAt, 600_000)
          yield* h.kill(0)
          yield* h.advance(600_000 - 1)
          assert.deepStrictEqual(log, [], "not early")
          yield* h.advance(1)
          yield* untilFinished(h, started.executionId)
          const done = yield* h.baton(1).await(started)
          assert.deepStrictEqual(done._tag === "Finished" && done.output.got, ["a", "b"])
          assert.deepStrictEqual([...log].sort(), ["a@instance-1", "b@instance-1"])
        }).pipe(Effect.scoped, Effect.provide(Layer.fresh(backend.stores))), 30_000)

      it.effect(`placement ${placement}: a signal to a waiting child's thread wakes it once; the parent finishes`, () =>
        Effect.gen(function*() {
          const parent = parentOf(waiting, placement)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent, waiting] } })
          const started = yield* h.baton(0).start(parent, { items: ["a"], got: [] })
          yield* h.settle
          const resting = yield* h.baton(1).status(started.executionId)
          assert.deepStrictEqual(resting.pendingPauses, [])
          const [wait] = resting.waits ?? []
          assert.strictEqual(wait?._tag, "Signal")
          assert.strictEqual(wait?.child?.workflowName, "waiting-child")
          assert.strictEqual(resting.wakesAt, null, "a signal wait without a timeout wakes on no time")
          yield* h.baton(1).signal(wait!.child!.threadId, "go", "now")
          yield* untilFinished(h, started.executionId)
          const done = yield* h.baton(1).await(started)
          assert.deepStrictEqual(done._tag === "Finished" && done.output.got, ["a:now"])
        }).pipe(Effect.scoped, Effect.provide(Layer.fresh(backend.stores))), 30_000)
    }
  })
}
