/**
 * Child executions gaps: worker-only instances claim the children of
 * the workflows they register (and only those: by name and config hash), an orphaned placement-parent
 * child ends once its parent ended, and the child limits are configuration.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, type Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, statusOf, unrelated } from "../fixtures.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./childFixtures.ts"

const advanceUntil = (h: Harness.Harness, step: Duration.Input, max: number, done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !done(); i++) yield* h.advance(step)
  })

const configError = <A, E>(exit: Exit.Exit<A, E>) => {
  assert.isTrue(Exit.isFailure(exit))
  const error = Option.getOrUndefined(Exit.findErrorOption(exit as Exit.Exit<A, unknown>)) as { _tag: string; field: string; message: string }
  assert.strictEqual(error._tag, "BatonConfigError")
  return error
}

for (const backend of backends) {
  describe(`child execution gaps on ${backend.name}`, () => {
    it.effect("a parent-only instance and two worker-only instances: the workers claim and run every child, an unrelated instance none, the parent finishes", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log)
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({
          instances: 4,
          baton: { workflows: [child], maxConcurrentSteps: 2 },
          // 0: launches only (claims nothing); 1, 2: register just the child workflow; 3: another workflow only
          instanceOptions: (i) => (i === 0 ? { workflows: [parent], maxClaimedChildren: 0 } : i === 3 ? { workflows: [unrelated] } : {})
        })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 8 }))
        yield* advanceUntil(h, "5 seconds", 40, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.strictEqual(out._tag, "Finished")
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6, 8, 10, 12, 14])
        assert.deepStrictEqual(log.runs.map((r) => r.n).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7], "each child ran once")
        assert.deepStrictEqual([...new Set(log.runs.map((r) => r.instanceId))].sort(), ["instance-1", "instance-2"], "only the workers ran children")
        for (const [instanceId, max] of log.max) assert.isAtMost(max, 2, `${instanceId} ran ${max} children at once`)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a worker registering another graph under the child's name (a rolling deploy) claims none of the children; the worker with the declared graph runs them all", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log)
        const parent = parentWorkflow(child, "any")
        const otherRuns: Array<number> = []
        const otherChild = Workflow.make({
          name: child.name,
          version: "2",
          graph: new StateGraph(Annotation.Root({ n: Annotation<number>(), doubled: Annotation<number>() }))
            .addNode("work", Workflow.step(async (s: { n: number }) => (otherRuns.push(s.n), { doubled: s.n * 3 })))
            .addEdge(START, "work")
            .addEdge("work", END)
        })
        assert.notStrictEqual(otherChild.configHash, child.configHash)
        const h = yield* Harness.make({
          instances: 3,
          baton: { workflows: [child] },
          // 0: launches only; 1: the other graph of the child's name (started first, so it would claim first); 2: the declared child
          instanceOptions: (i) => (i === 0 ? { workflows: [parent], maxClaimedChildren: 0 } : i === 1 ? { workflows: [otherChild] } : {})
        })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 4 }))
        yield* advanceUntil(h, "5 seconds", 40, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual(otherRuns, [], "the other graph ran no child")
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6])
        assert.deepStrictEqual([...new Set(log.runs.map((r) => r.instanceId))], ["instance-2"], "the declared graph's worker ran them")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("the parent continues promptly when the worker that ends the last child does not register the parent's workflow", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const parentLog = { fans: [] as Array<string>, afters: [] as Array<string> }
        const child = childWorkflow(log, "5 seconds")
        const parent = parentWorkflow(child, "any", parentLog)
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [child], sweepInterval: "10 minutes" },
          instanceOptions: (i) => (i === 0 ? { workflows: [parent], maxClaimedChildren: 0 } : {})
        })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 2 }))
        yield* h.settle
        yield* h.advance("6 seconds")
        // the worker answered the wait and told the fleet: the parent's instance continued it long before its next sweep
        assert.deepStrictEqual(parentLog.afters, ["instance-0"])
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a placement-parent child whose parent was cancelled while its instance died ends cancelled (the sweep no longer leaves it Running)", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "10 minutes")
        const parent = parentWorkflow(child, "parent")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 2 })))
        yield* h.settle
        assert.strictEqual(log.runs.length, 2, "both children run inside the parent's step on instance 0")
        const children = (yield* RecordStore.use((r) => r.findByStatus("Running", 10, Option.none()))).filter((r) => r.parentExecutionId !== null)
        assert.strictEqual(children.length, 2)
        yield* h.kill(0)
        const cancelled = yield* Fiber.join(yield* h.run(1, (b) => b.cancel(handle.threadId)))
        assert.isTrue(cancelled.cancelled)
        // the dead holder's leases expire; instance 1's sweep ends the parent (its cancel request) and then its children
        for (let i = 0; i < 65; i++) yield* h.advance("1 second")
        assert.strictEqual(yield* statusOf(handle.tenantId, handle.executionId), "Cancelled")
        for (const c of children) assert.strictEqual(yield* statusOf(c.tenantId, c.executionId), "Cancelled", `child ${c.executionId}`)
        assert.strictEqual(log.runs.length, 2, "no child ran again")
        assert.strictEqual(log.applied.size, 0)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a placement-parent child whose parent's instance died is continued by the parent's recovery, not ended", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "20 seconds")
        const parent = parentWorkflow(child, "parent")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 2 })))
        yield* h.settle
        yield* h.kill(0)
        const done = yield* h.run(1, (b) => b.await(handle))
        yield* advanceUntil(h, "5 seconds", 30, () => done.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(done)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2])
        assert.deepStrictEqual(log.runs.filter((r) => r.instanceId === "instance-1").map((r) => r.n).sort(), [0, 1], "both children continued on instance 1")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("maxInlineChildren caps the children of one placement-parent launch running at once", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "5 seconds")
        const parent = parentWorkflow(child, "parent")
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [parent], maxInlineChildren: 2 } })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 6 }))
        yield* advanceUntil(h, "5 seconds", 20, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6, 8, 10])
        assert.strictEqual(log.peak, 2, "two at once, never more (16 without the option)")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("maxClaimedChildren caps the queued children an instance without a step cap runs at once", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "5 seconds")
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent], maxClaimedChildren: 1 } })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 4 }))
        yield* advanceUntil(h, "5 seconds", 20, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6])
        assert.deepStrictEqual([...log.max.values()], [1, 1], "one child at a time on each instance")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("child options in BatonConfig", () => {
  it.effect("maxClaimedChildren and maxInlineChildren are checked at build, naming the field; 0 claimed children is allowed", () =>
    Effect.gen(function*() {
      for (const [field, value] of [["maxClaimedChildren", -1], ["maxClaimedChildren", 1.5], ["maxClaimedChildren", 10_001], ["maxInlineChildren", 0], ["maxInlineChildren", "4"]] as const) {
        const error = configError(yield* Effect.exit(BatonConfig.make({ [field]: value })))
        assert.strictEqual(error.field, field)
      }
      const ok = yield* BatonConfig.make({ maxClaimedChildren: 0, maxInlineChildren: 4 })
      assert.strictEqual(ok.maxClaimedChildren, 0)
      assert.strictEqual(ok.maxInlineChildren, 4)
      const unset = yield* BatonConfig.make({})
      assert.isUndefined(unset.maxClaimedChildren)
      assert.isUndefined(unset.maxInlineChildren)
    }))

  it.effect("BATON_MAX_CLAIMED_CHILDREN and BATON_MAX_INLINE_CHILDREN are read from config; a bad one names field and key", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.service(BatonConfig.BatonConfig).pipe(
          Effect.provide(BatonConfig.layerConfig()),
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))),
          Effect.exit
        )
      const ok = yield* read({ BATON_MAX_CLAIMED_CHILDREN: "3", BATON_MAX_INLINE_CHILDREN: "8" })
      assert.isTrue(Exit.isSuccess(ok))
      if (Exit.isSuccess(ok)) {
        assert.strictEqual(ok.value.maxClaimedChildren, 3)
        assert.strictEqual(ok.value.maxInlineChildren, 8)
      }
      const error = configError(yield* read({ BATON_MAX_INLINE_CHILDREN: "many" }))
      assert.strictEqual(error.field, "maxInlineChildren")
      assert.match(error.message, /BATON_MAX_INLINE_CHILDREN/)
    }))
})
