/**
 * The runtime's tenant quota (`tenantQuota`, `onOverQuota`) on the
 * multi-instance harness (TestClock, memory and SQLite stores): each pass
 * holds one of its tenant's permits while it moves a tree. Over quota a new
 * execution waits — in arrival order on one instance — or fails at once,
 * recording nothing; a tree resting paused gives its permit back; a killed
 * holder's permit comes back after its lease; permits held never exceed the
 * cap and none is left once every tree rests.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Clock, ConfigProvider, Context, Duration, Effect, Fiber, Layer, Option } from "effect"
import * as Baton from "../../../src/runtime/Baton.ts"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
import * as TenantQuota from "../../../src/runtime/limits/TenantQuota.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { RateLimitStore, type RateLimitStoreShape } from "../../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag, memoryStores } from "../fixtures.ts"

const State = Annotation.Root({
  name: Annotation<string>,
  seconds: Annotation<number>,
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** What the trees did: each work step's start as `name@second`, and the most running at once per tenant. */
const makeTracker = () => {
  const t: { starts: Array<string>; running: Map<string, number>; most: Map<string, number> } = {
    starts: [],
    running: new Map(),
    most: new Map()
  }
  return {
    ...t,
    /** One step that works `seconds` on the Clock (a tree running), counted per tenant. */
    work: Workflow.make({
      name: "work",
      version: "1",
      graph: new StateGraph(State)
        .addNode("work", Workflow.effectStep((s: typeof State.State, ctx) =>
          Effect.gen(function*() {
            t.starts.push(`${s.name}@${(yield* Clock.currentTimeMillis) / 1000}`)
            const n = (t.running.get(ctx.tenantId) ?? 0) + 1
            t.running.set(ctx.tenantId, n)
            t.most.set(ctx.tenantId, Math.max(n, t.most.get(ctx.tenantId) ?? 0))
            yield* Effect.sleep(Duration.seconds(s.seconds)).pipe(
              Effect.ensuring(Effect.sync(() => t.running.set(ctx.tenantId, t.running.get(ctx.tenantId)! - 1)))
            )
            return { log: [s.name] }
          })
        ))
        .addEdge(START, "work")
        .addEdge("work", END)
    }),
    /** fork → left and right pause at once → join. */
    pair: Workflow.make({
      name: "pair",
      version: "1",
      graph: new StateGraph(State)
        .addNode("fork", Workflow.step(async () => ({ log: ["fork"] })))
        .addNode("left", Workflow.step(async () => ({ log: [`left:${String(interrupt({ side: "left" }))}`] })))
        .addNode("right", Workflow.step(async () => ({ log: [`right:${String(interrupt({ side: "right" }))}`] })))
        .addNode("join", Workflow.step(async (s: typeof State.State) => {
          t.starts.push(`${s.name}:join`)
          return { log: ["join"] }
        }))
        .addEdge(START, "fork")
        .addEdge("fork", "left")
        .addEdge("fork", "right")
        .addEdge(["left", "right"], "join")
        .addEdge("join", END)
    }),
    /** work → ask (pauses) → done. */
    asking: Workflow.make({
      name: "asking",
      version: "1",
      graph: new StateGraph(State)
        .addNode("work", Workflow.step(async (s: typeof State.State) => {
          t.starts.push(`${s.name}:work`)
          return { log: ["work"] }
        }))
        .addNode("ask", Workflow.step(async () => ({ log: [`answer:${String(interrupt({ q: "go?" }))}`] })))
        .addNode("done", Workflow.step(async (s: typeof State.State) => {
          t.starts.push(`${s.name}:done`)
          return { log: ["done"] }
        }))
        .addEdge(START, "work")
        .addEdge("work", "ask")
        .addEdge("ask", "done")
        .addEdge("done", END)
    })
  }
}

/**
 * Permits of `tenant` held now, read from the shared store (through no
 * instance): takes every free permit for 1 ms under a probe holder, counts
 * them, and gives them back.
 */
const held = (tenant: string, cap: number) =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const now = yield* Clock.currentTimeMillis
    const probes = []
    for (let k = 0; k < cap; k++) {
      const got = yield* store.acquireSlot(TenantQuota.permitKey(tenant), cap, "probe", 1, now)
      if (Option.isSome(got)) probes.push(got.value)
    }
    for (const p of probes) yield* store.releaseSlot(p)
    return cap - probes.length
  })

