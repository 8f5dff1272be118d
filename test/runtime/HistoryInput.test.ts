/**
 * #18 (statements per recovery): the snapshot of an ending root read the
 * root's kept input from the TreeStore to hash it, although the pass had it
 * in hand — the input it started from, or the kept input a recovery without
 * a checkpoint had just read. Now the pass hands it over; the snapshot reads
 * it only when the pass did not have it (a pass continuing from a checkpoint).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { ExecutionHistoryStore } from "../../src/stores/ExecutionHistoryStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects } from "./fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const oneStep = Workflow.make({
  name: "one-step",
  version: "1",
  graph: new StateGraph(State)
    .addNode("only", Workflow.step(async () => ({ log: ["done"] })))
    .addEdge(START, "only")
    .addEdge("only", END)
})

/** The backend's stores, with a TreeStore that counts the reads of a root's kept input. */
const countingInputReads = <E>(stores: Layer.Layer<Harness.HarnessStores | ExecutionHistoryStore, E>, reads: { count: number }) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores | ExecutionHistoryStore>()
    const tree = Context.get(context, TreeStore)
    return Context.add(context, TreeStore, {
      ...tree,
      get: (tenantId, root, key) =>
        Effect.andThen(Effect.sync(() => key === "@baton/input" && reads.count++), tree.get(tenantId, root, key))
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

const hashOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex")

for (const backend of backends) {
  describe(`the snapshot of an ending root on ${backend.name}`, () => {
    it.effect("hashes the input the pass started from without reading it again", () => {
      const reads = { count: 0 }
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [oneStep] } })
        const input = { log: ["in"] }
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(oneStep, input)))
        assert.strictEqual(out._tag, "Finished")
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(out.tenantId, out.executionId))
        assert.strictEqual(snapshot.inputHash, hashOf(input))
        assert.strictEqual(reads.count, 0, "the kept input was not read")
      }).pipe(Effect.provide(countingInputReads(backend.stores, reads)))
    })

    it.effect("a pass continuing from a checkpoint reads the kept input once, for the snapshot", () => {
      const reads = { count: 0 }
      return Effect.gen(function*() {
        const wf = approval(makeSideEffects())
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const input = { log: ["in"] }
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, input)))
        if (paused._tag !== "Paused") return assert.fail(`paused, not ${paused._tag}`)
        const done = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(done._tag, "Finished")
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(paused.tenantId, paused.executionId))
        assert.strictEqual(snapshot.inputHash, hashOf(input))
        assert.strictEqual(reads.count, 1)
      }).pipe(Effect.provide(countingInputReads(backend.stores, reads)))
    })
  })
}
