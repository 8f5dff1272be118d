/**
 * `Baton.fork` on the fleet (Harness on the TestClock): a new execution
 * from a past checkpoint, on a new thread or the same one, re-running only
 * the steps after it — a subgraph checkpoint included: forked from inside a
 * subgraph, the subgraph goes on from there, not from its start.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Cause, Effect, Exit, Fiber, Layer, Option } from "effect"
import { type Baton, Workflow } from "../../../src/index.ts"
import { CheckpointStore } from "../../../src/stores/CheckpointStore.ts"
import { tenantConfigKey } from "../../../src/stores/Fence.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects } from "../fixtures.ts"

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  log: Annotation<Array<string>>({ reducer: (a, b) => [...new Set(a.concat(b))], default: () => [] })
})
type S = typeof State.State

/** Counts the runs of each node. */
const makeRuns = () => new Map<string, number>()
const ran = (runs: Map<string, number>, node: string) => runs.set(node, (runs.get(node) ?? 0) + 1)

/** `step` to 5, then `done` (×10). */
const counter = (runs: Map<string, number>) =>
  Workflow.make({
    name: "counter",
    version: "1",
    graph: new StateGraph(State)
      .addNode("step", Workflow.step(async (s: S) => (ran(runs, "step"), { count: s.count + 1 })))
      .addNode("done", Workflow.step(async (s: S) => (ran(runs, "done"), { count: s.count * 10 })))
      .addEdge(START, "step")
      .addConditionalEdges("step", (s: S) => (s.count < 5 ? "step" : "done"))
      .addEdge("done", END)
  })

/** A subgraph ticking from the state's count to 6, then pausing; the parent runs it after one step. */
const nested = (runs: Map<string, number>) =>
  Workflow.make({
    name: "nested",
    version: "1",
    graph: new StateGraph(State)
      .addNode("first", Workflow.step(async () => ({ log: ["first"] })))
      .addNode(
        "sub",
        new StateGraph(State)
          .addNode("tick", async (s: S) => (ran(runs, "tick"), { count: s.count + 1 }))
          .addNode("ask", async (s: S) => ({ log: [`asked at ${s.count}: ${String(interrupt({ q: "ok?" }))}`] }))
          .addEdge(START, "tick")
          .addConditionalEdges("tick", (s: S) => (s.count < 6 ? "tick" : "ask"))
          .addEdge("ask", END)
          .compile()
      )
      .addEdge(START, "first")
      .addEdge("first", "sub")
      .addEdge("sub", END)
  })


/** a → b → c, each noting its run (and its key) and appending its name; `b` also writes how many times it has run in all. */
const linear = (runs: Array<string>, keys: Map<string, Array<string>>, counted = { b: 0 }) => {
  const Trail = Annotation.Root({
    x: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
    trail: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
  })
  const node = (name: string) =>
    Workflow.step(async (_s: typeof Trail.State, ctx) => {
      runs.push(name)
      keys.set(`${ctx.threadId}:${name}`, [...(keys.get(`${ctx.threadId}:${name}`) ?? []), ctx.idempotencyKey])
      return name === "b" ? { trail: [name], x: ++counted.b } : { trail: [name] }
    })
  return Workflow.make({
    name: "linear",
    version: "1",
    graph: new StateGraph(Trail).addNode("a", node("a")).addNode("b", node("b")).addNode("c", node("c"))
      .addEdge(START, "a").addEdge("a", "b").addEdge("b", "c").addEdge("c", END)
  })
}

