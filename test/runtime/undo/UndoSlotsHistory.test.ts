/**
 * An undo is run like a step: it takes a step slot (`maxConcurrentSteps`)
 * for each try, and each try is in the execution history.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Clock, Effect, Fiber, Layer, Option } from "effect"
import { ExecutionHistoryStore } from "../../../src/stores/ExecutionHistoryStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { backends, recordOf, theRunningRoot } from "../fixtures.ts"
import { booking, makeBook, undoneNodes } from "./undoFixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** What ran, and how many bodies (steps and undos) ran at once at most. */
const makeTrace = () => {
  const trace = {
    starts: [] as Array<string>,
    running: 0,
    most: 0,
    /** Logs `label@second`, counts itself running while it works `seconds` on the Clock. */
    work: (label: string, seconds: number) =>
      Effect.gen(function*() {
        trace.starts.push(`${label}@${(yield* Clock.currentTimeMillis) / 1000}`)
        trace.running++
        trace.most = Math.max(trace.most, trace.running)
        yield* Effect.sleep(`${seconds} seconds`) // on the harness's TestClock
      }).pipe(Effect.ensuring(Effect.sync(() => trace.running--)))
  }
  return trace
}
type Trace = ReturnType<typeof makeTrace>

/** a (undo works 5 s) → b works 2 s, then fails. */
const undoer = (t: Trace) =>
  Workflow.make({
    name: "undoer",
    version: "1",
    graph: new StateGraph(State)
      .addNode("a", Workflow.effectStep(() => Effect.succeed({ log: ["a"] }), { undo: () => t.work("undo-a", 5) }))
      .addNode("b", Workflow.effectStep(() => Effect.andThen(t.work("b", 2), Effect.fail(new Error("b boom")))))
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", END)
  })

/** One step that works 20 s. */
const worker = (t: Trace) =>
  Workflow.make({
    name: "worker",
    version: "1",
    graph: new StateGraph(State)
      .addNode("w", Workflow.effectStep(() => Effect.as(t.work("w", 20), { log: ["w"] })))
      .addEdge(START, "w")
      .addEdge("w", END)
  })

for (const backend of backends) {
  describe(`undos run like steps on ${backend.name}`, () => {
    it.effect("with maxConcurrentSteps 1, an undo waits for the slot a step holds: never two bodies at once", () =>
      Effect.gen(function*() {
        const t = makeTrace()
        const u = undoer(t)
        const w = worker(t)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [u, w], maxConcurrentSteps: 1 } })
        const failing = yield* h.run(0, (b) => b.execute(u, { log: [] }))
        yield* h.advance("1 second")
        // The worker's step waits for b's slot; it takes it when b fails, before the undo of a asks for one.
        const working = yield* h.run(0, (b) => b.execute(w, { log: [] }))
        yield* h.advance("10 seconds")
        assert.deepStrictEqual(t.starts, ["b@0", "w@2"], "the undo of a waits for the slot")
        yield* h.advance("20 seconds")
        assert.deepStrictEqual(t.starts, ["b@0", "w@2", "undo-a@22"], "the undo ran once the worker's step gave the slot back")
        assert.strictEqual(t.most, 1, "never more than one body at once")
        assert.strictEqual((yield* Fiber.join(working))._tag, "Finished")
        const exit = yield* Fiber.await(failing)
        assert.isTrue(exit._tag === "Failure", "the undoer ends Failed")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("each try of an undo is in the execution history: node, the undo's key, attempt, instance, outcome", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", undoSleep: "5 seconds", failTries: new Map([["s2", 1]]) })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        for (let i = 0; i < 10; i++) yield* h.advance("5 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(root.tenantId, root.executionId))
        assert.deepStrictEqual(
          snapshot.steps.map((s) => `${s.node}${s.undo === true ? " undo" : ""}#${s.attempt}@${s.instanceId}:${s.outcome}`),
          [
            "s1#1@instance-0:Succeeded",
            "s2#1@instance-0:Succeeded",
            "s3#1@instance-0:Succeeded",
            "s4#1@instance-0:Failed",
            "s3 undo#1@instance-0:Succeeded",
            "s2 undo#1@instance-0:Failed",
            "s2 undo#2@instance-0:Succeeded",
            "s1 undo#1@instance-0:Succeeded"
          ]
        )
        const undos = snapshot.steps.filter((s) => s.undo === true)
        assert.deepStrictEqual(
          undos.map((s) => s.idempotencyKey),
          ["s3", "s2", "s2", "s1"].map((n) => `${book.stepKeys.get(n)}:undo`),
          "an undo's visit carries the undo's idempotency key"
        )
        const s3 = undos[0]!
        assert.strictEqual(s3.endedAt! - s3.startedAt, 5_000, "the visit lasts the undo's work")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("an undo cut short by a kill is Unfinished in the history; the new holder's try is the next attempt", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        yield* h.advance("7 seconds")
        assert.deepStrictEqual(book.tries.map((t) => `${t.node}@${t.instanceId}`), ["s3@instance-0", "s2@instance-0"])
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        yield* h.advance("15 seconds")
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(root.tenantId, root.executionId))
        assert.deepStrictEqual(
          snapshot.steps.filter((s) => s.undo === true).map((s) => `${s.node}#${s.attempt}@${s.instanceId}:${s.outcome}`),
          ["s3#1@instance-0:Unfinished", "s2#1@instance-0:Unfinished", "s2#2@instance-1:Succeeded", "s1#1@instance-1:Succeeded"],
          "the dead holder never reported its ends (s3's included: it reports them when its unwinding ends)"
        )
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