const statuses = (tenantId: string) =>
  RecordStore.use((r) => r.list({ tenantId, limit: 100 })).pipe(
    Effect.map((page) => page.records.map((x) => x.status).sort())
  )

for (const backend of backends) {
  describe(`tenant quota in the runtime on ${backend.name}, three instances`, () => {
    it.effect("cap 2, wait: five trees of a tenant from three instances run two at a time; an instance's waiters start in arrival order; another tenant is not held back", () =>
      Effect.gen(function*() {
        const t = makeTracker()
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.work], tenantQuota: 2 } })
        const run = (i: number, name: string, seconds: number, tenantId = "acme") =>
          h.run(i, (b) => b.execute(t.work, { name, seconds }, { tenantId }))
        const fibers = [yield* run(0, "a", 10), yield* run(1, "b", 20)]
        yield* h.settle
        for (const name of ["c", "d", "e"]) {
          fibers.push(yield* run(2, name, 10))
          yield* h.advance("1 second")
        }
        const other = yield* run(0, "g", 5, "globex")
        yield* h.settle
        assert.strictEqual(yield* held("acme", 2), 2)
        assert.deepStrictEqual(yield* statuses("acme"), ["Running", "Running", "Running", "Running", "Running"], "waiting trees are recorded Running")
        yield* h.advance("60 seconds")
        for (const f of [...fibers, other]) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
        assert.strictEqual(t.most.get("acme"), 2, "never more than the cap at once")
        assert.deepStrictEqual(
          t.starts.filter((s) => !s.startsWith("g")).sort(),
          ["a@0", "b@0", "c@10", "d@20", "e@20"],
          "c when a ended, then d before e (arrival order on instance 2)"
        )
        assert.include(t.starts, "g@3", "globex started at once")
        assert.strictEqual(yield* held("acme", 2), 0, "every permit released at the end")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("cap 1, fail: a new execution over quota fails at once with TenantQuotaExceededError and records nothing; under quota it starts", () =>
      Effect.gen(function*() {
        const t = makeTracker()
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.work], tenantQuota: 1, onOverQuota: "fail" } })
        const first = yield* h.run(0, (b) => b.execute(t.work, { name: "a", seconds: 10 }, { tenantId: "acme" }))
        yield* h.settle
        const refused = yield* Fiber.await(yield* h.run(1, (b) => b.start(t.work, { name: "b", seconds: 1 }, { tenantId: "acme" })))
        assert.strictEqual(errorTag(refused), "TenantQuotaExceededError")
        if (refused._tag === "Failure") assert.include(String(refused.cause), "acme")
        assert.deepStrictEqual(yield* statuses("acme"), ["Running"], "nothing recorded for the refused one")
        const globex = yield* h.run(2, (b) => b.execute(t.work, { name: "g", seconds: 1 }, { tenantId: "globex" }))
        yield* h.advance("10 seconds")
        assert.strictEqual(errorTag(yield* Fiber.await(globex)), "Success", "another tenant has its own permits")
        assert.strictEqual(errorTag(yield* Fiber.await(first)), "Success")
        const later = yield* h.run(1, (b) => b.execute(t.work, { name: "b", seconds: 1 }, { tenantId: "acme" }))
        yield* h.advance("1 second")
        assert.strictEqual(errorTag(yield* Fiber.await(later)), "Success")
        assert.deepStrictEqual(t.starts, ["a@0", "g@0", "b@10"])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("cap 1: a tree resting paused gives its permit back; its resume waits for the permit like any pass", () =>
      Effect.gen(function*() {
        const t = makeTracker()
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.asking, t.work], tenantQuota: 1 } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(t.asking, { name: "p", seconds: 0 }, { tenantId: "acme" })))
        assert.strictEqual(paused._tag, "Paused")
        assert.strictEqual(yield* held("acme", 1), 0, "released at rest")
        const busy = yield* h.run(1, (b) => b.execute(t.work, { name: "w", seconds: 20 }, { tenantId: "acme" }))
        yield* h.settle
        if (paused._tag !== "Paused") return
        const resumed = yield* h.run(2, (b) => b.resume({ tenantId: "acme", pauseId: paused.pauses[0].pauseId, decision: "yes" }))
        yield* h.advance("10 seconds")
        assert.notInclude(t.starts, "p:done", "the resume waits while w holds the permit")
        yield* h.advance("10 seconds")
        assert.strictEqual(errorTag(yield* Fiber.await(busy)), "Success")
        assert.strictEqual(errorTag(yield* Fiber.await(resumed)), "Success")
        assert.deepStrictEqual(t.starts, ["p:work", "w@0", "p:done"])
        assert.strictEqual(yield* held("acme", 1), 0)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("cap 1: a killed holder's permit comes back after its lease — the waiter starts then, never before; the dead holder's tree is recovered and finishes too", () =>
      Effect.gen(function*() {
        const t = makeTracker()
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.work], tenantQuota: 1 } })
        yield* h.run(0, (b) => b.start(t.work, { name: "a", seconds: 100 }, { tenantId: "acme" }))
        yield* h.settle
        const waiter = yield* h.run(1, (b) => b.execute(t.work, { name: "b", seconds: 5 }, { tenantId: "acme" }))
        yield* h.advance("5 seconds")
        yield* h.kill(0)
        for (let s = 0; s < 24; s++) {
          yield* h.advance("1 second")
          assert.isAtMost(yield* held("acme", 1), 1)
          assert.deepStrictEqual(t.starts, ["a@0"], `nothing else started at ${s + 6} s: the dead holder's permit lease still runs`)
        }
        yield* h.advance("3 seconds")
        assert.strictEqual(t.starts.length, 2, `one tree took the permit after the lease: ${t.starts.join(", ")}`)
        yield* h.advance("300 seconds")
        assert.deepStrictEqual(t.starts, ["a@0", "b@30", "a@35"], "b at the permit's expiry; a (recovered by the sweep) once b ended")
        assert.strictEqual(errorTag(yield* Fiber.await(waiter)), "Success")
        assert.deepStrictEqual(yield* statuses("acme"), ["Finished", "Finished"])
        assert.strictEqual(t.most.get("acme"), 1, "one tree at a time (the killed instance's step stopped with it)")
        assert.strictEqual(yield* held("acme", 1), 0, "no permit left once every tree ended")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("the permit is renewed with the tree lease; a renewal that finds it gone stops the pass (as a lost lease) and the tree goes on under a new permit", () =>
      Effect.gen(function*() {
        const t = makeTracker()
        const stores = yield* Layer.build(backend.stores)
        const real = Context.get(stores, RateLimitStore)
        let refuse = false
        const renewedAt: Array<number> = []
        // a store whose permit renewals can be refused: the permit "was taken" while this instance was away
        const store: RateLimitStoreShape = {
          ...real,
          renewSlot: (slot, ttl, now) => {
            renewedAt.push(now / 1000)
            return refuse ? Effect.succeed(false) : real.renewSlot(slot, ttl, now)
          }
        }
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.work], tenantQuota: 1, renewEvery: "5 seconds" } }).pipe(
          Effect.provide(Context.add(stores, RateLimitStore, store))
        )
        const a = yield* Fiber.join(yield* h.run(0, (b) => b.start(t.work, { name: "a", seconds: 100 }, { tenantId: "acme" })))
        yield* h.advance("12 seconds")
        assert.deepStrictEqual(renewedAt, [5, 10], "renewed with each renewal of the tree lease (every 5 s)")
        refuse = true
        yield* h.advance("3 seconds")
        assert.strictEqual(h.instance(0).instance.passes.active.size, 0, "instance 0's pass stopped at the refused renewal")
        assert.deepStrictEqual(t.starts, ["a@0", "a@15"], "the tree went on at once, under a new permit")
        assert.strictEqual(t.running.get("acme"), 1)
        refuse = false
        yield* h.advance("300 seconds")
        assert.strictEqual(yield* Fiber.join(yield* h.run(1, (x) => Effect.map(x.status(a.executionId, { tenantId: "acme" }), (v) => v.status))), "Finished")
        assert.strictEqual(t.most.get("acme"), 1)
        assert.strictEqual(yield* Effect.provideService(held("acme", 1), RateLimitStore, real), 0)
      }).pipe(Effect.scoped), 60_000)

    it.effect("cap 1: a tree waiting for a permit can be cancelled from another instance (ended Cancelled, no step run); closing its instance hands the wait over", () =>
      Effect.gen(function*() {
        const t = makeTracker()
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.work], tenantQuota: 1 } })
        const a = yield* h.run(0, (b) => b.execute(t.work, { name: "a", seconds: 60 }, { tenantId: "acme" }))
        yield* h.settle
        const waiting = yield* Fiber.join(yield* h.run(1, (b) => b.start(t.work, { name: "b", seconds: 5 }, { tenantId: "acme" })))
        const handedOver = yield* Fiber.join(yield* h.run(1, (b) => b.start(t.work, { name: "c", seconds: 5 }, { tenantId: "acme" })))
        yield* h.advance("2 seconds")
        const cancelled = yield* Fiber.join(yield* h.run(2, (b) => b.cancel(waiting.threadId, { tenantId: "acme" })))
        assert.isTrue(cancelled.cancelled)
        yield* h.advance("15 seconds")
        assert.strictEqual(yield* Fiber.join(yield* h.run(2, (b) => Effect.map(b.status(waiting.executionId, { tenantId: "acme" }), (v) => v.status))), "Cancelled")
        const closing = yield* h.run(1, (b) => b.close({ timeout: "5 seconds" }))
        yield* h.advance("5 seconds")
        yield* Fiber.join(closing)
        yield* h.advance("120 seconds")
        assert.strictEqual(errorTag(yield* Fiber.await(a)), "Success")
        assert.strictEqual(yield* Fiber.join(yield* h.run(2, (b) => Effect.map(b.status(handedOver.executionId, { tenantId: "acme" }), (v) => v.status))), "Finished", "another instance took c's tree over and ran it under the quota")
        assert.deepStrictEqual(t.starts.map((s) => s.split("@")[0]), ["a", "c"], "b never ran")
        assert.strictEqual(t.most.get("acme"), 1)
        assert.strictEqual(yield* held("acme", 1), 0)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)
  })
}

