/**
 * A cancel of a Paused tree (nobody holds its lease) whose instance dies
 * right after it durably wrote the cancel request, before it acted on it.
 * The request must still take effect, driven by the fleet on the Clock: the
 * tree ends Cancelled (a later `resume` is refused), its undos run once, and
 * no queued child of it starts after the request landed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import * as Cancel from "../../../src/runtime/internal/undo/Cancel.ts"
import { ChildQueueStore } from "../../../src/stores/ChildQueueStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects, statusOf, stopOnce } from "../fixtures.ts"
import { makeTripBook, tripWorkflow } from "../undo/undoChildrenFixtures.ts"

/** The cancelling instance's write of the cancel request. */
const isRequestWrite = (call: Harness.StoreCall) =>
  call.operation.endsWith("TreeStore.saveReservedIfAbsent") && call.args[2] === Cancel.requestName

/** Kills instance `index` at its first store call after its cancel request write (the write itself landed); `landed` runs as it lands. */
const killAfterRequest = (index: number, landed?: () => void) => stopOnce(index, isRequestWrite, { how: "kill", after: true, matched: landed })

for (const backend of backends) {
  describe(`a cancel of a paused tree whose instance dies right after writing its request, on ${backend.name}`, () => {
    it.effect("another instance ends the tree Cancelled on the Clock, and a later resume is refused", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const kill = killAfterRequest(1)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: kill.beforeStoreCall })
        kill.attach(h)
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(out._tag, "Paused")
        if (out._tag !== "Paused") return
        yield* Fiber.await(yield* h.run(1, (b) => b.cancel(out.threadId)))
        assert.isTrue(kill.stopped, "the cancelling instance died right after its request landed")
        const request = yield* TreeStore.use((t) => t.get(out.tenantId, out.executionId, Cancel.requestKey))
        assert.isTrue(Option.isSome(request), "the request is on record")
        // Instance 0 goes on: within a sweep interval it ends the tree.
        for (let i = 0; i < 4; i++) yield* h.advance("10 seconds")
        assert.strictEqual(yield* statusOf(out.tenantId, out.executionId), "Cancelled", "the request took effect")
        const resumed = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ pauseId: out.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(errorTag(resumed), "NotPausedError", "the withdrawn pause cannot be answered")
        assert.strictEqual(yield* statusOf(out.tenantId, out.executionId), "Cancelled")
        assert.deepStrictEqual(fx.runs.map((r) => r.node), ["draft", "approve"], "send never ran")
        assert.deepStrictEqual(yield* TreeStore.use((t) => t.list(out.tenantId, out.executionId, "@baton/")), [], "no key left in its tree")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a parent resting on queued children: no queued child starts after the request, the parent ends Cancelled, each undo runs once", () =>
      Effect.gen(function*() {
        // Six legs, at most two at once: four wait in the queue when the cancel comes.
        const book = makeTripBook({ placement: "any", cFails: false, legs: 6, maxConcurrentExecutions: 2, legWork: "20 seconds" })
        const wf = tripWorkflow(book)
        const legsStarted = () => [...book.stepKeys.keys()].filter((k) => k.startsWith("leg-")).sort()
        let startedAtRequest: ReadonlyArray<string> | undefined
        const kill = killAfterRequest(1, () => (startedAtRequest = legsStarted()))
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: kill.beforeStoreCall })
        kill.attach(h)
        yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "trip" }))
        yield* h.advance("5 seconds")
        const parent = (yield* RecordStore.use((r) => r.listByThread("default", "trip")))[0]!
        assert.strictEqual(parent.status, "Paused", "the parent rests on its legs")
        yield* Fiber.await(yield* h.run(1, (b) => b.cancel("trip")))
        assert.isTrue(kill.stopped, "the cancelling instance died right after its request landed")
        assert.deepStrictEqual(startedAtRequest, ["leg-0", "leg-1"], "two legs were at work when the request landed")
        for (let i = 0; i < 12; i++) yield* h.advance("10 seconds")
        assert.deepStrictEqual(legsStarted(), ["leg-0", "leg-1"], "no queued leg started after the cancel's request landed")
        assert.strictEqual(yield* statusOf(parent.tenantId, parent.executionId), "Cancelled", "the parent ends Cancelled")
        // The legs that booked are undone once each (by the parent: they handed over), and so is step a.
        for (const who of ["a", "leg-0", "leg-1"]) {
          const key = `${book.stepKeys.get(who)}:undo`
          assert.strictEqual(book.applied.get(key), 1, `${who}'s undo applied once under ${key}`)
        }
        assert.strictEqual(book.applied.size, 3, "no other undo applied")
        // Only the two legs at work ever had a record (they finished and handed over); the queued four never started.
        const children = (yield* RecordStore.use((r) => r.findByStatus("Finished", 50, Option.none())))
          .filter((r) => r.parentExecutionId === parent.executionId)
        assert.strictEqual(children.length, 2, "two legs ran")
        const launchId = children[0]!.executionId.slice(0, children[0]!.executionId.lastIndexOf("."))
        const rows = yield* ChildQueueStore.use((q) => q.listLaunch(parent.tenantId, launchId))
        assert.deepStrictEqual(rows.map((r) => r.status), ["Answered", "Answered", "Failed", "Failed", "Failed", "Failed"], "the queued legs' rows ended Failed")
        for (const row of rows.slice(2)) assert.isTrue(Option.isNone(yield* RecordStore.use((r) => r.getRecord(row.tenantId, row.executionId))), `${row.executionId} has no record`)
        assert.deepStrictEqual(yield* TreeStore.use((t) => t.list(parent.tenantId, parent.rootExecutionId, "@baton/")), [], "no key left in its tree")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 30_000)
  })
}
