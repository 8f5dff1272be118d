import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Exit, Fiber, Layer, Option, Schema } from "effect"
import { MemoryStores } from "../../../layers/memory/index.ts"
import * as Evaluation from "../../../src/runtime/evaluation/Evaluation.ts"
import { ExecutionHistoryStore } from "../../../src/stores/ExecutionHistoryStore.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { reservedPrefix, TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag } from "../fixtures.ts"
import { makeModel, summarize, type Variant } from "./fixtures.ts"

const scratch = { scratch: MemoryStores.layer }

/**
 * A fresh model and `summarize` (as `variant` says) on a Harness of two
 * instances; the workflow run on instance 0 until it pauses, its pause
 * answered "yes" on instance 1: the model, the workflow, and the run.
 */
const recorded = (variant: Variant = {}) =>
  Effect.gen(function*() {
    const model = makeModel()
    const wf = summarize(model, variant)
    const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
    const tenantId = "acme"
    const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { topic: "tides" }, { tenantId })))
    if (paused._tag !== "Paused") return yield* Effect.die("expected a pause")
    const done = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ tenantId, pauseId: paused.pauses[0]!.pauseId, decision: "yes" })))
    assert.strictEqual(done._tag, "Finished")
    return { model, wf, run: { executionId: paused.executionId, tenantId, output: done._tag === "Finished" ? done.output : undefined } }
  })

/** A workflow whose input and decision schemas transform what a caller gives (text to a number). */
const Product = Annotation.Root({ n: Annotation<number>(), product: Annotation<number>() })
const multiply = Workflow.make({
  name: "multiply",
  version: "1",
  input: Schema.Struct({ n: Schema.NumberFromString }),
  decision: Schema.NumberFromString,
  graph: new StateGraph(Product)
    .addNode("times", Workflow.step(async (s: typeof Product.State) => ({ product: s.n * (interrupt({ question: "times what?" }) as number) })))
    .addEdge(START, "times")
    .addEdge("times", END)
})

