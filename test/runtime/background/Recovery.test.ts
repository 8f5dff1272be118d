import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { Observer, make as makeObserver, type ResumeReason } from "../../../src/runtime/Observer.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { approval, backends, makeSideEffects, slow, statusOf, theRunningRoot } from "../fixtures.ts"

for (const backend of backends) {
describe(`recovery sweep on ${backend.name}`, () => {
  it.effect("a killed holder's tree is recovered by the other instance after 31 s, and the observer is told", () => {
    const resumed: Array<{ instanceId: string; reason: ResumeReason }> = []
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      yield* h.kill(0)
      yield* h.advance("29 seconds")
      assert.deepStrictEqual(resumed, [], "nobody takes a live lease")
      yield* h.advance("2 seconds")
      assert.deepStrictEqual(resumed, [{ instanceId: "instance-1", reason: "Recovered" }])
      yield* h.advance("45 seconds")
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
      assert.deepStrictEqual(fx.runs.map((r) => `${r.node}@${r.instanceId}`), [
        "first@instance-0",
        "slow@instance-0",
        "slow@instance-1",
        "last@instance-1"
      ])
      assert.deepStrictEqual([...fx.applied.values()], [1, 1, 1])
    }).pipe(
      Effect.provideService(Observer, makeObserver({ onResume: (e) => Effect.sync(() => resumed.push({ instanceId: e.instanceId, reason: e.reason })) })),
      Effect.provide(Layer.fresh(backend.stores))
    )
  })

  it.effect("closing an instance with a running execution: the other instance continues it at once", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      const closing = yield* h.run(0, (b) => b.close({ timeout: "10 seconds" }))
      // the grace is min(5 s, 20 %) = 2 s: passes are interrupted at 8 s
      yield* h.advance("8 seconds")
      yield* Fiber.join(closing)
      const exit = yield* Fiber.await(running)
      assert.isTrue(exit._tag === "Failure")
      const lease = Option.getOrUndefined(yield* LeaseStore.use((l) => l.get(root.tenantId, root.executionId)))
      assert.isTrue(lease?.holder.startsWith("instance-1#"), "instance 1 took the tree at once, 22 s before the lease would expire")
      assert.strictEqual(lease?.epoch, 2)
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Running")
      yield* h.advance("45 seconds")
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
      assert.strictEqual((yield* h.instance(0).baton.checkLiveness).status, "Unhealthy", "a closed instance is not live")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("two instances sweeping the same orphan: exactly one recovers it", () => {
    const resumed: Array<string> = []
    return Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      yield* h.kill(0)
      yield* h.advance("31 seconds")
      assert.strictEqual(resumed.length, 1, `one recovery, got ${resumed.join(", ")}`)
      yield* h.advance("45 seconds")
      assert.strictEqual(fx.runs.filter((r) => r.node === "slow").length, 2, "the interrupted step ran once more, not twice")
      assert.strictEqual(fx.runs.filter((r) => r.node === "last").length, 1)
    }).pipe(
      Effect.provideService(Observer, makeObserver({ onResume: (e) => Effect.sync(() => resumed.push(e.instanceId)) })),
      Effect.provide(Layer.fresh(backend.stores))
    )
  })

  it.effect("a root started under another config hash is left alone", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const v1 = slow(fx, "45 seconds")
      const v2 = Workflow.make({ name: v1.name, version: "2", graph: v1.graph })
      assert.notStrictEqual(v1.configHash, v2.configHash)
      const old = yield* Harness.make({ instances: 1, baton: { workflows: [v1] } })
      yield* old.run(0, (b) => b.execute(v1, { log: [] }))
      yield* old.settle
      const root = yield* theRunningRoot
      yield* old.kill(0)
      const fresh = yield* Harness.make({ instances: 1, baton: { workflows: [v2] } })
      yield* fresh.advance("95 seconds")
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Running")
      assert.strictEqual(fx.runs.filter((r) => r.instanceId !== "instance-0").length, 0, "no step ran on the new version")
      const lease = Option.getOrUndefined(yield* LeaseStore.use((l) => l.get(root.tenantId, root.executionId)))
      assert.strictEqual(lease?.epoch, 1, "its lease was not taken")
      // A workflow that says so resumes it anyway.
      const anyway = Workflow.make({ name: v1.name, version: "2", graph: v1.graph, resumeAnyway: true })
      const lenient = yield* Harness.make({ instances: 1, baton: { workflows: [anyway] } })
      yield* lenient.advance("46 seconds")
      assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a root whose holder died before LangGraph's first checkpoint starts again from its kept input", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "5 seconds")
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      // What execute had written when its process died: the thread, the input, the Running record — no checkpoint, no lease.
      const records = yield* RecordStore
      yield* records.createThread({ tenantId: "default", threadId: "orphan-thread", now: 0 })
      yield* TreeStore.use((t) => t.saveReservedIfAbsent("default", "orphan-root", "input", { log: ["from input"] }))
      yield* records.createRecord({
        tenantId: "default",
        executionId: "orphan-root",
        threadId: "orphan-thread",
        rootExecutionId: "orphan-root",
        parentExecutionId: null,
        depth: 1,
        workflowName: wf.name,
        workflowVersion: wf.version,
        configHash: wf.configHash,
        status: "Running",
        error: null,
        createdAt: 0,
        updatedAt: 0
      })
      yield* h.advance("31 seconds")
      yield* h.advance("6 seconds")
      assert.strictEqual(yield* statusOf("default", "orphan-root"), "Finished")
      assert.deepStrictEqual(fx.runs.map((r) => r.node), ["first", "slow", "last"])
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("a decision recorded by a resume that never took the lease is taken by the sweep", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
      assert.strictEqual(out._tag, "Paused")
      if (out._tag !== "Paused") return
      // Phase 1 of a resume whose caller went away before phase 2: the pause is Resolved, the tree rests Paused.
      yield* PauseStore.use((p) =>
        p.resolve({ tenantId: out.tenantId, pauseId: out.pauses[0]!.pauseId, decision: "yes", resolvedBy: "gone", now: 0 })
      )
      yield* h.advance("31 seconds")
      assert.strictEqual(yield* statusOf(out.tenantId, out.executionId), "Finished")
      assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
      const pause = Option.getOrUndefined(yield* PauseStore.use((p) => p.get(out.tenantId, out.pauses[0]!.pauseId)))
      assert.strictEqual(pause?.status, "Taken")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("the sweep deletes settled pauses past the retention, never a pending or an untaken one", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], pauseRetention: "1 hour" } })
      const run = <A, E>(f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>) => Effect.flatMap(h.run(0, f), Fiber.join)
      const answered = yield* run((b) => b.execute(wf, { log: [] }))
      const pending = yield* run((b) => b.execute(wf, { log: [] }))
      assert.isTrue(answered._tag === "Paused" && pending._tag === "Paused")
      if (answered._tag !== "Paused" || pending._tag !== "Paused") return
      const taken = answered.pauses[0]!.pauseId
      yield* run((b) => b.resume({ pauseId: taken, decision: "yes" }))
      const pauses = yield* PauseStore
      yield* h.advance("59 minutes")
      assert.isTrue(Option.isSome(yield* pauses.get("default", taken)), "kept within the retention")
      yield* h.advance("2 minutes")
      assert.isTrue(Option.isNone(yield* pauses.get("default", taken)), "deleted past the retention")
      assert.isTrue(Option.isSome(yield* pauses.get("default", pending.pauses[0]!.pauseId)), "a pending pause is never deleted")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}