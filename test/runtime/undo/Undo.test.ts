import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Option } from "effect"
import { StoreError } from "../../../src/stores/Errors.ts"
import { ExecutionFailedError, UndoFailedError } from "../../../src/runtime/Errors.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Undo from "../../../src/runtime/internal/undo/Undo.ts"
import { make as makeObserver, Observer } from "../../../src/runtime/Observer.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { backends, errorTag, recordOf, theRunningRoot } from "../fixtures.ts"
import { booking, makeBook, type UndoBook, undoneNodes } from "./undoFixtures.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => (Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined)

/** Each undo key is the step's key + ":undo", applied once. */
const assertKeys = (book: UndoBook, nodes: ReadonlyArray<string>) => {
  for (const node of nodes) {
    const key = `${book.stepKeys.get(node)}:undo`
    assert.strictEqual(book.applied.get(key), 1, `the undo of ${node} applied once under ${key}`)
  }
  assert.strictEqual(book.applied.size, nodes.length, "no other undo applied")
}

/** The backend's stores, with a TreeStore that refuses (permanently) to record `@baton/unwinding`. */
const refusingUnwinding = <E>(stores: Layer.Layer<Harness.HarnessStores, E>) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const tree = Context.get(context, TreeStore)
    return Context.add(context, TreeStore, {
      ...tree,
      saveReservedIfAbsent: (tenantId, root, name, value) =>
        name === "unwinding"
          ? Effect.fail(new StoreError({ store: "TreeStore", operation: "saveIfAbsent", reason: "the server refused the row", kind: "Data" }))
          : tree.saveReservedIfAbsent(tenantId, root, name, value),
      saveReservedFenced: (tenantId, root, name, value, lease, now) =>
        name === "unwinding"
          ? Effect.fail(new StoreError({ store: "TreeStore", operation: "saveIfAbsentFenced", reason: "the server refused the row", kind: "Data" }))
          : tree.saveReservedFenced(tenantId, root, name, value, lease, now)
    })
  })).pipe(Layer.provide(Layer.fresh(stores)))

