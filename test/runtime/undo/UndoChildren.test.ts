import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { ExecutionFailedError } from "../../../src/runtime/Errors.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import type { Placement } from "../../../src/runtime/Children.ts"
import { backends, recordOf } from "../fixtures.ts"
import { makeTripBook, nestedTripWorkflow, type TripBook, tripWorkflow, undoneWho } from "./undoChildrenFixtures.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => (Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined)

/** Advances in steps of `step` until `done` holds (at most `max` steps). */
const advanceUntil = (h: Harness.Harness, step: Duration.Input, max: number, done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !done(); i++) yield* h.advance(step)
  })

/** Each undo applied once, under its step's key + ":undo"; nothing else applied. */
const assertOnce = (book: TripBook, who: ReadonlyArray<string>) => {
  for (const w of who) {
    const key = `${book.stepKeys.get(w)}:undo`
    assert.strictEqual(book.applied.get(key), 1, `the undo of ${w} applied once under ${key}`)
  }
  assert.strictEqual(book.applied.size, who.length, "no other undo applied")
}

/** The parent's record (depth 1). */
const parentOf = RecordStore.use((r) =>
  Effect.map(
    Effect.all([r.findByStatus("Running", 50, Option.none()), r.findByStatus("Paused", 50, Option.none()), r.findByStatus("Failed", 50, Option.none())]),
    (all) => all.flat().find((rec) => rec.parentExecutionId == null)
  )
)

const placements: ReadonlyArray<Placement> = ["parent", "any"]

