import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Effect, Fiber, Layer, Option } from "effect"
import { ExecutionHistoryStore } from "../../../src/stores/ExecutionHistoryStore.ts"
import { RequestStore } from "../../../src/stores/RequestStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, slow, statusOf, theRunningRoot } from "../fixtures.ts"

for (const backend of backends) {
  describe(`execution history on ${backend.name}`, () => {
    it.effect("a tree taken over after a kill has one snapshot, with the steps of both holders", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "45 seconds")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const input = { log: ["in"] }
        yield* h.run(0, (b) => b.execute(wf, input))
        yield* h.settle
        const root = yield* theRunningRoot
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        yield* h.advance("45 seconds")
        assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
        const history = yield* ExecutionHistoryStore
        const all = yield* history.list({ tenantId: root.tenantId, limit: 10 })
        assert.strictEqual(all.length, 1, "one snapshot")
        const snapshot = Option.getOrThrow(yield* history.get(root.tenantId, root.executionId))
        assert.deepStrictEqual(all[0], snapshot)
        assert.strictEqual(snapshot.status, "Finished")
        assert.strictEqual(snapshot.error, null)
        assert.strictEqual(snapshot.workflowName, "slow")
        assert.strictEqual(snapshot.configHash, wf.configHash)
        assert.strictEqual(snapshot.inputHash, createHash("sha256").update(JSON.stringify(input)).digest("hex"))
        assert.strictEqual(snapshot.endedBy.epoch, 2)
        assert.isTrue(snapshot.endedBy.holder.startsWith("instance-1#"))
        assert.deepStrictEqual(
          snapshot.steps.map((s) => `${s.node}#${s.attempt}@${s.instanceId}:${s.outcome}`),
          ["first#1@instance-0:Succeeded", "slow#1@instance-0:Unfinished", "slow#2@instance-1:Succeeded", "last#1@instance-1:Succeeded"]
        )
        assert.deepStrictEqual(snapshot.steps.map((s) => s.endedAt === null), [true, true, false, false], "the dead holder never reported its ends")
        const slowVisits = snapshot.steps.filter((s) => s.node === "slow")
        assert.strictEqual(slowVisits[0]!.idempotencyKey, slowVisits[1]!.idempotencyKey, "one step, two visits")
        assert.deepStrictEqual(slowVisits.map((s) => s.idempotencyKey), fx.runs.filter((r) => r.node === "slow").map((r) => r.key))
        assert.strictEqual(slowVisits[1]!.endedAt! - slowVisits[1]!.startedAt, 45_000)
        assert.isTrue(snapshot.endedAt >= slowVisits[1]!.endedAt!)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a paused and answered execution keeps its pause, its decision and the visits of both passes", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(paused._tag, "Paused")
        if (paused._tag !== "Paused") return
        const history = yield* ExecutionHistoryStore
        assert.isTrue(Option.isNone(yield* history.get(paused.tenantId, paused.executionId)), "nothing while paused")
        const done = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: paused.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(done._tag, "Finished")
        const snapshot = Option.getOrThrow(yield* history.get(paused.tenantId, paused.executionId))
        assert.deepStrictEqual(snapshot.pauses.map((p) => [p.pauseId, p.status, p.decision, p.payload]), [
          [paused.pauses[0]!.pauseId, "Taken", "yes", { question: "send it?" }]
        ])
        assert.deepStrictEqual(snapshot.steps.map((s) => `${s.node}#${s.attempt}@${s.instanceId}:${s.outcome}`), [
          "draft#1@instance-0:Succeeded",
          "approve#1@instance-0:Interrupted",
          "approve#2@instance-1:Succeeded",
          "send#1@instance-1:Succeeded"
        ])
        assert.isTrue(snapshot.steps.every((s) => s.endedAt !== null), "both passes ended and reported their ends")
        assert.strictEqual(snapshot.endedBy.epoch, 2)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a cancelled execution's snapshot says Cancelled", () =>
      Effect.gen(function*() {
        const wf = approval(makeSideEffects())
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const paused = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        yield* Fiber.join(yield* h.run(1, (b) => b.cancel(paused.threadId)))
        const snapshot = Option.getOrThrow(yield* (yield* ExecutionHistoryStore).get(paused.tenantId, paused.executionId))
        assert.strictEqual(snapshot.status, "Cancelled")
        assert.strictEqual(snapshot.error, "cancelled")
        assert.deepStrictEqual(snapshot.pauses.map((p) => p.status), ["Cancelled"])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("history retention", () => {
  it.effect("snapshots older than historyRetention are deleted by the retention leader, page by page", () =>
    Effect.gen(function*() {
      const wf = approval(makeSideEffects())
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], historyRetention: "1 hour", sweepPageSize: 2 } })
      const ids: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const paused = yield* Fiber.join(yield* h.run(i % 2, (b) => b.execute(wf, { log: [] })))
        if (paused._tag !== "Paused") return assert.fail("expected a pause")
        yield* Fiber.join(yield* h.run(i % 2, (b) => b.cancel(paused.threadId)))
        ids.push(paused.executionId)
      }
      const history = yield* ExecutionHistoryStore
      assert.strictEqual((yield* history.list({ tenantId: "default", limit: 10 })).length, 5)
      yield* h.advance("59 minutes")
      assert.strictEqual((yield* history.list({ tenantId: "default", limit: 10 })).length, 5, "kept within the retention")
      yield* h.advance("2 minutes")
      assert.strictEqual((yield* history.list({ tenantId: "default", limit: 10 })).length, 0, "all five deleted, in pages of two")
    }).pipe(Effect.provide(Layer.fresh(backends[0].stores))))
})

describe("request key retention", () => {
  it.effect("expired request keys are deleted by the retention leader", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [approval(makeSideEffects())] } })
      const requests = yield* RequestStore
      for (let i = 0; i < 3; i++) {
        yield* requests.claim({ tenantId: "default", requestKey: `r${i}`, fingerprint: "f", handle: i, now: 0, ttlMillis: 60_000 })
      }
      yield* h.advance("59 seconds")
      assert.isTrue(Option.isSome(yield* requests.get("default", "r0", 0)), "kept until it expires")
      yield* h.advance("2 seconds")
      assert.strictEqual(yield* requests.deleteExpired(Number.MAX_SAFE_INTEGER, 10), 0, "nothing left to delete: the leader did")
    }).pipe(Effect.provide(Layer.fresh(backends[0].stores))))
})