for (const backend of backends) {
  describe(`evaluation on ${backend.name}`, () => {
    it.effect("a workflow whose input and decision schemas transform replays unchanged: the record's decoded values are given as a caller gave them", () =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [multiply] } })
        const paused = yield* h.baton(0).execute(multiply, { n: "6" } as never)
        if (paused._tag !== "Paused") return yield* Effect.die("expected a pause")
        const done = yield* h.baton(0).resume({ pauseId: paused.pauses[0]!.pauseId, decision: "7" })
        assert.deepStrictEqual(done._tag === "Finished" && (done.output as { product: number }).product, 42)
        const result = yield* Evaluation.replay(multiply, { ...scratch, executionId: paused.executionId })
        assert.isTrue(result.passed, result.diff.join("\n"))
        assert.deepStrictEqual(result.actual, { status: "Finished", output: { n: 6, product: 42 }, error: null })
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("answers recorded on two instances replay on a scratch runtime: an unchanged workflow matches, the model is not called", () =>
      Effect.gen(function*() {
        const { model, run } = yield* recorded()
        assert.strictEqual(model.calls, 2)
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(run.tenantId, run.executionId))
        assert.deepStrictEqual(snapshot.input, { topic: "tides" })
        assert.deepStrictEqual(snapshot.output, run.output)
        assert.deepStrictEqual(snapshot.answers, [
          { node: "write", visit: 1, ordinal: 0, provider: "llm", model: "m-1", answer: { text: "answer 1 to draft tides" } },
          { node: "finish", visit: 1, ordinal: 0, provider: "llm", model: "m-1", answer: { text: "answer 2 to finish answer 1 to draft tides (yes)" } }
        ])
        const result = yield* Evaluation.replay(summarize(model), { ...scratch, executionId: run.executionId, tenantId: run.tenantId })
        assert.strictEqual(model.calls, 2, "no model call in the replay")
        assert.isTrue(result.passed, result.diff.join("\n"))
        assert.deepStrictEqual(result.diff, [])
        assert.deepStrictEqual(result.actual, { status: "Finished", output: run.output, error: null })
        assert.deepStrictEqual([result.answered, result.unused, result.calledForReal], [2, 0, 0])
        // The scratch runtime wrote nothing to the app's stores: still one snapshot, one execution, no lease.
        assert.strictEqual((yield* (yield* ExecutionHistoryStore).list({ tenantId: run.tenantId, limit: 10 })).length, 1)
        assert.deepStrictEqual((yield* (yield* RecordStore).list({ tenantId: run.tenantId, limit: 10 })).records.map((r) => r.executionId), [run.executionId])
        assert.isTrue(Option.isNone(yield* (yield* LeaseStore).get(run.tenantId, run.executionId)))
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a visit run again after a takeover keeps the answers of its last try, whose output the replay matches", () =>
      Effect.gen(function*() {
        const model = makeModel()
        const wf = summarize(model, { slowWrite: "45 seconds" })
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const started = yield* h.run(0, (b) => b.start(wf, { topic: "tides" }, { tenantId: "acme" }))
        const handle = yield* Fiber.join(started)
        yield* h.settle
        assert.strictEqual(model.calls, 1, "instance 0 asked, then works 45 s")
        yield* h.kill(0)
        yield* h.advance("31 seconds") // its lease ran out: instance 1 takes the tree and runs the step again
        yield* h.advance("45 seconds")
        assert.strictEqual(model.calls, 2)
        const paused = yield* Fiber.join(yield* h.run(1, (b) => b.await(handle)))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        yield* Fiber.join(yield* h.run(1, (b) => b.resume({ tenantId: "acme", pauseId: paused.pauses[0]!.pauseId, decision: "no" })))
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get("acme", handle.executionId))
        assert.deepStrictEqual(snapshot.answers?.map((a) => [a.node, a.visit, a.ordinal, a.answer]), [
          ["write", 1, 0, { text: "answer 2 to draft tides" }],
          ["finish", 1, 0, { text: "answer 3 to finish answer 2 to draft tides (no)" }]
        ])
        const replayed = yield* Evaluation.replay(wf, { ...scratch, executionId: handle.executionId, tenantId: "acme" }).pipe(
          Effect.forkChild,
          Effect.tap(() => h.advance("45 seconds")), // the replay's step works 45 s on the test's clock too
          Effect.flatMap(Fiber.join)
        )
        assert.isTrue(replayed.passed, replayed.diff.join("\n"))
        assert.strictEqual(model.calls, 3)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a changed node (other post-processing of the answer) is a mismatch with a diff of the outputs", () =>
      Effect.gen(function*() {
        const { model, run } = yield* recorded()
        const changed = summarize(model, { post: (t) => t.toUpperCase() })
        const result = yield* Evaluation.replay(changed, { ...scratch, executionId: run.executionId, tenantId: run.tenantId })
        assert.isFalse(result.passed)
        assert.deepStrictEqual(result.diff, [
          `$.summary: expected "answer 2 to finish answer 1 to draft tides (yes)", got "ANSWER 2 TO FINISH ANSWER 1 TO DRAFT TIDES (YES)"`
        ])
        assert.strictEqual(model.calls, 2)
        // A comparator of the user's decides instead: case-blind, they match.
        const lenient = yield* Evaluation.replay(changed, {
          ...scratch,
          executionId: run.executionId,
          tenantId: run.tenantId,
          compare: (a, b) => JSON.stringify(a).toLowerCase() === JSON.stringify(b).toLowerCase()
        })
        assert.isTrue(lenient.passed)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a changed workflow asking an extra model call fails with UnrecordedModelCallError; onUnrecorded call makes it for real", () =>
      Effect.gen(function*() {
        const { model, run } = yield* recorded()
        const asksMore = summarize(model, { extraCall: true })
        const exit = yield* Effect.exit(Evaluation.replay(asksMore, { ...scratch, executionId: run.executionId, tenantId: run.tenantId }))
        assert.strictEqual(errorTag(exit), "UnrecordedModelCallError")
        const error = Exit.isFailure(exit) ? Option.getOrThrow(Exit.findErrorOption(exit)) as Evaluation.UnrecordedModelCallError : undefined
        assert.deepStrictEqual([error?.node, error?.visit, error?.ordinal, error?.provider], ["finish", 1, 1, "llm"])
        assert.include(error?.message, "the recorded execution made no such call")
        assert.strictEqual(model.calls, 2, "not called")
        const forReal = yield* Evaluation.replay(asksMore, { ...scratch, executionId: run.executionId, tenantId: run.tenantId, onUnrecorded: "call" })
        assert.strictEqual(model.calls, 3, "the extra call was made")
        assert.deepStrictEqual([forReal.answered, forReal.calledForReal], [2, 1])
        assert.isFalse(forReal.passed)
        assert.deepStrictEqual(forReal.diff, [
          `$.summary: expected "answer 2 to finish answer 1 to draft tides (yes)", got "answer 2 to finish answer 1 to draft tides (yes) / answer 3 to one more"`
        ])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("another tenant's execution cannot be replayed: ExecutionNotRecordedError", () =>
      Effect.gen(function*() {
        const { run, wf } = yield* recorded()
        const exit = yield* Effect.exit(Evaluation.replay(wf, { ...scratch, executionId: run.executionId, tenantId: "globex" }))
        assert.strictEqual(errorTag(exit), "ExecutionNotRecordedError")
        assert.include(Exit.isFailure(exit) ? String(Option.getOrThrow(Exit.findErrorOption(exit))) : "", "tenant globex")
        const byDefault = yield* Effect.exit(Evaluation.fromExecution(run.executionId))
        assert.strictEqual(errorTag(byDefault), "ExecutionNotRecordedError", "the default tenant does not see acme's")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("an answer JSON cannot write is kept as unrecordable, and its replay says so", () =>
      Effect.gen(function*() {
        const { run, wf } = yield* recorded({ firstAnswer: () => 10n })
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(run.tenantId, run.executionId))
        const first = snapshot.answers?.[0]
        assert.strictEqual(first?.node, "write")
        assert.isFalse(first !== undefined && "answer" in first)
        assert.include(first?.unrecordable, "BigInt")
        const exit = yield* Effect.exit(Evaluation.replay(wf, { ...scratch, executionId: run.executionId, tenantId: run.tenantId }))
        assert.strictEqual(errorTag(exit), "UnrecordedModelCallError")
        assert.include(Exit.isFailure(exit) ? String(Option.getOrThrow(Exit.findErrorOption(exit))) : "", "the recorded answer was not kept")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a golden case round-trips through its file text, and evaluate passes and fails by the current code", () =>
      Effect.gen(function*() {
        const { model, run, wf } = yield* recorded()
        const golden = yield* Evaluation.fromExecution(run.executionId, { tenantId: run.tenantId })
        assert.deepStrictEqual(golden.decisions, ["yes"])
        const text = Evaluation.encodeCase(golden)
        const back = yield* Evaluation.decodeCase(text, "golden.json")
        assert.deepStrictEqual(back, golden)
        const same = yield* Evaluation.evaluate([summarize(model)], [back], scratch)
        assert.deepStrictEqual([same.passed, same.failed], [1, 0])
        const changed = yield* Evaluation.evaluate([summarize(model, { post: (t) => `${t}!` })], [back, { ...back, name: "other", workflowName: "gone" }], scratch)
        assert.deepStrictEqual([changed.passed, changed.failed], [0, 2])
        assert.deepStrictEqual(changed.results[0]!.diff, [
          `$.summary: expected "answer 2 to finish answer 1 to draft tides (yes)", got "answer 2 to finish answer 1 to draft tides (yes)!"`
        ])
        assert.include(changed.results[1]!.error, "no workflow named gone")
        // A case missing its last decision cannot answer the pause.
        const short = yield* Evaluation.evaluate([wf], [{ ...back, decisions: [] }], scratch)
        assert.include(short.results[0]!.error, "paused once more than the 0 recorded decision(s)")
        const bad = yield* Effect.exit(Evaluation.decodeCase(JSON.stringify({ ...JSON.parse(text), input: undefined, answers: 3 }), "bad.json"))
        assert.strictEqual(errorTag(bad), "GoldenCaseError")
        assert.strictEqual(errorTag(yield* Effect.exit(Evaluation.decodeCase("{", "broken.json"))), "GoldenCaseError")
        assert.strictEqual(model.calls, 2)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("evaluation with the history off", () => {
  it.effect("no answer is noted in the tree without an ExecutionHistoryStore (and with one, it is)", () =>
    Effect.gen(function*() {
      const notedWhilePaused = (history: boolean) =>
        Effect.gen(function*() {
          const wf = summarize(makeModel())
          const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
          const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { topic: "tides" })))
          if (paused._tag !== "Paused") return yield* Effect.die("expected a pause")
          const keys = yield* TreeStore.use((t) => t.list(paused.tenantId, paused.executionId, `${reservedPrefix}history/answer/`))
          return keys.map((k) => (k.value as { node: string }).node)
        }).pipe(
          Effect.updateContext((ctx: Context.Context<any>) => history ? ctx : Context.omit(ExecutionHistoryStore)(ctx)),
          Effect.provide(Layer.fresh(MemoryStores.layer))
        )
      assert.deepStrictEqual(yield* notedWhilePaused(true), ["write"])
      assert.deepStrictEqual(yield* notedWhilePaused(false), [])
    }))

  it.effect("nothing to replay: HistoryOffError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Evaluation.replay(summarize(makeModel()), { ...scratch, executionId: "e-1" }))
      assert.strictEqual(errorTag(exit), "HistoryOffError")
      assert.include(Exit.isFailure(exit) ? String(Option.getOrThrow(Exit.findErrorOption(exit))) : "", "provide an ExecutionHistoryStore")
      assert.include(Exit.isFailure(exit) ? String(Option.getOrThrow(Exit.findErrorOption(exit))) : "", "Evaluation.replay:", "named as the caller called it")
    }))
})
