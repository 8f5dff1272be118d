/**
 * A call that fails after its work was durably recorded says so.
 * `execute` whose execution was recorded before a store failed, `resume`
 * whose decision was written before a store failed, and `execute` whose
 * recorded execution's output the workflow's schema refuses: the error
 * carries `recorded` (its ids) and its message says to await, not retry —
 * which is the truth (a retry finds the thread busy or the pause answered,
 * and awaiting gets the execution's end). Errors before anything is written
 * keep saying so.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option, Schema } from "effect"
import { type InvalidInputError, StoreError } from "../../../src/stores/Errors.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects, statusOf } from "../fixtures.ts"

/** Which RecordStore writes fail once, with a transient (connection) error. */
interface Faults {
  finish: boolean
  pauseAnswer: boolean
}

const connectionReset = (operation: string) => new StoreError({ store: "RecordStore", operation, reason: "connection reset", kind: "Connection" })

/** The backend's stores, with a RecordStore whose next Finished write or pause answer fails as `faults` says. */
const faulty = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, faults: Faults) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const records = Context.get(context, RecordStore)
    return Context.add(context, RecordStore, {
      ...records,
      setStatusFenced: (input) => {
        if (input.to !== "Finished" || !faults.finish) return records.setStatusFenced(input)
        faults.finish = false
        return Effect.fail(connectionReset("setStatusFenced"))
      },
      savePauseAnswer: (answer) => {
        if (!faults.pauseAnswer) return records.savePauseAnswer(answer)
        faults.pauseAnswer = false
        return Effect.fail(connectionReset("savePauseAnswer"))
      }
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => Option.getOrThrow(Exit.findErrorOption(exit)) as unknown as StoreError | InvalidInputError

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One step; its output schema wants a number the graph never gives. */
const badOutput = Workflow.make({
  name: "bad-output",
  version: "1",
  graph: new StateGraph(State).addNode("only", Workflow.step(async () => ({ log: ["only"] }))).addEdge(START, "only").addEdge("only", END),
  output: Schema.Struct({ total: Schema.Number })
})

for (const backend of backends) {
  describe(`errors after the work was recorded, on ${backend.name}`, () => {
    it.effect("resume: a store error noting who answered, after the decision was written, does not fail the call: the tree goes on (a retry would only be NotPausedError)", () => {
      const faults: Faults = { finish: false, pauseAnswer: true }
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        const pauseId = paused.pauses[0]!.pauseId
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId, decision: "yes" })))
        assert.strictEqual(out._tag, "Finished")
        assert.isFalse(faults.pauseAnswer, "the fault was hit")
        assert.deepStrictEqual([...fx.applied.values()], [1])
      }).pipe(Effect.provide(faulty(backend.stores, faults)))
    })

    it.effect("resume: the Finished write refused after the decision was taken → StoreError with `recorded`; resuming again is NotPausedError, await finishes it", () => {
      const faults: Faults = { finish: true, pauseAnswer: false }
      return Effect.gen(function*() {
        const wf = approval(makeSideEffects())
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        // The pause answered on instance 1 runs to the end, whose Finished write fails once.
        const exit = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" }))))
        const error = failureOf(exit) as StoreError
        assert.strictEqual(error._tag, "StoreError")
        assert.strictEqual(error.recorded?.executionId, paused.executionId)
        assert.include(error.message, "do not resume it again")
        const again = yield* Effect.exit(Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" }))))
        assert.strictEqual(errorTag(again), "NotPausedError", "resuming again is refused: the message was right")
        const awaited = yield* h.run(0, (b) => b.await(paused.executionId))
        yield* h.advance("31 seconds")
        assert.strictEqual((yield* Fiber.join(awaited))._tag, "Finished")
      }).pipe(Effect.provide(faulty(backend.stores, faults)))
    })

    it.effect("execute of a new root: a store error after startRoot says the execution was recorded (ids included), not 'can be retried'", () => {
      const faults: Faults = { finish: true, pauseAnswer: false }
      return Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = Workflow.make({
          name: "one-step",
          version: "1",
          graph: new StateGraph(State).addNode("only", Workflow.step(async (_s, ctx) => {
            fx.runs.push({ node: "only", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
            return { log: ["only"] }
          })).addEdge(START, "only").addEdge("only", END)
        })
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const exit = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))))
        assert.strictEqual(errorTag(exit), "StoreError")
        const error = failureOf(exit) as StoreError
        const running = (yield* RecordStore.use((r) => r.listByThread("default", "t")))
        assert.strictEqual(running.length, 1)
        assert.deepStrictEqual(error.recorded, { tenantId: "default", executionId: running[0]!.executionId, threadId: "t" })
        assert.include(error.message, "The execution was recorded before this failure")
        assert.include(error.message, "do not retry the call")
        assert.notInclude(error.message, "can be retried")
        const retry = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))))
        assert.strictEqual(errorTag(retry), "ThreadBusyError", "a retry would not have helped")
        const awaited = yield* h.run(0, (b) => b.await(error.recorded!.executionId))
        yield* h.advance("31 seconds")
        assert.strictEqual((yield* Fiber.join(awaited))._tag, "Finished", "awaiting it gets its end")
        assert.strictEqual(yield* statusOf("default", error.recorded!.executionId), "Finished")
      }).pipe(Effect.provide(faulty(backend.stores, faults)))
    })

    it.effect("execute: an output the schema refuses after the execution finished is InvalidInputError with `recorded`, never 'Nothing was written'", () =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [badOutput] } })
        const exit = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.execute(badOutput, { log: [] }, { threadId: "t" }))))
        assert.strictEqual(errorTag(exit), "InvalidInputError")
        const error = failureOf(exit) as InvalidInputError
        assert.strictEqual(error.recorded?.threadId, "t")
        assert.strictEqual(yield* statusOf("default", error.recorded!.executionId), "Finished")
        assert.notInclude(error.message, "Nothing was written")
        assert.include(error.message, "was recorded before this failure")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("InvalidInputError before any write still says nothing was written — and nothing was", () =>
      Effect.gen(function*() {
        const wf = approval(makeSideEffects())
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const exit = yield* Effect.exit(Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [1n] } as never, { threadId: "t" }))))
        assert.strictEqual(errorTag(exit), "InvalidInputError")
        const error = failureOf(exit)
        assert.isUndefined(error.recorded)
        assert.include(error.message, "Nothing was written")
        assert.isTrue(Option.isNone(yield* RecordStore.use((r) => r.getThread("default", "t"))), "no thread row")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
