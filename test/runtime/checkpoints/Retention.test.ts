/**
 * Checkpoint retention on the fleet (Harness on the TestClock): the leader
 * prunes each thread to its policy in batches, and never deletes what a
 * pause or a resting tree needs — the newest checkpoint of every
 * namespace, subgraphs included — even when the leader is killed between
 * batches of a round and another instance takes the round over.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { ConfigProvider, type Duration, Effect, Fiber, Layer } from "effect"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
import { Workflow } from "../../../src/index.ts"
import { CheckpointStore } from "../../../src/stores/CheckpointStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { metricValue } from "../../ops/metricsHelpers.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  // A set: a subgraph over the same state hands back the parent's entries too.
  log: Annotation<Array<string>>({ reducer: (a, b) => [...new Set(a.concat(b))], default: () => [] })
})

/** A subgraph that counts to `to` (a checkpoint a step, in its own namespace), then pauses. */
const inner = (to: number) =>
  new StateGraph(State)
    .addNode("tick", async (s: typeof State.State) => ({ count: s.count + 1 }))
    .addNode("ask", async (s: typeof State.State) => ({ log: [`inner ${s.count}: ${String(interrupt({ q: "inner?" }))}`] }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (s: typeof State.State) => (s.count < to ? "tick" : "ask"))
    .addEdge("ask", END)
    .compile()

/** Counts to 8 (a checkpoint a step), pauses, then runs a subgraph that counts on to 16 and pauses in it. */
const counting = (options: { readonly checkpointKeepLast?: number; readonly checkpointKeepFor?: Duration.Input } = {}) =>
  Workflow.make({
    name: "counting",
    version: "1",
    ...options,
    graph: new StateGraph(State)
      .addNode("step", Workflow.step(async (s: typeof State.State) => ({ count: s.count + 1 })))
      .addNode("approve", Workflow.step(async (s: typeof State.State) => ({ log: [`outer ${s.count}: ${String(interrupt({ q: "go?" }))}`] })))
      .addNode("sub", inner(16))
      .addEdge(START, "step")
      .addConditionalEdges("step", (s: typeof State.State) => (s.count < 8 ? "step" : "approve"))
      .addEdge("approve", "sub")
      .addEdge("sub", END)
  })

/** A workflow without a policy of its own: one step. */
const plain = Workflow.make({
  name: "plain",
  version: "1",
  graph: new StateGraph(State)
    .addNode("a", Workflow.step(async () => ({ log: ["a"] })))
    .addNode("b", Workflow.step(async () => ({ log: ["b"] })))
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addEdge("b", END)
})

/** The thread's checkpoints by namespace: how many each holds. */
const perNamespace = (tenantId: string, threadId: string) =>
  Effect.gen(function*() {
    const lifecycle = (yield* CheckpointStore).lifecycle!
    const rows = yield* lifecycle.listCheckpoints(tenantId, threadId, { limit: 10_000 })
    const out: Record<string, number> = {}
    for (const r of rows) out[r.checkpointNs === "" ? "" : r.checkpointNs.split(":")[0]!] = (out[r.checkpointNs === "" ? "" : r.checkpointNs.split(":")[0]!] ?? 0) + 1
    return out
  })

const isPrune = (call: Harness.StoreCall) => call.operation === "CheckpointStore.lifecycle.pruneThread"

for (const backend of backends) {
  describe(`checkpoint retention on ${backend.name}`, () => {
    it.effect("keeps what a pause and a paused subgraph need while the leader is killed between batches; the tree resumes whole on another instance", () =>
      Effect.gen(function*() {
        const wf = counting()
        // The first instance to prune is killed at its second batch (its first landed): another takes the round over.
        const state = { prunes: 0, killed: -1, h: undefined as Harness.Harness | undefined }
        const beforeStoreCall = (call: Harness.StoreCall) =>
          Effect.suspend(() => {
            if (!isPrune(call) || state.killed >= 0 || state.h === undefined) return Effect.void
            if (++state.prunes < 2) return Effect.void
            state.killed = call.index
            return Effect.orDie(state.h.kill(call.index))
          })
        const h = yield* Harness.make({
          instances: 3,
          baton: { workflows: [wf], checkpointKeepLast: 2, sweepPageSize: 3, sweepInterval: "10 seconds" },
          beforeStoreCall
        })
        state.h = h
        const paused = yield* Fiber.join(yield* h.run(2, (b) => b.execute(wf, {}, { threadId: "t" })))
        assert.strictEqual(paused._tag, "Paused")
        if (paused._tag !== "Paused") return
        const before = yield* perNamespace(paused.tenantId, "t")
        assert.isAbove(before[""]!, 8, "a checkpoint a step")
        // Rounds run every 10 s on the leader; the kill hands the lease over after it expires (30 s).
        for (let i = 0; i < 8; i++) yield* h.advance("10 seconds")
        assert.isAtLeast(state.killed, 0, "a leader was killed between batches")
        assert.deepStrictEqual(yield* perNamespace(paused.tenantId, "t"), { "": 2 }, "pruned to the last 2 by the next leader")
        const alive = [0, 1, 2].find((i) => i !== state.killed)!
        const inSub = yield* Fiber.join(yield* h.run(alive, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(inSub._tag, "Paused", "the tree went on from its pause and paused again inside the subgraph")
        if (inSub._tag !== "Paused") return
        for (let i = 0; i < 4; i++) yield* h.advance("10 seconds")
        const resting = yield* perNamespace(paused.tenantId, "t")
        assert.deepStrictEqual(resting, { "": 2, sub: 2 }, "each namespace, the subgraph's too, keeps its last 2")
        const done = yield* Fiber.join(yield* h.run(alive, (b) => b.resume({ pauseId: inSub.pauses[0]!.pauseId, decision: "sure" })))
        assert.strictEqual(done._tag, "Finished")
        if (done._tag !== "Finished") return
        assert.deepStrictEqual((done.output as typeof State.State).log, ["outer 8: yes", "inner 16: sure"], "both pauses answered on a state pruning never broke")
        assert.strictEqual((done.output as typeof State.State).count, 16, "the subgraph counted on to 16 and ended")
        assert.isAbove(yield* metricValue("baton_checkpoint_rows_pruned_total", { kind: "checkpoint" }), 0, "the deletes are counted")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a workflow's own policy wins over the global one; by age on the Clock; a thread without a policy is kept whole", () =>
      Effect.gen(function*() {
        const wf = counting({ checkpointKeepFor: "1 hour" })
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf, plain], sweepInterval: "1 minute" } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, {}, { threadId: "aged" })))
        yield* Fiber.join(yield* h.run(1, (b) => b.execute(plain, {}, { threadId: "kept" })))
        const tenantId = paused.tenantId
        const plainBefore = yield* perNamespace(tenantId, "kept")
        yield* h.advance("30 minutes")
        assert.isAbove((yield* perNamespace(tenantId, "aged"))[""]!, 8, "younger than an hour: all kept")
        yield* h.advance("40 minutes")
        assert.deepStrictEqual(yield* perNamespace(tenantId, "aged"), { "": 1 }, "older than an hour: all but the newest")
        assert.deepStrictEqual(yield* perNamespace(tenantId, "kept"), plainBefore, "no policy, no prune")
        if (paused._tag !== "Paused") return assert.fail("paused")
        const next = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "ok" })))
        assert.strictEqual(next._tag, "Paused", "the pause's checkpoint was kept: the tree goes on into its subgraph")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a retention option that cannot work fails at build, naming the field", () =>
      Effect.gen(function*() {
        const global = yield* Effect.flip(Harness.make({ instances: 1, baton: { workflows: [plain], checkpointKeepLast: 0 } }))
        assert.strictEqual(global.field, "checkpointKeepLast")
        const own = yield* Effect.flip(Harness.make({ instances: 1, baton: { workflows: [counting({ checkpointKeepFor: "soon" as Duration.Input })] } }))
        assert.strictEqual(own.field, "workflows")
        assert.include(own.reason, "checkpointKeepFor")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("checkpoint retention options", () => {
  it.effect("BATON_CHECKPOINT_KEEP_LAST and BATON_CHECKPOINT_KEEP_FOR are read from the ConfigProvider; a bad one names its key", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.service(BatonConfig.BatonConfig).pipe(
          Effect.provide(BatonConfig.layerConfig()),
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))
        )
      const config = yield* read({ BATON_CHECKPOINT_KEEP_LAST: "5", BATON_CHECKPOINT_KEEP_FOR: "2 days" })
      assert.strictEqual(config.checkpointKeepLast, 5)
      assert.strictEqual(config.checkpointKeepForMillis, 2 * 24 * 60 * 60 * 1000)
      const unset = yield* read({})
      assert.isUndefined(unset.checkpointKeepLast, "unset: kept for ever")
      const bad = yield* Effect.flip(read({ BATON_CHECKPOINT_KEEP_FOR: "10 millis" }))
      assert.strictEqual(bad.field, "checkpointKeepFor")
      assert.include(bad.reason, "BATON_CHECKPOINT_KEEP_FOR")
    }))
})
