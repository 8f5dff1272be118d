/**
 * Step slots through the runtime (the multi-instance harness, TestClock):
 * a cap on steps running at once, their order while they wait, cancel and
 * close of waiting steps, readiness, and recovery on a full instance.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Clock, Duration, Effect, Fiber, Layer, Option } from "effect"
import * as Baton from "../../../src/runtime/Baton.ts"
import { Observer, make as makeObserver } from "../../../src/runtime/Observer.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as StepSlots from "../../../src/runtime/internal/limits/StepSlots.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as VisitOrder from "../../../src/runtime/internal/background/VisitOrder.ts"
import { backends, errorTag, statusOf } from "../fixtures.ts"

const State = Annotation.Root({
  /** Who this execution is, in the log of step starts. */
  name: Annotation<string>(),
  /** How long a node that works for "the input's time" works, on the Clock. */
  seconds: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})
type Input = { readonly name: string; readonly seconds: number }

/** What the steps did: each start as `name.node@second`, and how many ran at once at most. */
const makeTrace = () => {
  const trace = {
    starts: [] as Array<string>,
    running: 0,
    most: 0,
    /** A node that logs its start, then works `seconds` (or the input's time) on the Clock. */
    node: (label: string, seconds?: number) =>
      Workflow.effectStep((s: typeof State.State) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          trace.starts.push(`${s.name}.${label}@${now / 1000}`)
          trace.running++
          trace.most = Math.max(trace.most, trace.running)
          const work = seconds ?? s.seconds
          if (work > 0) yield* Effect.sleep(Duration.seconds(work)) // on the harness's TestClock
          return { log: [label] }
        }).pipe(Effect.ensuring(Effect.sync(() => trace.running--)))
      )
  }
  return trace
}
type Trace = ReturnType<typeof makeTrace>

/** One step that works for the input's time. */
const solo = (t: Trace) =>
  Workflow.make<Input>({
    name: "solo",
    version: "1",
    graph: new StateGraph(State).addNode("only", t.node("only")).addEdge(START, "only").addEdge("only", END)
  })

/** fork → `width` branches working the input's time → join (a waiting edge over every branch). */
const fan = (t: Trace, width: number) => {
  const branches = Array.from({ length: width }, (_, i) => `b${i + 1}`)
  let graph = new StateGraph(State).addNode("fork", t.node("fork", 0)).addNode("join", t.node("join", 0)) as StateGraph<any, any, any, any>
  for (const b of branches) graph = graph.addNode(b, t.node(b))
  graph = graph.addEdge(START, "fork")
  for (const b of branches) graph = graph.addEdge("fork", b)
  graph = graph.addEdge(branches, "join").addEdge("join", END)
  return Workflow.make<Input>({ name: `fan${width}`, version: "1", graph })
}

/** ask (pauses) → after. */
const ask = (t: Trace) =>
  Workflow.make<Input>({
    name: "ask",
    version: "1",
    graph: new StateGraph(State)
      .addNode("ask", Workflow.step(async (s: typeof State.State) => {
        t.starts.push(`${s.name}.ask`)
        const answer = interrupt({ question: "go on?" })
        return { log: [`ask:${String(answer)}`] }
      }))
      .addNode("after", t.node("after", 0))
      .addEdge(START, "ask")
      .addEdge("ask", "after")
      .addEdge("after", END)
  })

/** A step whose body runs a compiled subgraph of steps (its steps run in the outer step's slot). */
const nested = (t: Trace) => {
  const inner = new StateGraph(State)
    .addNode("inner1", t.node("inner1", 0))
    .addNode("inner2", t.node("inner2", 0))
    .addEdge(START, "inner1")
    .addEdge("inner1", "inner2")
    .addEdge("inner2", END)
    .compile()
  return Workflow.make<Input>({
    name: "nested",
    version: "1",
    graph: new StateGraph(State)
      .addNode("outer", Workflow.step(async (s: typeof State.State) => {
        const out = await inner.invoke(s)
        return { log: out.log.slice(s.log.length) }
      }))
      .addEdge(START, "outer")
      .addEdge("outer", END)
  })
}

const slotsOf = (h: Harness.Harness, i: number) => StepSlots.fromInstance(h.instance(i).instance)!

const stepSlotsComponent = (h: Harness.Harness, i: number) =>
  Effect.gen(function*() {
    const report = yield* Fiber.join(yield* h.run(i, (b) => b.checkReadiness))
    return report.components.find((c) => c.name === "step-slots")
  })