for (const backend of backends) {
  describe(`durable undo on ${backend.name}`, () => {
    it.effect("three steps with undos, the fourth fails: undos run 3, 2, 1 once each; the record ends Failed with the fourth step's error", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const exit = yield* Fiber.await(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        const error = failureOf(exit)
        assert.instanceOf(error, ExecutionFailedError)
        assert.include((error as ExecutionFailedError).error, "s4 boom")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assertKeys(book, ["s3", "s2", "s1"])
        assert.deepStrictEqual(book.undone.map((u) => u.reason), ["Failed", "Failed", "Failed"])
        assert.deepStrictEqual(book.undone[0]!.result, { log: ["s3"] }, "the undo gets its step's result")
        const record = yield* recordOf((error as ExecutionFailedError).tenantId, (error as ExecutionFailedError).executionId)
        assert.strictEqual(record?.status, "Failed")
        assert.include(record?.error ?? "", "s4 boom")
        const keys = yield* TreeStore.use((t) => t.list(record!.tenantId, record!.rootExecutionId, "@baton/"))
        assert.deepStrictEqual(keys, [], "the tree's keys went with it")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("kill the holder after undo 3 ran: the other instance runs 2 and 1 only, with the same idempotency keys; status shows the unwinding", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        // s4 failed; the undo of s3 works for 5 s.
        yield* h.advance("5 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3"])
        const status = yield* Fiber.join(yield* h.run(1, (b) => b.status(root.executionId)))
        assert.strictEqual(status.status, "Running", "the record stays Running while it unwinds")
        assert.strictEqual(status.unwinding?.reason, "Failed")
        assert.include(status.unwinding?.error.message ?? "", "s4 boom")
        assert.deepStrictEqual([status.unwinding?.undos, status.unwinding?.compensated, status.unwinding?.remaining], [3, 1, 2])
        const marker = yield* TreeStore.use((t) => t.get(root.tenantId, root.rootExecutionId, Undo.compensatedKey(book.stepKeys.get("s3")!)))
        assert.isTrue(Option.isSome(marker), "@baton/compensated/<key> written after the undo")
        // The holder dies in the middle of the undo of s2.
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        yield* h.advance("15 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.deepStrictEqual(book.undone.map((u) => u.instanceId), ["instance-0", "instance-1", "instance-1"])
        assertKeys(book, ["s3", "s2", "s1"])
        const s2Tries = book.tries.filter((t) => t.node === "s2")
        assert.deepStrictEqual(s2Tries.map((t) => t.instanceId), ["instance-0", "instance-1"], "s2's undo was started again by the new holder")
        assert.strictEqual(s2Tries[0]!.key, s2Tries[1]!.key, "with the same idempotency key")
        assert.isFalse(book.tries.some((t) => t.node === "s3" && t.instanceId === "instance-1"), "the compensated undo was skipped")
        const record = yield* recordOf(root.tenantId, root.executionId)
        assert.strictEqual(record?.status, "Failed")
        assert.include(record?.error ?? "", "s4 boom", "ended with the recorded reason")
        assert.isDefined(running.pollUnsafe(), "the killed caller's fiber ended")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a frozen holder thawed mid-undo runs no undo after losing its lease (fenced)", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        // Frozen while the undo of s3 works: its lease expires, instance 1 takes the tree and unwinds it.
        yield* h.freeze(0)
        yield* h.advance("31 seconds")
        yield* h.advance("15 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.isTrue(book.undone.every((u) => u.instanceId === "instance-1"))
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
        const triesBefore = book.tries.filter((t) => t.instanceId === "instance-0").length
        // Thawed: the undo it was in the middle of sees its lease gone; it starts no other undo.
        yield* h.thaw(0)
        yield* h.advance("20 seconds")
        assert.strictEqual(book.tries.filter((t) => t.instanceId === "instance-0").length, triesBefore, "no undo started after the thaw")
        assert.isFalse(book.undone.some((u) => u.instanceId === "instance-0"), "and the one in flight did not act")
        assertKeys(book, ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("cancel from another instance mid-run: the undos run and it ends Cancelled; a cancel mid-undo is ignored", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "finish", s4Sleep: "45 seconds", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(root.threadId))), { cancelled: true })
        // The holder reads the request at its next renewal and starts unwinding.
        yield* h.advance("10 seconds")
        assert.deepStrictEqual(book.tries.map((t) => t.node), ["s3"])
        const status = yield* Fiber.join(yield* h.run(1, (b) => b.status(root.executionId)))
        assert.strictEqual(status.unwinding?.reason, "Cancelled")
        // A second cancel (from either instance) changes nothing.
        assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(root.threadId))), { cancelled: false })
        assert.deepStrictEqual(yield* Fiber.join(yield* h.run(0, (b) => b.cancel(root.threadId))), { cancelled: false })
        yield* h.advance("15 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.deepStrictEqual(book.undone.map((u) => u.reason), ["Cancelled", "Cancelled", "Cancelled"])
        assertKeys(book, ["s3", "s2", "s1"])
        assert.strictEqual(errorTag(yield* Fiber.await(running)), "ExecutionCancelledError")
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Cancelled")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a paused execution that is cancelled runs its undos before it ends", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "pause" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(out._tag, "Paused")
        assert.deepStrictEqual(undoneNodes(book), [], "a pause undoes nothing")
        assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1, (b) => b.cancel(out.threadId))), { cancelled: true })
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assertKeys(book, ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(out.tenantId, out.executionId))?.status, "Cancelled")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a cancelled paused execution whose holder dies mid-undo is finished by the sweep (Running while it unwinds)", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "pause", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(out._tag, "Paused")
        // The cancel lands on instance 0, which takes the paused tree's lease and unwinds it.
        yield* h.run(0, (b) => b.cancel(out.threadId))
        yield* h.advance("5 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3"])
        assert.strictEqual((yield* recordOf(out.tenantId, out.executionId))?.status, "Running", "visible to the sweep while it unwinds")
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        yield* h.advance("15 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.deepStrictEqual(book.undone.map((u) => u.instanceId), ["instance-0", "instance-1", "instance-1"])
        assertKeys(book, ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(out.tenantId, out.executionId))?.status, "Cancelled")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("an undo that fails twice then succeeds is retried with a doubling backoff on the Clock", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", failTries: new Map([["s2", 2]]) })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], undoAttempts: 3, undoBackoff: "1 second" } })
        const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        assert.deepStrictEqual(book.tries.filter((t) => t.node === "s2").map((t) => t.attempt), [1], "waits its backoff")
        yield* h.advance("1 second")
        assert.deepStrictEqual(book.tries.filter((t) => t.node === "s2").map((t) => t.attempt), [1, 2])
        yield* h.advance("2 seconds")
        const s2 = book.tries.filter((t) => t.node === "s2")
        assert.deepStrictEqual(s2.map((t) => t.attempt), [1, 2, 3])
        assert.deepStrictEqual([s2[1]!.at - s2[0]!.at, s2[2]!.at - s2[1]!.at], [1_000, 2_000], "backoff 1 s, then 2 s")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assertKeys(book, ["s3", "s2", "s1"])
        const error = failureOf(yield* Fiber.await(running)) as ExecutionFailedError
        assert.strictEqual(error._tag, "ExecutionFailedError")
        assert.notInstanceOf(error.cause, UndoFailedError, "no undo failed in the end")
        assert.strictEqual((yield* recordOf(error.tenantId, error.executionId))?.error, error.error)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("an undo that always fails: the others still run; the execution ends Failed with both errors and the failed undo listed", () => {
      const errors: Array<string> = []
      return Effect.gen(function*() {
        const book = makeBook({ s4: "fail", failTries: new Map([["s2", Infinity]]) })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf], undoAttempts: 3, undoBackoff: "1 second" } })
        const running = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.advance("10 seconds")
        assert.deepStrictEqual(book.tries.filter((t) => t.node === "s2").map((t) => t.attempt), [1, 2, 3], "bounded: 3 tries")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s1"], "the undo of s1 still ran")
        const error = failureOf(yield* Fiber.await(running)) as ExecutionFailedError
        assert.strictEqual(error._tag, "ExecutionFailedError")
        assert.include(error.error, "s4 boom")
        assert.include(error.error, `undo of step "s2"`)
        assert.include(error.error, "undo of s2 refused")
        assert.instanceOf(error.cause, UndoFailedError)
        const cause = error.cause as UndoFailedError
        assert.deepStrictEqual(cause.failed.map((f) => [f.node, f.stepIdempotencyKey, f.attempts]), [["s2", book.stepKeys.get("s2")!, 3]])
        const record = yield* recordOf(error.tenantId, error.executionId)
        assert.strictEqual(record?.status, "Failed")
        assert.include(record?.error ?? "", "s4 boom")
        assert.include(record?.error ?? "", book.stepKeys.get("s2")!, "the failed undo is listed in the record")
        assert.deepStrictEqual(errors, [error.error], "the error hook fired once, with both errors")
      }).pipe(
        Effect.provideService(Observer, makeObserver({ onError: (e) => Effect.sync(() => errors.push(e.error)) })),
        Effect.provide(Layer.fresh(backend.stores))
      )
    })

    it.effect("close during unwinding hands the tree over: the other instance finishes the undos", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        // A close with 10 s: the undos go on until the grace (8 s), then the pass stops and hands over.
        const closing = yield* h.run(0, (b) => b.close({ timeout: "10 seconds" }))
        yield* h.advance("10 seconds")
        assert.isDefined(closing.pollUnsafe(), "close ended within its timeout")
        assert.deepStrictEqual(undoneNodes(book), ["s3"], "undo 3 ran before the close's grace")
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Running", "handed over, still Running")
        yield* h.advance("15 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.deepStrictEqual(book.undone.map((u) => u.instanceId), ["instance-0", "instance-1", "instance-1"])
        assertKeys(book, ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a step killed before it finished has no undo on record; the recovering instance re-runs it and then unwinds the others once", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail", s4Sleep: "20 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.advance("5 seconds")
        const root = yield* theRunningRoot
        const registered = yield* TreeStore.use((t) => t.list(root.tenantId, root.rootExecutionId, "@baton/undo/"))
        assert.deepStrictEqual(
          registered.map((e) => e.key).sort(),
          ["s1", "s2", "s3"].map((n) => `@baton/undo/${book.stepKeys.get(n)}`).sort(),
          "the finished steps' undos are on record, the running step's is not"
        )
        assert.deepStrictEqual((registered.find((e) => e.key.endsWith(book.stepKeys.get("s2")!))?.value as { result: unknown }).result, { log: ["s2"] })
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        yield* h.advance("25 seconds")
        assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"])
        assert.isTrue(book.undone.every((u) => u.instanceId === "instance-1"))
        assertKeys(book, ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a tree whose unwinding cannot be recorded ends Failed after maxRecoveryAttempts naming the undos that did not run", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "fail" })
        const wf = booking(book)
        const h = yield* Harness.make({
          instances: 1,
          baton: { workflows: [wf], maxRecoveryAttempts: 2, recoveryBackoff: "1 second", recoveryBackoffMax: "1 second" }
        })
        const exit = yield* Fiber.await(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(errorTag(exit), "StoreError", "the store refused: the tree stays Running")
        const root = yield* theRunningRoot
        yield* h.advance("40 seconds")
        assert.deepStrictEqual(book.undone, [], "no undo could run")
        const record = yield* recordOf(root.tenantId, root.executionId)
        assert.strictEqual(record?.status, "Failed")
        assert.include(record?.error ?? "", "3 undo(s) on record did not run")
        for (const n of ["s1", "s2", "s3"]) assert.include(record?.error ?? "", book.stepKeys.get(n)!, `the undo of ${n} is named`)
      }).pipe(Effect.provide(refusingUnwinding(backend.stores))))

    it.effect("a step with an undo whose result cannot be stored fails with an error saying so, and registers nothing", () =>
      Effect.gen(function*() {
        const wf = Workflow.make({
          name: "unstorable",
          version: "1",
          graph: new StateGraph(Annotation.Root({ n: Annotation<unknown> }))
            .addNode("big", Workflow.step(async () => ({ n: 10n }), { undo: async () => {} }))
            .addEdge(START, "big")
            .addEdge("big", END)
        })
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const error = failureOf(yield* Fiber.await(yield* h.run(0, (b) => b.execute(wf, {})))) as ExecutionFailedError
        assert.strictEqual(error._tag, "ExecutionFailedError")
        assert.include(error.error, `step "big" has an undo, so its result must be storable as JSON`)
        assert.strictEqual((yield* recordOf(error.tenantId, error.executionId))?.status, "Failed")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a finished execution undoes nothing and its registrations go with the tree", () =>
      Effect.gen(function*() {
        const book = makeBook({ s4: "finish" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(out._tag, "Finished")
        assert.deepStrictEqual(book.tries, [])
        assert.deepStrictEqual(yield* TreeStore.use((t) => t.list(out.tenantId, out.executionId, "@baton/")), [])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
