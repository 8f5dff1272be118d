/**
 * `Baton.deleteThread` on the fleet (Harness on the TestClock): every row of
 * the thread goes; tenant and owner are checked; a held tree refuses it
 * unless `cancelFirst`; a delete racing a resume on another instance lets
 * exactly one of them go on, with a typed error for the other and nothing
 * left behind when the delete won; a delete killed halfway blocks the thread
 * until the recovery sweep finishes it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import { CheckpointStore } from "../../../src/stores/CheckpointStore.ts"
import { ExecutionHistoryStore } from "../../../src/stores/ExecutionHistoryStore.ts"
import { PauseStore } from "../../../src/stores/PauseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { RequestStore } from "../../../src/stores/RequestStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, approveThenWork, backends, errorTag, makeSideEffects, slow } from "../fixtures.ts"

/** What is left of a thread and its trees in every store (empty everywhere once deleted). */
const leftOf = (tenantId: string, threadId: string, roots: ReadonlyArray<string>, pauseIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const left: Array<string> = []
    if (Option.isSome(yield* RecordStore.use((r) => r.getThread(tenantId, threadId)))) left.push("thread")
    const records = yield* RecordStore.use((r) => r.listByThread(tenantId, threadId))
    if (records.length > 0) left.push(`${records.length} records`)
    for (const id of roots) {
      if (Option.isSome(yield* RecordStore.use((r) => r.getRecord(tenantId, id)))) left.push(`record ${id}`)
      if ((yield* TreeStore.use((t) => t.list(tenantId, id, ""))).length > 0) left.push(`tree keys of ${id}`)
      if (Option.isSome(yield* ExecutionHistoryStore.use((h) => h.get(tenantId, id)))) left.push(`history of ${id}`)
    }
    for (const id of pauseIds) if (Option.isSome(yield* PauseStore.use((p) => p.get(tenantId, id)))) left.push(`pause ${id}`)
    const checkpoints = yield* (yield* CheckpointStore).lifecycle!.listCheckpoints(tenantId, threadId, { limit: 100 })
    if (checkpoints.length > 0) left.push(`${checkpoints.length} checkpoints`)
    return left
  })

