/**
 * Observer events: a refused access (another owner's thread, an id the
 * caller's tenant does not have) is told to `onRejected`; a resume a pass
 * takes — the recovery sweep taking a decision whose resumer died, too —
 * tells `onResume` the decisions it took.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Clock, Effect, Fiber, Layer } from "effect"
import type { ExecutionOutput } from "../../../src/runtime/Baton.ts"
import { make as makeObserver, Observer, type RejectedEvent, type ResumeEvent } from "../../../src/runtime/Observer.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({ answer: Annotation<string>() })
const asking = Workflow.make({
  name: "asking",
  version: "1",
  graph: new StateGraph(State)
    .addNode("ask", Workflow.step(async () => ({ answer: String(interrupt({ question: "which?" })) })))
    .addEdge(START, "ask")
    .addEdge("ask", END)
})

const pauseOf = (out: ExecutionOutput) => {
  assert.strictEqual(out._tag, "Paused")
  return (out as Extract<ExecutionOutput, { _tag: "Paused" }>).pauses[0]!
}

for (const backend of backends) {
  describe(`observer events on ${backend.name}`, () => {
    it.effect("onRejected is told of a call refused for another owner's thread and of an id the caller's tenant does not have", () => {
      const rejected: Array<RejectedEvent> = []
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [asking] } })
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(asking, {}, { ownerId: "alice" })))
        const pause = pauseOf(out)
        const byOwner = yield* Effect.flip(Fiber.join(yield* h.run(0, (b) => b.status(out.executionId, { ownerId: "mallory" }))))
        assert.strictEqual(byOwner._tag, "ThreadOwnerError")
        const byTenant = yield* Effect.flip(Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: pause.pauseId, decision: "x", tenantId: "other" }))))
        assert.strictEqual(byTenant._tag, "UnknownPauseError")
        assert.deepStrictEqual(rejected.map((r) => [r.reason, r.tenantId, r.ownerId, r.threadId ?? null, r.pauseId ?? null, r.instanceId]), [
          ["OtherOwner", "default", "mallory", out.threadId, null, "instance-0"],
          ["NotInTenant", "other", null, null, pause.pauseId, "instance-0"]
        ])
        // the owner's own calls are not refused: nothing more is told
        yield* Fiber.join(yield* h.run(0, (b) => b.status(out.executionId, { ownerId: "alice" })))
        assert.strictEqual(rejected.length, 2)
      }).pipe(
        Effect.provideService(Observer, makeObserver({ onRejected: (e) => Effect.sync(() => rejected.push(e)) })),
        Effect.provide(Layer.fresh(backend.stores))
      )
    })

    it.effect("onResume carries the decisions a pass took: a caller's answer, and a decision whose resumer died that the sweep took", () => {
      const resumed: Array<ResumeEvent> = []
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [asking] } })
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(asking, {})))
        const answered = pauseOf(first)
        yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: answered.pauseId, decision: "by-caller" })))
        assert.deepStrictEqual(resumed.map((r) => [r.reason, r.decisions]), [["Answered", [{ pauseId: answered.pauseId, decision: "by-caller" }]]])
        // A resumer that recorded its decision and died before taking the lease: the sweep takes it.
        const second = yield* Fiber.join(yield* h.run(0, (b) => b.execute(asking, {})))
        const stranded = pauseOf(second)
        const now = yield* Clock.currentTimeMillis
        yield* PauseStore.use((p) => p.resolve({ tenantId: second.tenantId, pauseId: stranded.pauseId, decision: "stranded", resolvedBy: "instance-dead", now }))
        for (let i = 0; i < 30 && resumed.length < 2; i++) yield* h.advance("1 second")
        assert.deepStrictEqual(resumed[1]?.decisions, [{ pauseId: stranded.pauseId, decision: "stranded" }])
        assert.strictEqual(resumed[1]?.executionId, second.executionId)
      }).pipe(
        Effect.provideService(Observer, makeObserver({ onResume: (e) => Effect.sync(() => resumed.push(e)) })),
        Effect.provide(Layer.fresh(backend.stores))
      )
    })
  })
}