for (const backend of backends) {
  for (const placement of placements) {
    describe(`undo of children (placement ${placement}) on ${backend.name}`, () => {
      it.effect("a, b launches 3 children, c fails: the children's undos run 3, 2, 1, then a's — once each, in that order", () =>
        Effect.gen(function*() {
          const book = makeTripBook({ placement, cFails: true })
          const wf = tripWorkflow(book)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
          const run = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* advanceUntil(h, "1 second", 60, () => run.pollUnsafe() !== undefined)
          const error = failureOf(yield* Fiber.await(run))
          assert.instanceOf(error, ExecutionFailedError)
          assert.include((error as ExecutionFailedError).error, "c boom")
          assert.deepStrictEqual(undoneWho(book), ["leg-2", "leg-1", "leg-0", "a"])
          assertOnce(book, ["leg-2", "leg-1", "leg-0", "a"])
          assert.deepStrictEqual(book.undone.map((u) => u.reason), ["Failed", "Failed", "Failed", "Failed"])
          assert.deepStrictEqual(book.undone[0]!.result, { booked: "leg-2" }, "a child's undo gets its step's result")
          const legTry = book.tries.find((t) => t.who === "leg-2")!
          assert.notStrictEqual(legTry.executionId, (error as ExecutionFailedError).executionId, "a child's undo runs as the child's execution")
          const record = yield* recordOf((error as ExecutionFailedError).tenantId, (error as ExecutionFailedError).executionId)
          assert.strictEqual(record?.status, "Failed")
          assert.include(record?.error ?? "", "c boom")
          const keys = yield* TreeStore.use((t) => t.list(record!.tenantId, record!.rootExecutionId, "@baton/"))
          assert.deepStrictEqual(keys, [], "the parent's tree keys went with it")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))

      it.effect("the holder killed mid-undo of child 3: the other instance runs children 2 and 1 and a only, with the same keys", () =>
        Effect.gen(function*() {
          const book = makeTripBook({ placement, cFails: true, undoSleep: "5 seconds" })
          const wf = tripWorkflow(book)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
          yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          // Until the parent unwinds: the undo of leg 2 has started.
          yield* advanceUntil(h, "1 second", 60, () => book.tries.length > 0)
          assert.deepStrictEqual(book.tries.map((t) => t.who), ["leg-2"])
          const parent = yield* parentOf
          assert.isDefined(parent)
          const holder = book.tries[0]!.instanceId
          const holderIndex = h.instances.findIndex((i) => i.instanceId === holder)
          yield* h.advance("5 seconds")
          assert.deepStrictEqual(undoneWho(book), ["leg-2"])
          const status = yield* Fiber.join(yield* h.run(holderIndex, (b) => b.status(parent!.executionId)))
          assert.strictEqual(status.status, "Running", "Running while it unwinds")
          assert.deepStrictEqual([status.unwinding?.undos, status.unwinding?.compensated], [4, 1], "the children's undos count among the parent's")
          // The holder dies in the middle of the undo of leg 1.
          yield* advanceUntil(h, "1 second", 5, () => book.tries.length > 1)
          assert.deepStrictEqual(book.tries.map((t) => t.who), ["leg-2", "leg-1"])
          yield* h.kill(holderIndex)
          yield* advanceUntil(h, "5 seconds", 30, () => book.undone.length === 4)
          assert.deepStrictEqual(undoneWho(book), ["leg-2", "leg-1", "leg-0", "a"])
          const other = h.instances[1 - holderIndex]!.instanceId
          assert.deepStrictEqual(book.undone.map((u) => u.instanceId), [holder, other, other, other])
          assertOnce(book, ["leg-2", "leg-1", "leg-0", "a"])
          const leg1 = book.tries.filter((t) => t.who === "leg-1")
          assert.deepStrictEqual(leg1.map((t) => t.instanceId), [holder, other], "leg 1's undo was started again by the new holder")
          assert.strictEqual(leg1[0]!.key, leg1[1]!.key, "with the same idempotency key")
          assert.isFalse(book.tries.some((t) => t.who === "leg-2" && t.instanceId === other), "the compensated child undo was skipped")
          yield* h.advance("5 seconds")
          const record = yield* recordOf(parent!.tenantId, parent!.executionId)
          assert.strictEqual(record?.status, "Failed")
          assert.include(record?.error ?? "", "c boom")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))

      it.effect("one child fails: the launching step fails, the siblings that finished and a are undone; the failed child undid nothing of its own", () =>
        Effect.gen(function*() {
          const book = makeTripBook({ placement, cFails: false, failingLegs: new Set([1]) })
          const wf = tripWorkflow(book)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
          const run = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* advanceUntil(h, "1 second", 60, () => run.pollUnsafe() !== undefined)
          const error = failureOf(yield* Fiber.await(run))
          assert.instanceOf(error, ExecutionFailedError)
          assert.include((error as ExecutionFailedError).error, "leg 1: no seat")
          assert.deepStrictEqual(undoneWho(book), ["leg-2", "leg-0", "a"])
          assertOnce(book, ["leg-2", "leg-0", "a"])
          assert.isFalse(book.stepKeys.has("c"), "c never ran")
          const record = yield* recordOf((error as ExecutionFailedError).tenantId, (error as ExecutionFailedError).executionId)
          assert.strictEqual(record?.status, "Failed")
          const failedChildren = (yield* RecordStore.use((r) => r.findByStatus("Failed", 50, Option.none()))).filter((r) => r.parentExecutionId != null)
          assert.strictEqual(failedChildren.length, 1, "the failing child ended Failed")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))

      it.effect("the parent cancelled while its children run: the child that finished is undone by the parent, then a, once each; no child is left running", () =>
        Effect.gen(function*() {
          const book = makeTripBook({ placement, cFails: false, legWork: "1 second", legWorkOf: new Map([[1, "60 seconds"], [2, "60 seconds"]]) })
          const wf = tripWorkflow(book)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
          const run = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* h.advance("5 seconds")
          const parent = yield* parentOf
          assert.isDefined(parent)
          const cancel = yield* h.run(1, (b) => b.cancel(parent!.threadId))
          yield* advanceUntil(h, "5 seconds", 40, () => run.pollUnsafe() !== undefined && book.undone.length >= 2)
          yield* h.advance("60 seconds")
          assert.deepStrictEqual(yield* Fiber.join(cancel), { cancelled: true })
          // The parent undoes the child that had finished, then a. Children of placement "any" still running are
          // cancelled before their step finished (nothing to undo); inline ones (placement "parent") share the
          // launching step's abort signal through LangGraph's async context: their step ends, then their pass is
          // aborted and they undo themselves (before the parent's undos: it waits for its step bodies first).
          const self = placement === "parent" ? ["leg-1", "leg-2"] : []
          assert.deepStrictEqual(undoneWho(book).slice(0, self.length).sort(), self)
          assert.deepStrictEqual(undoneWho(book).slice(self.length), ["leg-0", "a"])
          assertOnce(book, [...self, "leg-0", "a"])
          assert.deepStrictEqual(book.undone.slice(self.length).map((u) => u.reason), ["Cancelled", "Cancelled"])
          assert.strictEqual((yield* recordOf(parent!.tenantId, parent!.executionId))?.status, "Cancelled")
          const running = yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none()))
          assert.deepStrictEqual(running, [], "no child is left running")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))

      if (placement === "any") {
        it.effect("a child that finishes after its parent was cancelled (and unwound) undoes itself, once, and ends Cancelled", () =>
          Effect.gen(function*() {
            const book = makeTripBook({ placement, cFails: false, legWorkOf: new Map([[1, "3 seconds"], [2, "60 seconds"]]) })
            const wf = tripWorkflow(book)
            const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
            yield* h.run(0, (b) => b.execute(wf, { log: [] }))
            yield* h.advance("2 seconds")
            const parent = yield* parentOf
            assert.strictEqual(parent?.status, "Paused", "the parent rests on its children")
            // Ended at once (it rests): leg 0 and a are undone; leg 1 is at work and reads no cancel before it finishes.
            assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(parent!.threadId))), { cancelled: true })
            assert.deepStrictEqual(undoneWho(book), ["leg-0", "a"])
            yield* h.advance("2 seconds")
            yield* h.advance("60 seconds")
            assert.deepStrictEqual(undoneWho(book), ["leg-0", "a", "leg-1"], "leg 1 found its parent ended: it undid itself")
            assertOnce(book, ["leg-0", "a", "leg-1"])
            const leg1 = (yield* recordOf(parent!.tenantId, book.tries.find((t) => t.who === "leg-1")!.executionId))
            assert.strictEqual(leg1?.status, "Cancelled")
            const keys = yield* TreeStore.use((t) => t.list(parent!.tenantId, parent!.rootExecutionId, "@baton/"))
            assert.deepStrictEqual(keys, [], "nothing was handed to the ended parent's tree")
          }).pipe(Effect.provide(Layer.fresh(backend.stores))))
      }

      it.effect("a trip that finishes undoes nothing: no child undo runs and the parent's tree keys go", () =>
        Effect.gen(function*() {
          const book = makeTripBook({ placement, cFails: false })
          const wf = tripWorkflow(book)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
          const run = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* advanceUntil(h, "1 second", 60, () => run.pollUnsafe() !== undefined)
          const out = yield* Fiber.join(run)
          assert.strictEqual(out._tag, "Finished")
          assert.deepStrictEqual(book.tries, [])
          assert.deepStrictEqual(yield* TreeStore.use((t) => t.list(out.tenantId, out.executionId, "@baton/")), [])
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    })
  }

  describe(`undo of grandchildren on ${backend.name}`, () => {
    it.effect("a child's own children are undone with it, in its own LIFO order, at its launch's place in the parent", () =>
      Effect.gen(function*() {
        const book = makeTripBook({ cFails: true })
        const wf = nestedTripWorkflow(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const run = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* advanceUntil(h, "1 second", 60, () => run.pollUnsafe() !== undefined)
        const error = failureOf(yield* Fiber.await(run))
        assert.instanceOf(error, ExecutionFailedError)
        assert.include((error as ExecutionFailedError).error, "c boom")
        const order = ["leg-11", "leg-10", "x-1", "leg-1", "leg-0", "x-0", "a"]
        assert.deepStrictEqual(undoneWho(book), order)
        assertOnce(book, order)
        const record = yield* recordOf((error as ExecutionFailedError).tenantId, (error as ExecutionFailedError).executionId)
        assert.strictEqual(record?.status, "Failed")
        assert.deepStrictEqual(yield* TreeStore.use((t) => t.list(record!.tenantId, record!.rootExecutionId, "@baton/")), [])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })

  describe(`inline children on ${backend.name}`, () => {
    it.effect("a killed instance's inline children stop with it (owned by its scope): they are left Running for the next holder, and the harness tears down", () =>
      Effect.gen(function*() {
        const book = makeTripBook({ placement: "parent", cFails: true, legWork: "60 seconds" })
        const wf = tripWorkflow(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.advance("2 seconds")
        const running = yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none()))
        assert.strictEqual(running.filter((r) => r.parentExecutionId != null).length, 3, "three inline children at work")
        yield* h.kill(0)
        yield* h.advance("5 seconds")
        const after = yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none()))
        assert.strictEqual(after.length, 4, "the parent and its children are left Running for the next holder")
        assert.deepStrictEqual(book.tries, [], "nothing unwound")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), { timeout: 20_000 })
  })
}
