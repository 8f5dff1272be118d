/**
 * The spans of one execution with a pause and Effect steps, recorded by a
 * test tracer: passes, steps parented under their pass (a `Workflow.step`
 * body and a `Workflow.effectStep` body alike, though LangGraph calls them
 * outside any fiber), spans of an effect step's own code under its step, the
 * lease takes and the sweeps — with their attributes.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Option, Tracer } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import { Baton, StoreTracing } from "../../src/index.ts"
import * as Harness from "../../src/testing/Harness.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { memoryStores } from "../runtime/fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const reviewed = Workflow.make({
  name: "reviewed",
  version: "1",
  graph: new StateGraph(State)
    .addNode("prepare", Workflow.effectStep(() => Effect.succeed({ log: ["prepared"] }).pipe(Effect.withSpan("user.prepare"))))
    .addNode("review", Workflow.step(async () => ({ log: [`review:${String(interrupt({ q: "ok?" }))}`] })))
    .addNode("send", Workflow.effectStep(() => Effect.succeed({ log: ["sent"] })))
    .addEdge(START, "prepare")
    .addEdge("prepare", "review")
    .addEdge("review", "send")
    .addEdge("send", END)
})

const recordingTracer = (spans: Array<Tracer.Span>) =>
  Tracer.make({
    span(options) {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })

const parentOf = (span: Tracer.Span) => Option.getOrUndefined(span.parent)?.spanId
const attr = (span: Tracer.Span, key: string) => span.attributes.get(key)

describe("spans", () => {
  it.effect("an execution that pauses and is resumed on another instance: passes, steps under them, lease takes, sweeps", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [reviewed] } })
      const started = yield* h.run(0, (b) => b.execute(reviewed, { log: [] }, { threadId: "thread-a" }))
      yield* h.settle
      const paused = yield* Fiber.join(started)
      assert.strictEqual(paused._tag, "Paused")
      if (paused._tag !== "Paused") return
      const resumed = yield* h.run(1, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" }))
      yield* h.settle
      assert.strictEqual((yield* Fiber.join(resumed))._tag, "Finished")

      const passes = spans.filter((s) => s.name === "baton.pass")
      assert.strictEqual(passes.length, 2, "one pass to the pause, one after the answer")
      const [first, second] = passes as [Tracer.Span, Tracer.Span]
      for (const [pass, instance] of [[first, "instance-0"], [second, "instance-1"]] as const) {
        assert.strictEqual(attr(pass, "baton.tenant"), "default")
        assert.strictEqual(attr(pass, "baton.thread"), "thread-a")
        assert.strictEqual(attr(pass, "baton.execution"), paused.executionId)
        assert.strictEqual(attr(pass, "baton.root"), paused.executionId)
        assert.strictEqual(attr(pass, "baton.workflow"), "reviewed")
        assert.strictEqual(attr(pass, "baton.instance"), instance)
      }
      assert.strictEqual(attr(first, "baton.epoch"), 1)
      assert.strictEqual(attr(second, "baton.epoch"), 2)
      assert.strictEqual(attr(first, "baton.start"), "Input")
      assert.strictEqual(attr(second, "baton.start"), "Answered")

      const steps = spans.filter((s) => s.name === "baton.step")
      const stepsOf = (pass: Tracer.Span) =>
        steps.filter((s) => parentOf(s) === pass.spanId).map((s) => attr(s, "baton.node"))
      // prepare (an Effect step) and review (a promise step, which paused) under the first pass; review
      // again (answered) and send under the second.
      assert.deepStrictEqual(stepsOf(first), ["prepare", "review"])
      assert.deepStrictEqual(stepsOf(second), ["review", "send"])
      assert.strictEqual(steps.length, 4, "every step span has a pass as parent")
      for (const step of steps) {
        assert.strictEqual(step.traceId, (parentOf(step) === first.spanId ? first : second).traceId)
        assert.strictEqual(attr(step, "baton.execution"), paused.executionId)
        assert.strictEqual(attr(step, "baton.epoch"), parentOf(step) === first.spanId ? 1 : 2)
      }
      const prepare = steps.find((s) => attr(s, "baton.node") === "prepare")!
      const user = spans.find((s) => s.name === "user.prepare")!
      assert.strictEqual(parentOf(user), prepare.spanId, "an Effect step's own spans sit under its step span")

      // (the retention leader's lease is taken through the same holder, in its own spans)
      const takes = spans.filter((s) =>
        s.name === "baton.lease.acquire" && attr(s, "baton.acquired") === true && attr(s, "baton.root") === paused.executionId
      )
      assert.deepStrictEqual(takes.map((s) => [attr(s, "baton.instance"), attr(s, "baton.root"), attr(s, "baton.epoch")]), [
        ["instance-0", paused.executionId, 1],
        ["instance-1", paused.executionId, 2]
      ])
      const sweeps = spans.filter((s) => s.name === "baton.sweep")
      assert.deepStrictEqual([...new Set(sweeps.map((s) => attr(s, "baton.instance")))].sort(), ["instance-0", "instance-1"])
      assert.isTrue(spans.every((s) => !s.name.includes("Store")), "store calls are not traced")
    }).pipe(Effect.provide(Layer.fresh(memoryStores)), Effect.withTracer(recordingTracer(spans)))
  })
})

const timed = Workflow.make({
    name: "timed",
    version: "1",
    graph: new StateGraph(State)
      .addNode("measure", Workflow.effectStep(() =>
        Effect.gen(function*() {
          const before = yield* Clock.currentTimeNanos
          yield* Effect.sleep("1 millis") // the live Clock on purpose (not TestClock): the subject of this test
          const after = yield* Clock.monotonicTimeNanos
          return { log: [`measured:${before > 0n && after > 0n}`] }
        }).pipe(Effect.withSpan("user.measure"))))
      .addEdge(START, "measure")
      .addEdge("measure", END)
  })

describe("store spans, when asked for", () => {
  it.effect("StoreTracing.layer: every store call is a client span; without it, none", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const out = yield* baton.execute(reviewed, { log: [] }, { threadId: "thread-s" })
      assert.strictEqual(out._tag, "Paused")
      const stores = spans.filter((s) => s.name.startsWith("baton.store "))
      const names = new Set(stores.map((s) => s.name))
      for (const name of ["baton.store LeaseStore.acquire", "baton.store RecordStore.startRoot", "baton.store PauseStore.saveFenced", "baton.store LeaseStore.release"]) {
        assert.isTrue(names.has(name), `${name} in ${[...names].join(", ")}`)
      }
      assert.isTrue(stores.every((s) => s.kind === "client"))
      const take = stores.find((s) => s.name === "baton.store LeaseStore.acquire")!
      assert.strictEqual((Option.getOrUndefined(take.parent) as Tracer.Span | undefined)?.name, "baton.lease.acquire", "a store span sits under the runtime's span")
    }).pipe(
      Effect.provide(Baton.layer({ workflows: [reviewed] }).pipe(Layer.provide(StoreTracing.layer), Layer.provide(MemoryStores.layer))),
      Effect.withTracer(recordingTracer(spans))
    )
  })
})

describe("Effect steps on the live clock", () => {
  // Defect found while wiring the OTLP example: an Effect step ran with a copy of the Clock made by object
  // spread, which drops the methods a class-based Clock (the live one) keeps on its prototype; a span or a
  // nanosecond read inside the step then threw "clock.currentTimeNanosUnsafe is not a function".
  it.live("a span and a nanosecond clock read inside an Effect step work with the default Clock", () =>
    Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const out = yield* baton.execute(timed, { log: [] })
      assert.strictEqual(out._tag, "Finished")
      if (out._tag === "Finished") assert.deepStrictEqual((out.output as { log: Array<string> }).log, ["measured:true"])
    }).pipe(Effect.provide(Baton.layer({ workflows: [timed] }).pipe(Layer.provide(MemoryStores.layer)))))
})