for (const backend of backends) {
  describe(`fork on ${backend.name}`, () => {
    it.effect("a fork of a paused thread to a new thread pauses anew without re-running a step; the source keeps its pause", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const scope = { tenantId: "acme", ownerId: "ann" }
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { ...scope, threadId: "a" })))
        if (out._tag !== "Paused") return assert.fail("paused")
        const newest = (yield* Fiber.join(yield* h.run(1, (b) => b.checkpoints("a", { ...scope, limit: 1 })))).checkpoints[0]!
        const forked = yield* Fiber.join(yield* h.run(1, (b) => b.fork({ ...scope, threadId: "a", checkpointId: newest.checkpointId, toThreadId: "b" })))
        if (forked._tag !== "Paused") return assert.fail(`the fork pauses anew (${forked._tag})`)
        assert.strictEqual(forked.threadId, "b")
        assert.notStrictEqual(forked.pauses[0]!.pauseId, out.pauses[0]!.pauseId, "a pause of its own")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve", "approve"], "draft did not run again; the paused node did")
        const done = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ ...scope, pauseId: forked.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(done._tag, "Finished")
        const pending = yield* Fiber.join(yield* h.run(0, (b) => b.pendingPauses({ ...scope, threadId: "a" })))
        assert.deepStrictEqual(pending.map((p) => p.pauseId), [out.pauses[0]!.pauseId], "the source still waits for its answer")
        const fromB = (yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("b", { ...scope, limit: 100 })))).checkpoints
        assert.isTrue(fromB.some((c) => c.checkpointId === newest.checkpointId), "the forked checkpoint went over with its id")
        assert.isTrue(fromB.filter((c) => c.checkpointId !== newest.checkpointId && c.step !== null && c.step > newest.step!).every((c) => c.executionId === forked.executionId), "the fork's own checkpoints are its execution's")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a fork on the same thread from an earlier checkpoint, with an update, re-runs only the steps after it", () =>
      Effect.gen(function*() {
        const runs = makeRuns()
        const wf = counter(runs)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "c" })))
        assert.deepStrictEqual(first._tag === "Finished" && (first.output as S).count, 50)
        const history = (yield* Fiber.join(yield* h.run(1, (b) => b.checkpoints("c", { limit: 100 })))).checkpoints
        const atThree = history.find((c) => c.step === 3)!
        runs.clear()
        const forked = yield* Fiber.join(yield* h.run(1, (b) => b.fork({ threadId: "c", checkpointId: atThree.checkpointId, update: { count: 4 }, asNode: "step" })))
        assert.strictEqual(forked._tag, "Finished")
        assert.strictEqual((forked as { output: S }).output.count, 50, "4 (the update) → step → 5 → done")
        assert.deepStrictEqual(Object.fromEntries(runs), { step: 1, done: 1 }, "only the steps after the checkpoint ran")
        const sources = (yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("c", { limit: 3 })))).checkpoints.map((c) => c.source)
        assert.includeMembers(sources, ["loop"])
        const busy = yield* Fiber.await(yield* h.run(0, (b) => b.fork({ threadId: "c", checkpointId: "nope" })))
        assert.strictEqual(errorTag(busy), "UnknownCheckpointError")
        const toNew = yield* Fiber.await(yield* h.run(0, (b) => b.fork({ threadId: "c", checkpointId: "nope", toThreadId: "d2" })))
        assert.strictEqual(errorTag(toNew), "UnknownCheckpointError")
        assert.isTrue(Option.isNone(yield* RecordStore.use((r) => r.getThread("default", "d2"))), "nothing was started: no thread d2")
        const otherTenant = yield* Fiber.await(yield* h.run(0, (b) => b.fork({ tenantId: "beta", threadId: "c", checkpointId: atThree.checkpointId, toThreadId: "d" })))
        assert.strictEqual(errorTag(otherTenant), "UnknownThreadError", "another tenant's thread is unknown")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("forked from a checkpoint inside a subgraph, the subgraph goes on from there, not from its start", () =>
      Effect.gen(function*() {
        const runs = makeRuns()
        const wf = nested(runs)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "n" })))
        if (out._tag !== "Paused") return assert.fail("paused inside the subgraph")
        assert.strictEqual(runs.get("tick"), 6)
        const rows = yield* (yield* CheckpointStore).lifecycle!.listCheckpoints("default", "n", { limit: 1000 })
        const subNs = rows.find((r) => r.checkpointNs.startsWith("sub:"))!.checkpointNs
        const inside = (yield* Fiber.join(yield* h.run(1, (b) => b.checkpoints("n", { checkpointNs: subNs, limit: 100 })))).checkpoints
        const atThree = inside.find((c) => c.step === 3)!
        assert.isDefined(atThree, "a checkpoint of the subgraph under way")
        const { saver } = yield* CheckpointStore
        const at = yield* Effect.promise(() => saver.getTuple({ configurable: { thread_id: "n", checkpoint_ns: subNs, checkpoint_id: atThree.checkpointId } }))
        const countThen = (at!.checkpoint.channel_values as S).count
        assert.isAbove(countThen, 1, "some ticks had run")
        assert.isBelow(countThen, 6, "not all")
        // A tick that had finished on that checkpoint left its writes on it: it is not run again (LangGraph's rule).
        const finishedThere = (at!.pendingWrites ?? []).some(([, channel]) => channel === "count") ? 1 : 0
        runs.clear()
        const forked = yield* Fiber.join(yield* h.run(1, (b) => b.fork({ threadId: "n", checkpointNs: subNs, checkpointId: atThree.checkpointId, toThreadId: "n2" })))
        if (forked._tag !== "Paused") return assert.fail(`the fork pauses inside the subgraph again (${forked._tag})`)
        assert.strictEqual(runs.get("tick"), 6 - countThen - finishedThere, "only the ticks after the checkpoint: the subgraph did not start over")
        const done = yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: forked.pauses[0]!.pauseId, decision: "fine" })))
        if (done._tag !== "Finished") return assert.fail("finished")
        assert.deepStrictEqual((done.output as S).log, ["first", "asked at 6: fine"])
        assert.strictEqual(runs.get("tick"), 6 - countThen - finishedThere, "and not on the answer either")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("copyThread copies every checkpoint to a new thread of the same tenant; another tenant's thread or an existing target is refused", () =>
      Effect.gen(function*() {
        const runs = makeRuns()
        const wf = nested(runs)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const scope = { tenantId: "acme", ownerId: "ann" }
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { ...scope, threadId: "orig" })))
        const copied = yield* Fiber.join(yield* h.run(1, (b) => b.copyThread("orig", "copy", scope)))
        const lifecycle = (yield* CheckpointStore).lifecycle!
        const of = (threadId: string) => Effect.map(lifecycle.listCheckpoints("acme", threadId, { limit: 1000 }), (rows) => rows.map((r) => `${r.checkpointNs}/${r.checkpointId}`).sort())
        const original = yield* of("orig")
        assert.strictEqual(copied.checkpoints, original.length)
        assert.deepStrictEqual(yield* of("copy"), original, "every checkpoint of every namespace, ids kept")
        const { saver } = yield* CheckpointStore
        const newest = (threadId: string) => Effect.promise(() => saver.getTuple({ configurable: { thread_id: threadId, [tenantConfigKey]: "acme" } }))
        assert.deepStrictEqual((yield* newest("copy"))!.checkpoint.channel_values, (yield* newest("orig"))!.checkpoint.channel_values)
        assert.deepStrictEqual((yield* newest("copy"))!.pendingWrites, (yield* newest("orig"))!.pendingWrites)
        const page = yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("copy", scope)))
        assert.isAbove(page.checkpoints.length, 0, "the copy is owned like the source: its owner reads it")
        assert.strictEqual(errorTag(yield* Fiber.await(yield* h.run(0, (b) => b.copyThread("orig", "elsewhere", { tenantId: "beta", ownerId: "ann" })))), "UnknownThreadError")
        assert.strictEqual(errorTag(yield* Fiber.await(yield* h.run(0, (b) => b.copyThread("orig", "copy", scope)))), "InvalidInputError")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("steps a fork runs again get new idempotency keys, on a new thread and on the same one", () =>
      Effect.gen(function*() {
        // The keys each run of `step` got, by thread and the count it started from.
        const keys = new Map<string, Array<string>>()
        const note = (k: string, key: string) => keys.set(k, [...(keys.get(k) ?? []), key])
        const wf = Workflow.make({
          name: "keyed",
          version: "1",
          graph: new StateGraph(State)
            .addNode("step", Workflow.step(async (s: S, ctx) => (note(`${ctx.threadId}:${s.count}`, ctx.idempotencyKey), { count: s.count + 1 })))
            .addEdge(START, "step")
            .addConditionalEdges("step", (s: S) => (s.count < 5 ? "step" : END))
        })
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "src" })))
        const atThree = (yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("src", { limit: 100 })))).checkpoints.find((c) => c.step === 3)!
        yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: atThree.checkpointId, toThreadId: "copy" })))
        yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: atThree.checkpointId })))
        const rerun = [...keys.keys()].filter((k) => k.startsWith("copy:")).map((k) => k.slice("copy:".length))
        assert.isAbove(rerun.length, 0, "steps ran again")
        for (const count of rerun) {
          const [first, again] = keys.get(`src:${count}`)!
          assert.isDefined(again, `the same-thread fork ran the step from count ${count} again`)
          assert.notStrictEqual(keys.get(`copy:${count}`)![0], first, `a new key on the new thread (from count ${count})`)
          assert.notStrictEqual(again, first, `a new key on the same thread (from count ${count})`)
        }
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("with reuseIdempotencyKeys, steps a fork runs again take the first run's keys: on a new thread, on the same one, on another instance", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const keys = new Map<string, Array<string>>()
        const note = (k: string, key: string) => (keys.set(k, [...(keys.get(k) ?? []), key]), fx.apply(key))
        const wf = Workflow.make({
          name: "reused",
          version: "1",
          graph: new StateGraph(State)
            .addNode("step", Workflow.step(async (s: S, ctx) => (note(`${ctx.threadId}:${s.count}`, ctx.idempotencyKey), { count: s.count + 1 })))
            .addNode("done", Workflow.step(async (_s: S, ctx) => (note(`${ctx.threadId}:done`, ctx.idempotencyKey), { log: ["done"] })))
            .addEdge(START, "step")
            .addConditionalEdges("step", (s: S) => (s.count < 5 ? "step" : "done"))
            .addEdge("done", END)
        })
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "src" })))
        const first = new Map([...keys].map(([k, v]) => [k, v[0]!]))
        const atThree = (yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("src", { limit: 100 })))).checkpoints.find((c) => c.step === 3)!
        // On a new thread, on the other instance.
        const copy = yield* Fiber.join(yield* h.run(1, (b) => b.fork({ threadId: "src", checkpointId: atThree.checkpointId, toThreadId: "copy", reuseIdempotencyKeys: true })))
        assert.strictEqual(copy._tag, "Finished")
        const rerun = [...keys.keys()].filter((k) => k.startsWith("copy:")).map((k) => k.slice("copy:".length))
        assert.include(rerun, "done")
        assert.isAbove(rerun.length, 1, "steps ran again")
        for (const at of rerun) assert.strictEqual(keys.get(`copy:${at}`)![0], first.get(`src:${at}`), `the first run's key (${at})`)
        // On the same thread: the steps after it keep their keys too (updates: see the test below).
        const again = yield* Fiber.join(yield* h.run(0, (b) =>
          b.fork({ threadId: "src", checkpointId: atThree.checkpointId, reuseIdempotencyKeys: true })))
        assert.strictEqual(again._tag, "Finished")
        const twice = [...keys].filter(([k, v]) => k.startsWith("src:") && v.length === 2)
        assert.strictEqual(twice.length, rerun.length, "the steps after the checkpoint ran again on the source thread")
        for (const [k, [one, two]] of twice) assert.strictEqual(two, one, `with the first run's key (${k})`)
        // Without the option, the same fork's keys are new.
        yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: atThree.checkpointId, toThreadId: "fresh" })))
        for (const at of rerun) assert.notStrictEqual(keys.get(`fresh:${at}`)![0], first.get(`src:${at}`), `a new key without the option (${at})`)
        // An effect keyed by ctx.idempotencyKey was applied once per key however often the step ran.
        for (const at of rerun) assert.strictEqual(fx.applied.get(first.get(`src:${at}`)!), 3, `one key, three runs (${at}): the first and two reusing forks`)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a fork runs every step after the checkpoint, as LangGraph's own fork does: on a new thread, on the same one, after an update", () =>
      Effect.gen(function*() {
        const runs: Array<string> = []
        const counted = { b: 0 }
        const wf = linear(runs, new Map(), counted)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "src" })))
        const at = (step: number) => h.run(0, (b) => b.checkpoints("src", { limit: 100 })).pipe(
          Effect.flatMap(Fiber.join),
          Effect.map((page) => page.checkpoints.find((c) => c.step === step && c.source === "loop")!.checkpointId)
        )
        const afterA = yield* at(1)
        const afterB = yield* at(2)
        const fork = (input: Baton.ForkInput) =>
          Effect.gen(function*() {
            runs.length = 0
            const out = yield* Fiber.join(yield* h.run(1, (b) => b.fork(input)))
            if (out._tag !== "Finished") return assert.fail(`finished (${out._tag})`)
            return { ran: [...runs], output: out.output as { x: number; trail: Array<string> } }
          })
        // A new thread: the step that went on from the checkpoint runs again (its writes stay with the source).
        assert.deepStrictEqual((yield* fork({ threadId: "src", checkpointId: afterA, toThreadId: "n1" })).ran, ["b", "c"])
        assert.deepStrictEqual((yield* fork({ threadId: "src", checkpointId: afterB, toThreadId: "n2" })).ran, ["c"])
        const updated = yield* fork({ threadId: "src", checkpointId: afterA, toThreadId: "n3", update: { x: 90 }, asNode: "a" })
        assert.deepStrictEqual(updated.ran, ["b", "c"])
        assert.deepStrictEqual(updated.output.trail, ["a", "b", "c"], "b's first-run writes are not applied as well")
        // The same thread, with an update written as the node before: the steps after it run.
        const same = yield* fork({ threadId: "src", checkpointId: afterA, update: { x: 90 }, asNode: "a" })
        assert.deepStrictEqual(same.ran, ["b", "c"])
        assert.deepStrictEqual(same.output.trail, ["a", "b", "c"])
        // The same thread again, no update: the new branch reads its own values, not those the old branch stored.
        const again = yield* fork({ threadId: "src", checkpointId: afterA })
        assert.deepStrictEqual(again.ran, ["b", "c"])
        assert.strictEqual(again.output.x, counted.b, "b's value in this run (its run count), not an earlier branch's")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("an update LangGraph refuses fails the fork with InvalidInputError naming it, and nothing is written", () =>
      Effect.gen(function*() {
        const wf = linear([], new Map())
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "src" })))
        const page = yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("src", { limit: 100 })))
        const afterA = page.checkpoints.find((c) => c.step === 1)!.checkpointId
        const refused = (input: Record<string, unknown>) =>
          Effect.gen(function*() {
            const exit = yield* Fiber.await(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: afterA, ...input } as Baton.ForkInput)))
            return Exit.isFailure(exit) ? Cause.squash(exit.cause) as { _tag: string; field?: string } : undefined
          })
        for (const to of [{ toThreadId: "n" }, {}]) {
          const badNode = yield* refused({ ...to, update: { x: 1 }, asNode: "nope" })
          assert.deepStrictEqual([badNode?._tag, badNode?.field], ["InvalidInputError", "asNode"])
          const notObject = yield* refused({ ...to, update: 5 as unknown as Record<string, unknown>, asNode: "a" })
          assert.deepStrictEqual([notObject?._tag, notObject?.field], ["InvalidInputError", "update"])
        }
        const misspelt = yield* refused({ toThreadId: "n", reuseIdempotencyKey: true })
        assert.deepStrictEqual([misspelt?._tag, misspelt?.field], ["InvalidInputError", "reuseIdempotencyKey"], "a misspelt option is refused, not ignored")
        const unknown = yield* Fiber.await(yield* h.run(0, (b) => b.checkpoints("n", {})))
        assert.strictEqual(errorTag(unknown), "UnknownThreadError", "no thread was created")
        const now = yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("src", { limit: 100 })))
        assert.deepStrictEqual(now.checkpoints.map((c) => c.checkpointId), page.checkpoints.map((c) => c.checkpointId), "the source thread is as it was")
        const runs = yield* Fiber.join(yield* h.run(0, (b) => b.list({ threadId: "src" })))
        assert.deepStrictEqual(runs.executions.map((e) => e.status), ["Finished"], "no execution was started")
        assert.strictEqual((yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: afterA, toThreadId: "n" }))))._tag, "Finished")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("reused keys after an update: one written as the next node stands in for its step; one written as the node before is a step of its own", () =>
      Effect.gen(function*() {
        const keys = new Map<string, Array<string>>()
        const wf = linear([], keys)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "src" })))
        const page = yield* Fiber.join(yield* h.run(0, (b) => b.checkpoints("src", { limit: 100 })))
        const first = (node: string) => keys.get(`src:${node}`)![0]
        const beforeA = page.checkpoints.find((c) => c.step === 0)!.checkpointId
        const afterA = page.checkpoints.find((c) => c.step === 1)!.checkpointId
        yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: beforeA, toThreadId: "n0", update: { x: 1 }, asNode: "a", reuseIdempotencyKeys: true })))
        assert.deepStrictEqual([keys.get("n0:b")?.[0], keys.get("n0:c")?.[0]], [first("b"), first("c")], "the update stands in for a's step")
        assert.isUndefined(keys.get("n0:a"), "a did not run")
        yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: afterA, toThreadId: "n1", update: { x: 1 }, asNode: "a", reuseIdempotencyKeys: true })))
        assert.deepStrictEqual([keys.get("n1:b")?.[0], keys.get("n1:c")?.[0]], [first("b"), first("c")], "written as a again: a step of its own before b")
        yield* Fiber.join(yield* h.run(0, (b) => b.fork({ threadId: "src", checkpointId: afterA, update: { x: 1 }, asNode: "a", reuseIdempotencyKeys: true })))
        assert.deepStrictEqual([keys.get("src:b")?.[1], keys.get("src:c")?.[1]], [first("b"), first("c")], "on the same thread too")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
