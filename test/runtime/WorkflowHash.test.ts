/**
 * A graph is matched by workflow name AND config hash — on
 * execute, on resume and in the compiled-graph cache.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import * as Workflow from "../../src/runtime/Workflow.ts"
import type { ExecutionOutput } from "../../src/runtime/Baton.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects } from "./fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** Another graph under the registered name "approval": one node that would "send" at once. */
const impostor = (runs: Array<string>) =>
  Workflow.make({
    name: "approval",
    version: "1",
    graph: new StateGraph(State)
      .addNode("sendAtOnce", Workflow.step(async () => {
        runs.push("sendAtOnce")
        return { log: ["sent without approval"] }
      }))
      .addEdge(START, "sendAtOnce")
      .addEdge("sendAtOnce", END)
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) as { _tag: string; message: string } | undefined : undefined

for (const backend of backends) {
  describe(`workflows matched by name and config hash on ${backend.name}`, () => {
    it.effect("execute with another graph under a registered name is UnknownWorkflowError naming both hashes; nothing runs, the cache keeps the registered graph", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const registered = approval(fx)
        const impostorRuns: Array<string> = []
        const other = impostor(impostorRuns)
        assert.notStrictEqual(other.configHash, registered.configHash)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [registered] } })
        const refused = yield* Effect.exit(h.instance(0).baton.execute(other, { log: [] }))
        const error = failureOf(refused)
        assert.strictEqual(error?._tag, "UnknownWorkflowError")
        assert.include(error?.message ?? "", other.configHash)
        assert.include(error?.message ?? "", registered.configHash)
        assert.deepStrictEqual(impostorRuns, [], "the other graph never ran")
        assert.deepStrictEqual(yield* RecordStore.use((r) => r.findByStatus("Finished", 10, Option.none())), [], "no execution was recorded")
        // The registered workflow still runs its own graph on this instance.
        const fiber = yield* h.run(0, (b) => b.execute(registered, { log: [] }))
        yield* h.settle
        const out = yield* Fiber.join(fiber)
        assert.strictEqual(out._tag, "Paused")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve"])
        assert.deepStrictEqual(impostorRuns, [])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("resume of a tree started under another config hash is UnknownWorkflowError naming both; the pause stays Pending; resumeAnyway continues it", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const v1 = approval(fx)
        const v2 = Workflow.make({ name: v1.name, version: "2", graph: v1.graph })
        const old = yield* Harness.make({ instances: 1, baton: { workflows: [v1] } })
        const started = yield* Fiber.join(yield* old.run(0, (b) => b.execute(v1, { log: [] })))
        const { pauseId } = (started as Extract<ExecutionOutput, { _tag: "Paused" }>).pauses[0]!
        const fresh = yield* Harness.make({ instances: 1, baton: { workflows: [v2] } })
        const refused = yield* Effect.exit(fresh.instance(0).baton.resume({ pauseId, decision: "yes" }))
        const error = failureOf(refused)
        assert.strictEqual(error?._tag, "UnknownWorkflowError")
        assert.include(error?.message ?? "", v1.configHash)
        assert.include(error?.message ?? "", v2.configHash)
        const pause = Option.getOrUndefined(yield* PauseStore.use((p) => p.get("default", pauseId)))
        assert.strictEqual(pause?.status, "Pending", "the decision was not recorded")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve"], "no step ran under v2")
        const anyway = Workflow.make({ name: v1.name, version: "2", graph: v1.graph, resumeAnyway: true })
        const lenient = yield* Harness.make({ instances: 1, baton: { workflows: [anyway] } })
        const fiber = yield* lenient.run(0, (b) => b.resume({ pauseId, decision: "yes" }))
        yield* lenient.settle
        assert.strictEqual((yield* Fiber.join(fiber))._tag, "Finished")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