describe("a resume that finds its tree cancelled", () => {
  it.effect("fails with ExecutionCancelledError (it answered ExecutionFailedError 'cancelled': simulation seed 105)", () =>
    Effect.gen(function*() {
      const t = makeTracker()
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [t.pair, t.work], tenantQuota: 1 } })
      const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(t.pair, { name: "p", seconds: 0 }, { tenantId: "acme" })))
      if (paused._tag !== "Paused") return assert.fail("the pair should pause")
      assert.strictEqual(paused.pauses.length, 2)
      const busy = yield* h.run(0, (b) => b.execute(t.work, { name: "w", seconds: 60 }, { tenantId: "acme" }))
      yield* h.settle
      // the first resume takes the tree's lease and waits for the permit w holds; the second waits for the lease
      const first = yield* h.run(1, (b) => b.resume({ tenantId: "acme", pauseId: paused.pauses[0].pauseId, decision: "a" }))
      yield* h.settle
      const second = yield* h.run(2, (b) => b.resume({ tenantId: "acme", pauseId: paused.pauses[1].pauseId, decision: "b" }))
      yield* h.advance("1 second")
      const cancel = yield* h.run(0, (b) => b.cancel(paused.threadId, { tenantId: "acme" }))
      yield* h.advance("15 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(first)), "ExecutionCancelledError")
      assert.strictEqual(errorTag(yield* Fiber.await(second)), "ExecutionCancelledError")
      assert.isTrue((yield* Fiber.join(cancel)).cancelled)
      assert.notInclude(t.starts, "p:join")
      yield* h.advance("60 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(busy)), "Success")
    }).pipe(Effect.provide(Layer.fresh(memoryStores))), 60_000)
})

