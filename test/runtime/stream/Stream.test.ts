/**
 * `Baton.stream` in the harness, two instances over memory stores: a reader
 * on instance 1 follows what instance 0 runs — LangGraph's values, updates,
 * custom and message tokens, and the status changes — across a pause
 * answered on instance 1, and across a takeover after instance 0 was killed
 * mid-step (each step event once, in order); a reader that reconnects with
 * its last event id gets the rest with no repeat and no gap; another tenant
 * or owner is refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { FakeListChatModel } from "@langchain/core/utils/testing"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Effect, Fiber, Layer, Stream } from "effect"
import { EventStore, type StreamEvent } from "../../../src/stores/EventStore.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { MemoryLiveness } from "../../../layers/memory/index.ts"
import { errorTag, makeSideEffects, memoryStores, slow } from "../fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  answer: Annotation<string>({ reducer: (_a, b) => b, default: () => "" })
})

/** talk (streams tokens of a chat model, and a custom event) → approve (pauses) → done. */
const chatty = Workflow.make({
  name: "chatty",
  version: "1",
  graph: new StateGraph(State)
    .addNode("talk", async (_s, config) => {
      config.writer?.({ progress: "thinking" })
      const model = new FakeListChatModel({ responses: ["hi there"] })
      const m = await model.invoke("hello", config)
      return { log: ["talk"], answer: String(m.content) }
    })
    .addNode("approve", async () => {
      const d = interrupt({ question: "ok?" })
      return { log: [`approved:${String(d)}`] }
    })
    .addNode("done", async () => ({ log: ["done"] }))
    .addEdge(START, "talk")
    .addEdge("talk", "approve")
    .addEdge("approve", "done")
    .addEdge("done", END)
})

const collect = (h: Harness.Harness, index: number, threadId: string, options: object = {}) =>
  h.run(index, (b) => Effect.map(Stream.runCollect(b.stream(threadId, { until: "end", ...options })), (c): ReadonlyArray<StreamEvent> => Array.from(c)))

const statuses = (events: ReadonlyArray<StreamEvent>) =>
  events.filter((e) => e.mode === "status").map((e) => `${(e.data as { status: string }).status}@${e.instanceId}`)
const updates = (events: ReadonlyArray<StreamEvent>) => events.filter((e) => e.mode === "updates").map((e) => Object.keys(e.data as object).join(","))