for (const backend of backends) {
describe(`step slots on ${backend.name}`, () => {
  it.effect("cap 2 with 5 ready steps: exactly 2 run at once, the others wait their turn; readiness Degraded while full", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const wf = fan(t, 5)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], maxConcurrentSteps: 2 } })
      const run = yield* h.run(0, (b) => b.execute(wf, { name: "F", seconds: 10 }))
      yield* h.settle
      assert.deepStrictEqual(yield* stepSlotsComponent(h, 0), {
        name: "step-slots",
        status: "Degraded",
        message: "2 of 2 step slots busy, 3 steps waiting"
      })
      assert.strictEqual((yield* h.instance(0).baton.checkLiveness).status, "Healthy", "liveness is not affected")
      yield* h.advance("10 seconds")
      assert.strictEqual((yield* stepSlotsComponent(h, 0))?.message, "2 of 2 step slots busy, 1 step waiting")
      yield* h.advance("10 seconds")
      assert.deepStrictEqual(yield* stepSlotsComponent(h, 0), { name: "step-slots", status: "Healthy", message: "1 of 2 step slots busy" })
      yield* h.advance("10 seconds")
      const out = yield* Fiber.join(run)
      assert.strictEqual(out._tag, "Finished")
      assert.deepStrictEqual(t.starts, ["F.fork@0", "F.b1@0", "F.b2@0", "F.b3@10", "F.b4@10", "F.b5@20", "F.join@30"])
      assert.strictEqual(t.most, 2)
      assert.deepStrictEqual([slotsOf(h, 0).busy, slotsOf(h, 0).waiting], [0, 0])
      assert.strictEqual((yield* stepSlotsComponent(h, 0))?.status, "Healthy")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("no cap: every branch runs at once and readiness has no step-slots component", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const wf = fan(t, 5)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const run = yield* h.run(0, (b) => b.execute(wf, { name: "F", seconds: 10 }))
      yield* h.settle
      assert.isUndefined(StepSlots.fromInstance(h.instance(0).instance))
      assert.isUndefined(yield* stepSlotsComponent(h, 0))
      yield* h.advance("10 seconds")
      assert.strictEqual((yield* Fiber.join(run))._tag, "Finished")
      assert.strictEqual(t.most, 5)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a step that closes a branch overtakes waiters that came before it", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const f = fan(t, 2)
      const s = solo(t)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [f, s], maxConcurrentSteps: 2 } })
      const runs = [yield* h.run(0, (b) => b.execute(f, { name: "F", seconds: 10 }))]
      yield* h.settle
      // Both slots hold F's branches; three new roots wait, in this order.
      for (const [name, seconds] of [["S1", 20], ["S2", 25], ["S3", 5]] as const) {
        runs.push(yield* h.run(0, (b) => b.execute(s, { name, seconds })))
        yield* h.settle
      }
      yield* h.advance("10 seconds")
      // F's branches ended: S1 and S2 took their slots; F's join came after S3 and waits with it.
      assert.strictEqual(slotsOf(h, 0).waiting, 2)
      yield* h.advance("20 seconds")
      yield* h.advance("10 seconds")
      for (const r of runs) assert.strictEqual((yield* Fiber.join(r))._tag, "Finished")
      assert.deepStrictEqual(t.starts, ["F.fork@0", "F.b1@0", "F.b2@0", "S1.only@10", "S2.only@10", "F.join@30", "S3.only@30"])
      assert.strictEqual(t.most, 2)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  for (const [arrives, frees, expected] of [
    [5, 8, ["P.ask", "blocker.only@0", "P.ask", "N.only@8", "P.after@8"]],
    [15, 18, ["P.ask", "blocker.only@0", "N.only@18", "P.ask", "P.after@18"]]
  ] as const) {
    it.effect(`a new root's first step comes last, each 10 s of waiting one level deeper (a step arriving at ${arrives} s, a slot freed at ${frees} s)`, () =>
      Effect.gen(function*() {
        const t = makeTrace()
        const s = solo(t)
        const p = ask(t)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [s, p], maxConcurrentSteps: 1 } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(p, { name: "P", seconds: 0 })))
        assert.strictEqual(paused._tag, "Paused")
        if (paused._tag !== "Paused") return
        const blocker = yield* h.run(0, (b) => b.execute(s, { name: "blocker", seconds: frees }))
        yield* h.settle
        const fresh = yield* h.run(0, (b) => b.execute(s, { name: "N", seconds: 0 }))
        yield* h.advance(`${arrives} seconds`)
        // The answer continues P: its step waits too, but it is not a new root's first step.
        const resumed = yield* h.run(0, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" }))
        yield* h.settle
        assert.strictEqual(slotsOf(h, 0).waiting, 2)
        yield* h.advance(`${frees - arrives} seconds`)
        for (const r of [blocker, fresh, resumed]) assert.strictEqual((yield* Fiber.join(r))._tag, "Finished")
        assert.deepStrictEqual(t.starts, [...expected])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  }

  it.effect("a cancelled waiter leaves the queue at once; its step never runs", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const s = solo(t)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [s], maxConcurrentSteps: 1 } })
      const blocker = yield* h.run(0, (b) => b.execute(s, { name: "blocker", seconds: 30 }))
      yield* h.settle
      const waiting = yield* h.run(0, (b) => b.execute(s, { name: "W", seconds: 0 }, { threadId: "waiting-thread" }))
      yield* h.settle
      assert.strictEqual((yield* stepSlotsComponent(h, 0))?.message, "1 of 1 step slots busy, 1 step waiting")
      assert.deepStrictEqual(yield* Fiber.join(yield* h.run(0, (b) => b.cancel("waiting-thread"))), { cancelled: true })
      assert.strictEqual(slotsOf(h, 0).waiting, 0, "out of the queue at once")
      yield* h.settle
      assert.strictEqual(errorTag(yield* Fiber.await(waiting)), "ExecutionCancelledError")
      assert.strictEqual((yield* stepSlotsComponent(h, 0))?.message, "1 of 1 step slots busy, 0 steps waiting")
      yield* h.advance("30 seconds")
      assert.strictEqual((yield* Fiber.join(blocker))._tag, "Finished")
      assert.deepStrictEqual(t.starts, ["blocker.only@0"], "the cancelled step never ran")
      assert.deepStrictEqual(yield* stepSlotsComponent(h, 0), { name: "step-slots", status: "Healthy", message: "0 of 1 step slots busy" })
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a waiter whose pass loses its lease leaves the queue when the holder stops", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const s = solo(t)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [s], maxConcurrentSteps: 1 } })
      const running = yield* h.run(0, (b) => b.execute(s, { name: "A", seconds: 60 }))
      yield* h.settle
      const waiting = yield* h.run(0, (b) => b.execute(s, { name: "W", seconds: 0 }))
      yield* h.settle
      // No renewal reaches the store: at the end of the last confirmed lease both holders stop.
      yield* h.disconnect(0)
      yield* h.advance("29 seconds")
      assert.deepStrictEqual([slotsOf(h, 0).busy, slotsOf(h, 0).waiting], [1, 1])
      yield* h.advance("1 second")
      assert.strictEqual(errorTag(yield* Fiber.await(waiting)), "LeaseLostError")
      assert.strictEqual(errorTag(yield* Fiber.await(running)), "LeaseLostError")
      assert.deepStrictEqual([slotsOf(h, 0).busy, slotsOf(h, 0).waiting], [0, 0])
      assert.deepStrictEqual(t.starts, ["A.only@0"], "the waiting step never ran")
      yield* h.reconnect(0)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a graceful close interrupts waiting steps with the running ones at the grace; another instance takes both", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const s = solo(t)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [s], maxConcurrentSteps: 1 } })
      const first = yield* h.run(0, (b) => b.execute(s, { name: "A", seconds: 60 }))
      yield* h.settle
      const second = yield* h.run(0, (b) => b.execute(s, { name: "B", seconds: 60 }))
      yield* h.settle
      assert.deepStrictEqual([slotsOf(h, 0).busy, slotsOf(h, 0).waiting], [1, 1])
      const closing = yield* h.run(0, (b) => b.close({ timeout: "10 seconds" }))
      yield* h.advance("7 seconds")
      assert.deepStrictEqual([slotsOf(h, 0).busy, slotsOf(h, 0).waiting], [1, 1], "they wait with the running one until the grace")
      yield* h.advance("1 second")
      yield* Fiber.join(closing)
      assert.deepStrictEqual([slotsOf(h, 0).busy, slotsOf(h, 0).waiting], [0, 0])
      assert.strictEqual(errorTag(yield* Fiber.await(first)), "InstanceStoppingError")
      assert.strictEqual(errorTag(yield* Fiber.await(second)), "InstanceStoppingError")
      const roots = yield* RecordStore.use((r) => r.findByStatus("Running", 10, Option.none()))
      assert.strictEqual(roots.length, 2, "both stay Running for another instance")
      // Instance 1 (one slot) takes them one after the other.
      yield* h.advance("200 seconds")
      for (const r of roots) assert.strictEqual(yield* statusOf(r.tenantId, r.executionId), "Finished")
      assert.strictEqual(t.starts.filter((x) => x.startsWith("B.")).length, 1, "the waiting step ran once, on instance 1")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a full instance's sweep starts no recovery; once slots free, its looks recover the page's orphans one slot at a time, in its own order", () => {
    const recovered: Array<{ instanceId: string; executionId: string }> = []
    return Effect.gen(function*() {
      const t = makeTrace()
      const s = solo(t)
      const h = yield* Harness.make({ instances: 4, baton: { workflows: [s], maxConcurrentSteps: 1 } })
      // Instance 3 is full for 40 s; instances 0, 1 and 2 each hold a root that works 200 s.
      const hold = yield* h.run(3, (b) => b.execute(s, { name: "hold", seconds: 40 }))
      for (const i of [0, 1, 2]) yield* h.run(i, (b) => b.execute(s, { name: `R${i}`, seconds: 200 }))
      yield* h.settle
      const held = (yield* RecordStore.use((r) => r.findByStatus("Running", 10, Option.none())))
      const orphans = held.filter((r) => h.instances.slice(0, 3).some((x) => [...x.instance.passes.active].some((p) => p.rootExecutionId === r.executionId)))
      // In the order instance 3 visits them (its own ranking of the page): the first one's holder stays alive for now.
      const [r1, r2, r3] = VisitOrder.ofInstance(`${h.instance(3).instanceId}#${h.instance(3).instance.incarnation}`, orphans.map((r) => ({ ...r, rootExecutionId: r.executionId })))
      const holderOf = (executionId: string) =>
        h.instances.findIndex((x) => [...x.instance.passes.active].some((p) => p.rootExecutionId === executionId))
      const r1Holder = holderOf(r1!.executionId)
      yield* h.kill(holderOf(r2!.executionId))
      yield* h.kill(holderOf(r3!.executionId))
      yield* h.advance("39 seconds")
      assert.deepStrictEqual(recovered, [], "every live instance is full: nobody recovers")
      assert.strictEqual((yield* stepSlotsComponent(h, 3))?.status, "Degraded")
      yield* h.advance("1 second")
      assert.strictEqual((yield* Fiber.join(hold))._tag, "Finished")
      // One free slot: one recovery (r2; r1's holder is alive), and the look stops before r3.
      assert.deepStrictEqual(recovered, [{ instanceId: h.instance(3).instanceId, executionId: r2!.executionId }])
      yield* h.kill(r1Holder)
      // r1 is an orphan too from its lease's expiry on; the next looks visit the page again in instance 3's
      // order (r1 first, its holder dead now), so r1 and then r3 are recovered, one slot at a time.
      yield* h.advance("250 seconds")
      assert.deepStrictEqual(recovered.map((r) => r.executionId).slice(0, 2), [r2!.executionId, r1!.executionId])
      yield* h.advance("400 seconds")
      assert.deepStrictEqual(recovered.map((r) => r.executionId), [r2!.executionId, r1!.executionId, r3!.executionId])
      for (const r of orphans) assert.strictEqual(yield* statusOf(r.tenantId, r.executionId), "Finished")
    }).pipe(
      Effect.provideService(Observer, makeObserver({
        onResume: (e) => Effect.sync(() => e.reason === "Recovered" && recovered.push({ instanceId: e.instanceId, executionId: e.executionId }))
      })),
      Effect.provide(Layer.fresh(backend.stores))
    )
  })

  it.effect("a step that runs a subgraph of steps runs them in its own slot (no deadlock at cap 1)", () =>
    Effect.gen(function*() {
      const t = makeTrace()
      const wf = nested(t)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], maxConcurrentSteps: 1 } })
      const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { name: "N", seconds: 0 })))
      assert.strictEqual(out._tag, "Finished")
      assert.deepStrictEqual(t.starts, ["N.inner1@0", "N.inner2@0"])
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}

describe("maxConcurrentSteps", () => {
  for (const bad of [0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY, "4" as unknown as number]) {
    it.effect(`${String(typeof bad === "string" ? JSON.stringify(bad) : bad)} fails at Layer build, naming the field`, () =>
      Effect.gen(function*() {
        const t = makeTrace()
        const error = yield* Baton.layer({ workflows: [solo(t)], maxConcurrentSteps: bad }).pipe(
          Layer.build,
          Effect.flip,
          Effect.provide(Layer.fresh(backends[0].stores))
        )
        assert.strictEqual(error._tag, "BatonConfigError")
        assert.strictEqual(error.field, "maxConcurrentSteps")
        assert.match(error.message, /maxConcurrentSteps/)
      }))
  }
})