describe("tenant quota options", () => {
  it.effect("BATON_TENANT_QUOTA and BATON_ON_OVER_QUOTA are read from the ConfigProvider", () =>
    Effect.gen(function*() {
      const config = yield* BatonConfig.BatonConfig.pipe(
        Effect.provide(BatonConfig.layerConfig()),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ BATON_TENANT_QUOTA: "3", BATON_ON_OVER_QUOTA: "fail" })))
      )
      assert.strictEqual(config.tenantQuota, 3)
      assert.strictEqual(config.onOverQuota, "fail")
      const bad = yield* Effect.flip(BatonConfig.BatonConfig.pipe(
        Effect.provide(BatonConfig.layerConfig()),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ BATON_ON_OVER_QUOTA: "drop" })))
      ))
      assert.strictEqual(bad.field, "onOverQuota")
      assert.include(bad.reason, "BATON_ON_OVER_QUOTA")
    }))

  it.effect("a quota without a RateLimitStore fails the Layer with BatonConfigError on tenantQuota", () =>
    Effect.gen(function*() {
      const stores = yield* Layer.build(memoryStores)
      const error = yield* Effect.flip(Layer.build(Baton.layer({ workflows: [], tenantQuota: 2 })).pipe(
        Effect.provide(Context.omit(RateLimitStore)(stores))
      ))
      assert.strictEqual(error.field, "tenantQuota")
    }))
})
