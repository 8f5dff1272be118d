/**
 * Crash takeover in the harness (memory stores with `MemoryLiveness`, the
 * default 30 s lease): a killed instance's trees move at once with epoch + 1,
 * a frozen one's only at lease expiry, and readiness says which mode is in
 * force — lease expiry without a liveness signal. An instance whose signal is
 * lost while it lives (`MemoryLiveness.cut`) loses its tree at once and stops.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Effect, Fiber, Layer } from "effect"
import { MemoryLiveness } from "../../../layers/memory/index.ts"
import { InstanceLiveness } from "../../../src/stores/InstanceLiveness.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { make as makeObserver, Observer } from "../../../src/runtime/Observer.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag, leaseOf, makeSideEffects, memoryStores, type SideEffects, slow, statusOf, theRunningRoot } from "../fixtures.ts"

const withLiveness = Layer.merge(memoryStores, MemoryLiveness.layer)

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

/** A long step whose effect is applied only while the pass still holds the lease, as a careful step does. */
const careful = (fx: SideEffects) =>
  Workflow.make({
    name: "careful",
    version: "1",
    graph: new StateGraph(State)
      .addNode("long", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          fx.runs.push({ node: "long", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
          yield* Effect.sleep("5 seconds")
          if (ctx.leaseHeld()) fx.apply(ctx.idempotencyKey)
          return { log: ["long"] }
        })
      ))
      .addEdge(START, "long")
      .addEdge("long", END)
  })

const takeoverComponent = (h: Harness.Harness, index: number) =>
  Effect.map(h.instance(index).baton.checkReadiness, (r) => r.components.find((c) => c.name === "crash-takeover"))

describe("crash takeover", () => {
  it.effect("a killed holder's tree moves to the other instance at once, epoch + 1, one effect per key", () => {
    const resumed: Array<string> = []
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      assert.strictEqual((yield* leaseOf(root.tenantId, root.executionId))?.epoch, 1)
      yield* h.kill(0)
      yield* h.advance("10 millis")
      assert.deepStrictEqual(resumed, ["instance-1"], "recovered within 10 ms of the kill, 30 s before the lease expires")
      const lease = yield* leaseOf(root.tenantId, root.executionId)
      assert.isTrue(lease?.holder.startsWith("instance-1#"), `instance 1 holds it (${lease?.holder})`)
      assert.strictEqual(lease?.epoch, 2)
      yield* h.advance("46 seconds")
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
      assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), ["first@instance-0", "slow@instance-0", "slow@instance-1", "last@instance-1"])
      assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1], "each step's effect once")
      const component = yield* takeoverComponent(h, 1)
      assert.strictEqual(component?.status, "Healthy")
      assert.match(component?.message ?? "", /^liveness \(in-memory registration scope\)/)
    }).pipe(
      Effect.provideService(Observer, makeObserver({ onResume: (e) => Effect.sync(() => resumed.push(e.instanceId)) })),
      Effect.provide(Layer.fresh(withLiveness))
    )
  })

  it.effect("an instance started after the tree still sees its holder die", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const first = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      yield* first.run(0, (b) => b.execute(wf, { log: [] }))
      yield* first.settle
      const root = yield* theRunningRoot
      const later = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      yield* later.advance("1 second")
      yield* first.kill(0)
      yield* later.advance("10 millis")
      const lease = yield* leaseOf(root.tenantId, root.executionId)
      assert.strictEqual(lease?.epoch, 2, `taken over at once (${lease?.holder})`)
      assert.strictEqual(lease?.holder.split("#")[0], later.instance(0).baton.instanceId)
    }).pipe(Effect.provide(Layer.fresh(withLiveness))))

  it.effect("a frozen holder keeps its signal: its tree moves only when the lease expires", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      yield* h.freeze(0)
      yield* h.advance("29 seconds")
      assert.strictEqual((yield* leaseOf(root.tenantId, root.executionId))?.epoch, 1, "nobody takes a frozen holder's lease early")
      yield* h.advance("2 seconds")
      const lease = yield* leaseOf(root.tenantId, root.executionId)
      assert.isTrue(lease?.holder.startsWith("instance-1#"))
      assert.strictEqual(lease?.epoch, 2)
    }).pipe(Effect.provide(Layer.fresh(withLiveness))))

  it.effect("a live instance whose signal is cut: its tree is taken at once, it stops at its next check with LeaseLostError, the effect once", () => {
    const liveness = MemoryLiveness.make()
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = careful(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      const zero = h.instance(0).instance
      liveness.cut(`${zero.instanceId}#${zero.incarnation}`)
      yield* h.advance("10 millis")
      const lease = yield* leaseOf(root.tenantId, root.executionId)
      assert.strictEqual(lease?.epoch, 2, "taken at once")
      assert.isTrue(lease?.holder.startsWith(`${h.instance(1).instanceId}#`))
      const degraded = yield* takeoverComponent(h, 0)
      assert.strictEqual(degraded?.status, "Degraded")
      yield* h.advance("6 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(running)), "LeaseLostError", "instance 0's call stops with LeaseLostError")
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
      assert.deepStrictEqual(fx.runs.map((r) => r.instanceId), [h.instance(0).instanceId, h.instance(1).instanceId])
      assert.deepStrictEqual([...fx.applied.values()], [1], "the step's effect once: instance 0 no longer held the lease")
      liveness.restore(`${zero.instanceId}#${zero.incarnation}`)
      assert.strictEqual((yield* takeoverComponent(h, 0))?.status, "Healthy")
    }).pipe(Effect.provide(Layer.fresh(Layer.merge(memoryStores, Layer.succeed(InstanceLiveness, liveness)))))
  })

  it.effect("without a liveness signal: lease expiry, and readiness says so", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      const component = yield* takeoverComponent(h, 1)
      assert.strictEqual(component?.status, "Healthy")
      assert.strictEqual(
        component?.message,
        "lease expiry: a dead instance's trees move when their leases expire (30 s), because the stores provide no InstanceLiveness"
      )
      yield* h.kill(0)
      yield* h.advance("29 seconds")
      assert.strictEqual((yield* leaseOf(root.tenantId, root.executionId))?.epoch, 1, "a killed holder's lease is waited for")
      yield* h.advance("2 seconds")
      assert.strictEqual((yield* leaseOf(root.tenantId, root.executionId))?.epoch, 2)
    }).pipe(Effect.provide(Layer.fresh(memoryStores))))
})
