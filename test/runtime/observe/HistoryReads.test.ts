/**
 * Statements per recovery: what the snapshot of an ending root reads.
 * It read the root's kept input from the TreeStore to hash it, although the
 * pass had it in hand — the input it started from, or the kept input a
 * recovery without a checkpoint had just read. Now the pass hands it over;
 * the snapshot reads it only when the pass did not have it (a pass
 * continuing from a checkpoint). Its spend was one LedgerStore read per day
 * the execution lasted plus its lifetime counter; now one `totals` call.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import * as Budget from "../../../src/runtime/limits/Budget.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { ExecutionHistoryStore } from "../../../src/stores/ExecutionHistoryStore.ts"
import { LedgerStore } from "../../../src/stores/LedgerStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, oneStep } from "../fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})


/** One step that records spend of its execution: 2 for its lifetime, 3 on the day (the TestClock's 1970-01-01). */
const spending = Workflow.make({
  name: "spending",
  version: "1",
  graph: new StateGraph(State)
    .addNode("spend", Workflow.effectStep((_s, ctx) =>
      Effect.gen(function*() {
        const key = { tenantId: ctx.tenantId, scope: "execution", scopeId: ctx.rootExecutionId } as const
        yield* Budget.record([{ ...key, window: "lifetime" }], 2)
        yield* Budget.record([{ ...key, window: "day" }], 3)
        return { log: ["spent"] }
      })
    ))
    .addEdge(START, "spend")
    .addEdge("spend", END)
})

/** What the counting stores saw: reads of a root's kept input, and LedgerStore reads. */
interface Reads {
  count: number
  ledger: number
}

/** The backend's stores, with a TreeStore that counts the reads of a root's kept input and a LedgerStore that counts its reads. */
const countingReads = <E>(stores: Layer.Layer<Harness.HarnessStores | ExecutionHistoryStore | LedgerStore, E>, reads: Reads) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores | ExecutionHistoryStore | LedgerStore>()
    const tree = Context.get(context, TreeStore)
    const ledger = Context.get(context, LedgerStore)
    return Context.add(context, TreeStore, {
      ...tree,
      get: (tenantId, root, key) =>
        Effect.andThen(Effect.sync(() => key === "@baton/input" && reads.count++), tree.get(tenantId, root, key))
    }).pipe(Context.add(LedgerStore, {
      ...ledger,
      get: (key) => Effect.andThen(Effect.sync(() => reads.ledger++), ledger.get(key)),
      totals: (key, days) => Effect.andThen(Effect.sync(() => reads.ledger++), ledger.totals(key, days))
    }))
  })).pipe(Layer.provide(Layer.fresh(stores)))

const hashOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex")

for (const backend of backends) {
  describe(`the snapshot of an ending root on ${backend.name}`, () => {
    it.effect("hashes the input the pass started from without reading it again", () => {
      const reads: Reads = { count: 0, ledger: 0 }
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [oneStep] } })
        const input = { log: ["in"] }
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(oneStep, input)))
        assert.strictEqual(out._tag, "Finished")
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(out.tenantId, out.executionId))
        assert.strictEqual(snapshot.inputHash, hashOf(input))
        assert.strictEqual(reads.count, 0, "the kept input was not read")
      }).pipe(Effect.provide(countingReads(backend.stores, reads)))
    })

    it.effect("reads the execution's spend (its lifetime and each day it lasted) with one LedgerStore call", () => {
      const reads: Reads = { count: 0, ledger: 0 }
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [spending] } })
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(spending, { log: [] })))
        assert.strictEqual(out._tag, "Finished")
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(out.tenantId, out.executionId))
        assert.deepStrictEqual(snapshot.spend, { total: 5, lifetime: 2, days: { "1970-01-01": 3 } })
        assert.strictEqual(reads.ledger, 1, "one LedgerStore read")
      }).pipe(Effect.provide(countingReads(backend.stores, reads)))
    })

    it.effect("a pass continuing from a checkpoint reads the kept input once, for the snapshot", () => {
      const reads: Reads = { count: 0, ledger: 0 }
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
      }).pipe(Effect.provide(countingReads(backend.stores, reads)))
    })
  })
}