for (const backend of backends) {
  describe(`deleteThread on ${backend.name}`, () => {
    it.effect("deletes every row of a paused thread on another instance; another tenant or owner is refused; the thread id starts afresh", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const scope = { tenantId: "acme", ownerId: "alice" }
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { ...scope, threadId: "t", requestKey: "k1" })))
        if (out._tag !== "Paused") return assert.fail("paused")
        const pauseId = out.pauses[0]!.pauseId
        // The same thread id under another tenant: untouched by the delete.
        const theirs = yield* Fiber.join(yield* h.run(1, (b) => b.execute(wf, { log: [] }, { tenantId: "neighbour", ownerId: "alice", threadId: "t" })))
        const other = yield* Fiber.await(yield* h.run(1, (b) => b.deleteThread("t", { tenantId: "other", ownerId: "alice" })))
        assert.strictEqual(errorTag(other), "UnknownThreadError", "another tenant's thread is unknown")
        const notOwner = yield* Fiber.await(yield* h.run(1, (b) => b.deleteThread("t", { tenantId: "acme", ownerId: "mallory" })))
        assert.strictEqual(errorTag(notOwner), "ThreadOwnerError")
        const kept = yield* leftOf("acme", "t", [], [])
        assert.deepStrictEqual(kept.slice(0, 2), ["thread", "1 records"], "refused calls delete nothing")
        assert.match(kept[2]!, /^\d+ checkpoints$/)
        yield* Fiber.join(yield* h.run(1, (b) => b.deleteThread("t", scope)))
        assert.deepStrictEqual(yield* leftOf("acme", "t", [out.executionId], [pauseId]), [], "nothing is left")
        if (theirs._tag !== "Paused") return assert.fail("paused")
        assert.include(yield* leftOf("neighbour", "t", [theirs.executionId], [theirs.pauses[0]!.pauseId]), "thread", "another tenant's thread of the same id stays")
        assert.strictEqual((yield* leftOf("neighbour", "t", [theirs.executionId], [theirs.pauses[0]!.pauseId])).length, 6, "whole: thread, record, tree keys, pause, checkpoints…")
        assert.isTrue(Option.isNone(yield* RequestStore.use((r) => r.get("acme", "k1", Number.MAX_SAFE_INTEGER - 1))), "the request key is free")
        const resumed = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ ...scope, pauseId, decision: "yes" })))
        assert.strictEqual(errorTag(resumed), "UnknownPauseError", "the pause went with the thread")
        const again = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { ...scope, threadId: "t", requestKey: "k1" })))
        assert.notStrictEqual(again.executionId, out.executionId, "the key and the thread id start a new execution")
        if (again._tag !== "Paused") return assert.fail("paused")
        assert.deepStrictEqual(again.pauses.length, 1)
        assert.deepStrictEqual(fx.runs.filter((r) => r.node === "draft").length, 3, "from its first step (the neighbour ran one too): no checkpoint was left to continue")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a tree a pass holds refuses the delete (nothing deleted); with cancelFirst it is cancelled, then deleted", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = slow(fx, "10 minutes")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { threadId: "busy" })))
        yield* h.advance("1 second")
        const refused = yield* Fiber.await(yield* h.run(1, (b) => b.deleteThread("busy")))
        assert.strictEqual(errorTag(refused), "ThreadHeldError")
        assert.deepStrictEqual((yield* leftOf("default", "busy", [], [])).slice(0, 2), ["thread", "1 records"], "nothing deleted")
        const deleting = yield* h.run(1, (b) => b.deleteThread("busy", { cancelFirst: true }))
        // The holder reads the cancel request within a renewal (10 s).
        yield* h.advance("30 seconds")
        const deleted = yield* Fiber.await(deleting)
        assert.isTrue(Exit.isSuccess(deleted), `cancelled, then deleted (${errorTag(deleted)})`)
        assert.deepStrictEqual(yield* leftOf("default", "busy", [handle.executionId], []), [])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a delete killed halfway leaves the thread blocked (a start is refused) until another instance's sweep finishes it", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const state = { h: undefined as Harness.Harness | undefined, killed: false }
        const h = yield* Harness.make({
          instances: 2,
          baton: { workflows: [wf], sweepInterval: "10 seconds" },
          beforeStoreCall: (call) =>
            Effect.suspend(() => {
              if (state.killed || call.index !== 1 || call.operation !== "CheckpointStore.deleteThread") return Effect.void
              state.killed = true
              return Effect.orDie(state.h!.kill(1))
            })
        })
        state.h = h
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "half" })))
        if (out._tag !== "Paused") return assert.fail("paused")
        const died = yield* Fiber.await(yield* h.run(1, (b) => b.deleteThread("half")))
        assert.isTrue(state.killed && Exit.isFailure(died), "the deleting instance died before deleting the checkpoints")
        const blocked = yield* Fiber.await(yield* h.run(0, (b) => b.start(wf, { log: [] }, { threadId: "half" })))
        assert.strictEqual(errorTag(blocked), "ThreadBusyError", "nothing starts on a thread being deleted")
        for (let i = 0; i < 5; i++) yield* h.advance("10 seconds")
        assert.deepStrictEqual(yield* leftOf("default", "half", [out.executionId], [out.pauses[0]!.pauseId]), [], "the sweep finished the delete")
        const fresh = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "half" })))
        assert.strictEqual(fresh._tag, "Paused", "the thread id works again")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    for (const frozen of [0, 1] as const) {
      for (const n of [1, 2, 3, 4, 5, 6, 8, 10]) {
        it.effect(`a delete (instance 1) racing a resume (instance 0), instance ${frozen} frozen at its store call ${n}: exactly one goes on`, () =>
          Effect.gen(function*() {
            const fx = makeSideEffects()
            const wf = approveThenWork(fx, "10 minutes")
            const ref = { h: undefined as Harness.Harness | undefined, count: 0, armed: false }
            const h = yield* Harness.make({
              instances: 2,
              baton: { workflows: [wf] },
              beforeStoreCall: (call) =>
                Effect.suspend(() => {
                  if (!ref.armed || call.index !== frozen || ++ref.count !== n) return Effect.void
                  ref.armed = false
                  return Effect.orDie(ref.h!.freeze(frozen))
                })
            })
            ref.h = h
            const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "race" })))
            if (out._tag !== "Paused") return assert.fail("paused")
            const pauseId = out.pauses[0]!.pauseId
            ref.armed = true
            const resume = yield* h.run(0, (b) => b.resume({ pauseId, decision: "go" }))
            const del = yield* h.run(1, (b) => b.deleteThread("race"))
            yield* h.advance("31 seconds")
            if (h.instances[frozen]!.state === "frozen") yield* h.thaw(frozen)
            yield* h.advance("15 seconds")
            const deleted = yield* Fiber.await(del)
            // The resume goes on working for 10 minutes when it won.
            yield* h.advance("11 minutes")
            const resumed = yield* Fiber.await(resume)
            const outcome = `resume: ${errorTag(resumed)}, delete: ${errorTag(deleted)}`
            if (Exit.isSuccess(deleted)) {
              // The delete won: the resume was refused, and never moved the tree.
              assert.isDefined(errorTag(resumed), `the resume gets a typed error (${outcome}): ${Exit.isFailure(resumed) ? String(resumed.cause) : ""}`)
              assert.notStrictEqual(errorTag(resumed), "Success", outcome)
              assert.deepStrictEqual(yield* leftOf("default", "race", [out.executionId], [pauseId]), [], "nothing left behind")
              assert.isFalse(fx.runs.some((r) => r.node === "work"), "the resume never moved the deleted tree")
            } else {
              // The resume won: its decision moved the tree to its end (on its instance, or — when that one lost the
              // lease while frozen — on the other, the resume answering LeaseLostError: the execution went on).
              assert.strictEqual(errorTag(deleted), "ThreadHeldError", outcome)
              assert.include(["Success", "LeaseLostError"], errorTag(resumed), outcome)
              const records = yield* RecordStore.use((r) => r.listByThread("default", "race"))
              assert.deepStrictEqual(records.map((r) => r.status), ["Finished"], "the answered tree finished")
              assert.strictEqual(fx.applied.size, 1, "its work ran once")
            }
          }).pipe(Effect.provide(Layer.fresh(backend.stores))))
      }
    }
  })
}
