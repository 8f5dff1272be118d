import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, type Duration, Effect, Fiber, Layer, Option } from "effect"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { make as makeObserver, Observer } from "../../../src/runtime/Observer.ts"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import * as Children from "../../../src/runtime/Children.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import * as ChildLaunch from "../../../src/runtime/internal/children/ChildLaunch.ts"
import { backends, errorTag, leaseOf, statusOf } from "../fixtures.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./childFixtures.ts"

/** Advances in steps of `step` until `done` holds (at most `max` steps). */
const advanceUntil = (h: Harness.Harness, step: Duration.Input, max: number, done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !done(); i++) yield* h.advance(step)
  })

for (const backend of backends) {
  describe(`child executions on ${backend.name}`, () => {
    it.effect("a parent fans out 20 children over 3 instances with 2 slots each: each runs once, never more than the free slots, outputs in order", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log)
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [parent], maxConcurrentSteps: 2 } })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 20 }))
        yield* h.settle
        // The parent rests while its children run: Paused, waiting on one launch, no lease held.
        const handle = (yield* RecordStore.use((r) => r.findByStatus("Paused", 10, Option.none())))[0]!
        assert.isDefined(handle, "the parent rests paused")
        const status = yield* h.instance(1).baton.status(handle.executionId)
        assert.strictEqual(status.waitingOnChildren.length, 1)
        assert.strictEqual(status.waitingOnChildren[0]!.children, 20)
        assert.deepStrictEqual(status.pendingPauses, [], "a children wait is no caller's to answer")
        const wait = (yield* PauseStore.use((p) => p.listByRoot(handle.tenantId, handle.executionId, ["Pending"])))[0]!
        const refused = yield* Effect.exit(Effect.flatMap(h.run(1, (b) => b.resume({ pauseId: wait.pauseId, decision: "go" })), Fiber.join))
        assert.strictEqual(errorTag(refused), "UnknownPauseError", "resume refuses a children wait")
        assert.isUndefined(yield* leaseOf(handle.tenantId, handle.executionId), "the resting parent holds no lease")
        yield* advanceUntil(h, "5 seconds", 40, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.strictEqual(out._tag, "Finished")
        const values = (out as { output: { results: Array<number>; total: number } }).output
        assert.deepStrictEqual(values.results, Array.from({ length: 20 }, (_, n) => n * 2))
        assert.strictEqual(values.total, 20)
        // every child ran exactly once
        assert.deepStrictEqual(log.runs.map((r) => r.n).sort((a, b) => a - b), Array.from({ length: 20 }, (_, n) => n))
        for (const [instanceId, max] of log.max) assert.isAtMost(max, 2, `${instanceId} ran ${max} children at once`)
        assert.strictEqual(log.max.size, 3, "all three instances ran children")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("placement parent: the children run on the parent's instance inside its step", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log)
        const parent = parentWorkflow(child, "parent")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent], maxConcurrentSteps: 1 } })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 3 }))
        yield* advanceUntil(h, "5 seconds", 20, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4])
        assert.deepStrictEqual([...new Set(log.runs.map((r) => r.instanceId))], ["instance-0"])
        assert.strictEqual(log.max.get("instance-0"), 1, "one slot: the parent's step gave it to its children one at a time")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a failed child fails the launching step with a typed error naming its cause", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        log.failing.add(1)
        const child = childWorkflow(log)
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 3 }))
        yield* advanceUntil(h, "5 seconds", 20, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        const values = (out as { output: { failed: string } }).output
        assert.match(values.failed, /1 child execution\(s\) of workflow "child"/)
        assert.match(values.failed, /#1 .*child 1 broke/)
        assert.strictEqual(log.runs.length, 3, "each child ran once; the failed one was not retried")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("kill the instance running child #3 mid-step: only #3 is reclaimed after its lease, its siblings go on, the parent finishes", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "20 seconds")
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 4, baton: { workflows: [parent], maxConcurrentSteps: 1 } })
        const root = yield* h.run(0, (b) => b.start(parent, { count: 4 }))
        yield* h.settle
        const handle = yield* Fiber.join(root)
        const victim = log.runs.find((r) => r.n === 3)!.instanceId
        const victimIndex = h.instances.findIndex((i) => i.instanceId === victim)
        yield* h.kill(victimIndex)
        const watcher = h.instances.findIndex((i) => i.state === "alive")
        const done = yield* h.run(watcher, (b) => b.await(handle))
        yield* h.advance("25 seconds")
        assert.deepStrictEqual(log.runs.filter((r) => r.n === 3).length, 1, "nobody takes #3 while its claim and lease live")
        assert.deepStrictEqual(log.runs.filter((r) => r.n !== 3).length, 3)
        yield* h.advance("6 seconds")
        const again = log.runs.filter((r) => r.n === 3)
        assert.strictEqual(again.length, 2, "#3 reclaimed once its claim expired")
        assert.notStrictEqual(again[1]!.instanceId, victim)
        yield* advanceUntil(h, "5 seconds", 20, () => done.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(done)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6])
        assert.strictEqual(log.runs.length, 5, "siblings ran once each, #3 twice")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a frozen holder of child #3 wakes past its lease: its writes are refused, the new holder's run counts", () => {
      const lost: Array<string> = []
      return Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "20 seconds")
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 4, baton: { workflows: [parent], maxConcurrentSteps: 1 } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 4 })))
        yield* h.settle
        const victim = log.runs.find((r) => r.n === 3)!.instanceId
        const victimIndex = h.instances.findIndex((i) => i.instanceId === victim)
        const childId = (yield* RecordStore.use((r) => r.findByStatus("Running", 10, Option.none()))).find((r) =>
          log.runs.length > 0 && r.parentExecutionId !== null && r.executionId.endsWith(".3")
        )!.executionId
        yield* h.freeze(victimIndex)
        yield* h.advance("31 seconds")
        const watcher = h.instances.findIndex((i) => i.state === "alive")
        const done = yield* h.run(watcher, (b) => b.await(handle))
        yield* h.thaw(victimIndex)
        yield* advanceUntil(h, "5 seconds", 20, () => done.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(done)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6])
        assert.deepStrictEqual(lost, [`${victim}:${childId}`], "the stale holder's write was refused: it lost child #3's lease")
        const record = yield* RecordStore.use((r) => r.getRecord("default", childId))
        assert.strictEqual(Option.getOrThrow(record).status, "Finished")
      }).pipe(
        Effect.provideService(Observer, makeObserver({ onLeaseLost: (e) => Effect.sync(() => lost.push(`${e.instanceId}:${e.executionId}`)) })),
        Effect.provide(Layer.fresh(backend.stores))
      )
    })

    it.effect("the parent's instance is killed while its children run: the parent is woken on another instance when the last child ends", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const parentLog = { fans: [] as Array<string>, afters: [] as Array<string> }
        const child = childWorkflow(log, "20 seconds")
        const parent = parentWorkflow(child, "any", parentLog)
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [parent], maxConcurrentSteps: 2 } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 4 })))
        yield* h.settle
        const status = yield* h.instance(1).baton.status(handle.executionId)
        yield* h.kill(0)
        const done = yield* h.run(1, (b) => b.await(handle))
        yield* advanceUntil(h, "5 seconds", 30, () => done.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(done)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6])
        assert.deepStrictEqual(parentLog.fans[0], "instance-0")
        assert.strictEqual(parentLog.afters.length, 1)
        assert.notStrictEqual(parentLog.afters[0], "instance-0", "the parent continued on a live instance")
        assert.notStrictEqual(parentLog.fans.at(-1), "instance-0")
        // the launching step ran again on another instance: it found its children and launched none twice
        const launchId = status.waitingOnChildren[0]!.launchId
        for (const n of [0, 1, 2, 3]) assert.strictEqual(yield* statusOf("default", `${launchId}.${n}`), "Finished")
        assert.isUndefined(yield* statusOf("default", `${launchId}.4`))
        assert.deepStrictEqual(yield* Children.launched("default", launchId), [], "the finished tree's queue rows went with it")
        for (const [key, n] of log.applied) assert.strictEqual(n, 1, `child side effect ${key} applied once`)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("cancel the parent mid-wave: queued children never start, running ones are asked to stop and end cancelled", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "30 seconds")
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent], maxConcurrentSteps: 1 } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 6 })))
        yield* h.settle
        assert.strictEqual(log.runs.length, 2, "two children run (one slot on each instance), four wait")
        const launchId = (yield* h.instance(1).baton.status(handle.executionId)).waitingOnChildren[0]!.launchId
        const before = yield* Children.launched("default", launchId)
        assert.deepStrictEqual(before.map((r) => r.position), [0, 1, 2, 3, 4, 5])
        assert.strictEqual(before.filter((r) => r.status === "Running").length, 2)
        assert.strictEqual(before.filter((r) => r.status === "Queued").length, 4)
        const cancelled = yield* Fiber.join(yield* h.run(1, (b) => b.cancel(handle.threadId)))
        assert.isTrue(cancelled.cancelled)
        assert.strictEqual(yield* statusOf(handle.tenantId, handle.executionId), "Cancelled")
        // the running children read the request at their next renewal (10 s) and stop
        yield* h.advance("11 seconds")
        yield* h.advance("30 seconds")
        assert.strictEqual(log.runs.length, 2, "no queued child started after the cancel")
        assert.strictEqual(log.applied.size, 0, "no child finished its work")
        const after = yield* Children.launched("default", launchId)
        assert.deepStrictEqual(after.map((r) => r.status), ["Failed", "Failed", "Failed", "Failed", "Failed", "Failed"], "every child's row ended Failed")
        for (const row of before) {
          assert.strictEqual(
            yield* statusOf("default", row.executionId),
            row.status === "Running" ? "Cancelled" : undefined,
            row.status === "Running" ? "a running child ended cancelled" : "a queued child never started"
          )
        }
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("close an instance mid-wave: its running children are handed over at once and finish elsewhere", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "20 seconds")
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 4, baton: { workflows: [parent], maxConcurrentSteps: 1 } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 3 })))
        yield* h.settle
        // three children on four instances of one slot each: one instance is idle
        const closing = log.runs.find((r) => r.instanceId !== "instance-0")!
        const closingIndex = h.instances.findIndex((i) => i.instanceId === closing.instanceId)
        const done = yield* h.run(0, (b) => b.await(handle))
        const close = yield* h.run(closingIndex, (b) => b.close({ timeout: "5 seconds" }))
        // passes are interrupted a grace (1 s) before the timeout: the child is back in the queue then
        yield* h.advance("4 seconds")
        yield* Fiber.join(close)
        yield* h.advance("1 seconds")
        const rerun = log.runs.filter((r) => r.n === closing!.n)
        assert.strictEqual(rerun.length, 2, "the closed instance's child ran again at once, not after its lease")
        assert.notStrictEqual(rerun[1]!.instanceId, closing.instanceId)
        yield* advanceUntil(h, "5 seconds", 20, () => done.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(done)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a root's maxConcurrentExecutions caps its children fleet-wide: 3 instances with 2 slots each race, never more than 2 run", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "5 seconds")
        const parent = parentWorkflow(child, "any", undefined, 2)
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [parent], maxConcurrentSteps: 2 } })
        const run = yield* h.run(0, (b) => b.execute(parent, { count: 8 }))
        yield* advanceUntil(h, "1 second", 120, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4, 6, 8, 10, 12, 14])
        assert.strictEqual(log.peak, 2, "two children at once, never more")
        assert.strictEqual(log.runs.length, 8, "each child ran once")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a claimer that died holding a new child's lease before recording it: the next claimer starts the child once that lease expired", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        const child = childWorkflow(log, "5 seconds")
        const parent = parentWorkflow(child, "any")
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [parent] } })
        const now = yield* Clock.currentTimeMillis
        // the dead claimer's lease on the child it never recorded
        assert.isTrue(Option.isSome(yield* LeaseStore.use((l) => l.acquire("default", "orphan-child", "dead#1", 30_000, now))))
        const runner = Context.get(h.instance(0).instance.services, ChildLaunch.ChildRunner)
        const spec = { tenantId: "default", executionId: "orphan-child", threadId: "orphan-child", parentExecutionId: "p", depth: 2, workflowName: "child", input: { n: 7 } }
        const end = yield* h.runIn(0, runner.run(spec))
        yield* h.advance("29 seconds")
        assert.deepStrictEqual(log.runs, [], "nothing runs while the dead claimer's lease lives")
        yield* h.advance("2 seconds")
        yield* h.advance("5 seconds")
        assert.deepStrictEqual(yield* Fiber.join(end), { outcome: "Answered", result: { n: 7, doubled: 14 } })
        assert.strictEqual(log.runs.length, 1)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("an Effect step launches with Workflow.launchChildren: outputs typed, a failure typed as ChildExecutionsFailedError", () =>
      Effect.gen(function*() {
        const log = makeChildLog()
        log.failing.add(2)
        const child = childWorkflow(log, "1 second")
        const State = Annotation.Root({ ok: Annotation<Array<number>>(), failedTag: Annotation<string>() })
        const parent = Workflow.make({
          name: "effect-parent",
          version: "1",
          children: [child],
          graph: new StateGraph(State)
            .addNode("fan", Workflow.effectStep((_s, ctx) =>
              Effect.gen(function*() {
                const ok = yield* Workflow.launchChildren(ctx, child, [{ n: 0 }, { n: 1 }], { placement: "any" })
                const failedTag = yield* Workflow.launchChildren(ctx, child, [{ n: 2 }], { placement: "any" }).pipe(
                  Effect.as("none"),
                  Effect.catchTag("ChildExecutionsFailedError", (e) => Effect.succeed(`${e._tag}:${e.failures[0]!.position}`))
                )
                return { ok: ok.map((o) => (o as { doubled: number }).doubled), failedTag }
              })
            ))
            .addEdge(START, "fan")
            .addEdge("fan", END)
        })
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const run = yield* h.run(0, (b) => b.execute(parent, {}))
        yield* advanceUntil(h, "1 second", 30, () => run.pollUnsafe() !== undefined)
        const out = yield* Fiber.join(run)
        assert.deepStrictEqual((out as { output: { ok: Array<number>; failedTag: string } }).output, { ok: [0, 2], failedTag: "ChildExecutionsFailedError:0" })
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