describe("Baton.stream", () => {
  it.effect("a reader on instance 1 gets what instance 0 streams: values, updates, custom, message tokens, status; the pause answered on 1 ends it", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [chatty], liveOutput: true } })
      const out = yield* h.run(0, (b) => b.execute(chatty, { log: [] }, { threadId: "thread-a" }))
      yield* h.settle
      const paused = yield* Fiber.join(out)
      assert.strictEqual(paused._tag, "Paused")
      const reader = yield* collect(h, 1, "thread-a")
      yield* h.settle
      const pauseId = paused._tag === "Paused" ? paused.pauses[0]!.pauseId : ""
      const resumed = yield* h.run(1, (b) => b.resume({ pauseId, decision: "yes" }))
      yield* h.advance("1 second")
      assert.strictEqual((yield* Fiber.join(resumed))._tag, "Finished")
      const events = yield* Fiber.join(reader)
      assert.deepStrictEqual(statuses(events), ["Running@instance-0", "Paused@instance-0", "Running@instance-1", "Finished@instance-1"])
      assert.deepStrictEqual(updates(events), ["talk", "__interrupt__", "approve", "done"])
      assert.deepStrictEqual(events.filter((e) => e.mode === "custom").map((e) => e.data), [{ progress: "thinking" }])
      const tokens = events.filter((e) => e.mode === "messages").map((e) => (e.data as { content: string }).content).join("")
      assert.strictEqual(tokens, "hi there", "every token, in order")
      assert.isTrue(events.filter((e) => e.mode === "messages").every((e) => (e.data as { node: string }).node === "talk"))
      const values = events.filter((e) => e.mode === "values").map((e) => (e.data as { log?: Array<string> }).log?.join(">"))
      assert.strictEqual(values[values.length - 1], "talk>approved:yes>done", "the last state")
      assert.strictEqual(new Set(values).size, values.length, "no state twice (the resumed pass's first state was streamed already)")
      const ids = events.map((e) => e.id)
      assert.deepStrictEqual(ids, [...ids].sort((a, b) => a - b), "ids grow")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("across a takeover (instance 0 killed mid-step): each step event once, in order; a reconnect with the last id gets the rest", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], liveOutput: true } })
      yield* h.run(0, (b) => b.start(wf, { log: [] }, { threadId: "thread-b" }))
      yield* h.settle
      const reader = yield* collect(h, 1, "thread-b")
      yield* h.advance("1 second")
      yield* h.kill(0)
      yield* h.advance("46 seconds")
      const events = yield* Fiber.join(reader)
      assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["first@instance-0", "slow@instance-0", "slow@instance-1", "last@instance-1"])
      assert.deepStrictEqual(updates(events), ["first", "slow", "last"], "each step's update once, in order")
      assert.deepStrictEqual(statuses(events), ["Running@instance-0", "Running@instance-1", "Finished@instance-1"])
      const values = events.filter((e) => e.mode === "values").map((e) => (e.data as { log: Array<string> }).log.join(">"))
      assert.deepStrictEqual(values, ["", "first", "first>slow", "first>slow>last"], "each state once")
      // A reader that saw up to the slow step's update reconnects from there.
      const cut = events.findIndex((e) => e.mode === "updates" && "slow" in (e.data as object))
      const again = yield* collect(h, 1, "thread-b", { lastEventId: events[cut]!.id })
      yield* h.settle
      assert.deepStrictEqual((yield* Fiber.join(again)).map((e) => e.id), events.slice(cut + 1).map((e) => e.id), "the rest, no repeat, no gap")
    }).pipe(Effect.provide(Layer.fresh(Layer.merge(memoryStores, MemoryLiveness.layer)))))

  it.effect("another tenant's thread is unknown; another owner's is refused; a bad lastEventId names the field", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [chatty], liveOutput: true } })
      yield* h.run(0, (b) => b.execute(chatty, { log: [] }, { threadId: "thread-c", tenantId: "acme", ownerId: "ann" }))
      yield* h.settle
      const b = h.baton(0)
      const first = (options: object) => Effect.exit(Stream.runHead(b.stream("thread-c", options)))
      assert.strictEqual(errorTag(yield* first({ tenantId: "other", ownerId: "ann" })), "UnknownThreadError")
      assert.strictEqual(errorTag(yield* first({ tenantId: "acme", ownerId: "bob" })), "ThreadOwnerError")
      const bad = yield* Effect.flip(Stream.runHead(b.stream("thread-c", { tenantId: "acme", ownerId: "ann", lastEventId: -1 })))
      assert.strictEqual(bad._tag, "InvalidInputError")
      assert.strictEqual((bad as { field?: string }).field, "lastEventId")
      const head = yield* Stream.runHead(b.stream("thread-c", { tenantId: "acme", ownerId: "ann" }))
      assert.strictEqual(head._tag, "Some")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))

  it.effect("events older than historyRetention are deleted by the retention leader, each thread's newest kept", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [chatty], liveOutput: true, historyRetention: "1 hour", sweepPageSize: 2 } })
      yield* Fiber.join(yield* h.run(0, (b) => b.execute(chatty, { log: [] }, { threadId: "thread-d" })))
      const store = yield* EventStore
      const before = yield* store.read("default", "thread-d", 0, 1000)
      assert.isTrue(before.length > 5)
      yield* h.advance("59 minutes")
      assert.strictEqual((yield* store.read("default", "thread-d", 0, 1000)).length, before.length, "kept within the retention")
      yield* h.advance("2 minutes")
      const after = yield* store.read("default", "thread-d", 0, 1000)
      assert.deepStrictEqual(after.map((e) => e.id), [before[before.length - 1]!.id], "only the newest is left")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))
})

describe("live output is opt-in", () => {
  const quiet = Workflow.make({ name: "quiet", version: "1", graph: chatty.graph })
  const loud = Workflow.make({ name: "loud", version: "1", graph: chatty.graph, liveOutput: true })
  const eventsOf = (h: Harness.Harness, threadId: string) =>
    Effect.flatMap(h.run(0, () => Effect.provide(Effect.flatMap(Effect.service(EventStore), (s) => s.read("default", threadId, 0, 100)), h.instance(0).instance.services)), Fiber.join)

  it.effect("off by default: a pass appends no event; a workflow's liveOutput: true turns it on for that workflow alone", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [quiet, loud] } })
      for (const [wf, threadId] of [[quiet, "t-quiet"], [loud, "t-loud"]] as const) {
        yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId })))
      }
      assert.deepStrictEqual(yield* eventsOf(h, "t-quiet"), [], "no event for a workflow without live output")
      const loudEvents = yield* eventsOf(h, "t-loud")
      assert.isAbove(loudEvents.length, 0)
      assert.deepStrictEqual(updates(loudEvents), ["talk", "__interrupt__"])
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))
})
