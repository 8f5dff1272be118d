/**
 * A paused parent (no undos of its own, resting on the children it launched)
 * is cancelled from an instance that does not register its workflow, and that
 * instance dies right after it refused its children's undo hand-offs
 * (`TreeDriver.endIfFree`), holding the parent's lease. The refused children
 * that book before the parent ends undo themselves and end Cancelled; the
 * parent must still end Cancelled — the cancel was asked for — not Failed for
 * its cancelled children, and every undo runs once. The fleet ends the parent
 * once the dead instance's lease expired (the recovery sweep finds its
 * request), not when its last child ends: legs still at work then are asked to
 * stop, end Cancelled before they book, and have nothing to undo.
 * And the cancel request, now written before the tree is ended, is left on
 * no tree that ended before it landed.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Layer, Option } from "effect"
import * as Cancel from "../../../src/runtime/internal/undo/Cancel.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { approval, backends, makeSideEffects, statusOf, stopOnce, unrelated } from "../fixtures.ts"
import { makeTripBook, tripWorkflow } from "./undoChildrenFixtures.ts"

/** A fenced write of `name` into the tree whose root id ends `.<leg>` (legs are the parent's children). */
const isWriteInto = (call: Harness.StoreCall, leg: number, name: (n: string) => boolean) => {
  if (!call.operation.endsWith("TreeStore.saveReservedFenced")) return false
  const [, root, key] = call.args as [string, string, string]
  return root.endsWith(`.${leg}`) && name(key)
}

/** The cancelling instance's refusal of leg 2's hand-off: the last one it writes (legs are closed in launch order). */
const isLastRefusal = (call: Harness.StoreCall) =>
  call.index === 1 && isWriteInto(call, 2, (n) => n === "handoff") && "refusedBy" in (call.args[3] as object)

/** Leg 1's instance copying its claimed hand-off into the parent's tree. */
const isLeg1Copy = (call: Harness.StoreCall) =>
  call.index === 0 && call.operation.endsWith("TreeStore.saveReservedFenced") &&
  (call.args[2] as string).startsWith("child-undo/") && (call.args[2] as string).endsWith(".1")

interface Case {
  readonly name: string
  /** Leg 1 books fast, claims its hand-off and its instance stops before the copy (`endIfFree` then leaves the tree). */
  readonly leg1Claims: boolean
  /**
   * Whether the legs that book slowly (legs 0 and 2, and leg 1 unless it claims) are still at work when the
   * parent ends (a minute's work), or booked before (20 s: the dead canceller's lease on the parent lasts 30 s).
   */
  readonly stoppedAtWork: boolean
}

const cases: ReadonlyArray<Case> = [
  { name: "no leg handed over (endIfFree goes on to end the tree)", leg1Claims: false, stoppedAtWork: false },
  { name: "leg 1 claimed its hand-off, not copied yet (endIfFree copies it and leaves the tree)", leg1Claims: true, stoppedAtWork: false },
  { name: "no leg handed over, every leg still at work when the parent ends", leg1Claims: false, stoppedAtWork: true },
  { name: "leg 1 claimed its hand-off, not copied yet; legs 0 and 2 still at work when the parent ends", leg1Claims: true, stoppedAtWork: true }
]

const advanceUntil = <E, R>(h: Harness.Harness, step: Duration.Input, max: number, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !(yield* done); i++) yield* h.advance(step)
  })

for (const backend of backends) {
  describe(`cancelling a paused parent from an instance without its workflow that dies after refusing its children's hand-offs, on ${backend.name}`, () => {
    for (const c of cases) {
      it.effect(`${c.name}: the parent ends Cancelled, every undo runs once`, () =>
        Effect.gen(function*() {
          const slowLeg = c.stoppedAtWork ? "60 seconds" : "20 seconds"
          const book = makeTripBook({
            placement: "any",
            cFails: false,
            aUndo: false,
            legWorkOf: new Map([[0, slowLeg], [1, c.leg1Claims ? "3 seconds" : slowLeg], [2, slowLeg]])
          })
          const wf = tripWorkflow(book)
          // Leg 1's instance stops before its copy; the cancelling instance dies at its first store call after its last refusal.
          const atCopy = stopOnce(0, (call) => c.leg1Claims && isLeg1Copy(call))
          const cancelling = stopOnce(1, isLastRefusal, { how: "kill", after: true })
          const h = yield* Harness.make({
            instances: 2,
            baton: { workflows: [wf] },
            // 0 has the trip (and runs the legs); 1 claims no child and knows neither workflow.
            instanceOptions: (i) => (i === 1 ? { workflows: [unrelated], maxClaimedChildren: 0 } : {}),
            beforeStoreCall: (call) => Effect.andThen(atCopy.beforeStoreCall(call), cancelling.beforeStoreCall(call))
          })
          atCopy.attach(h)
          cancelling.attach(h)
          yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* h.advance("2 seconds")
          const parent = (yield* RecordStore.use((r) => r.findByStatus("Paused", 50, Option.none()))).find((r) => r.parentExecutionId == null)
          assert.isDefined(parent, "the parent rests on its children")
          const legs = (yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none())))
            .filter((r) => r.parentExecutionId === parent!.executionId)
          assert.strictEqual(legs.length, 3, "its three legs are at work")
          yield* h.advance("2 seconds")
          if (c.leg1Claims) {
            assert.isTrue(atCopy.stopped, "leg 1 claimed its hand-off")
            assert.strictEqual(h.instance(0).state, "frozen", "leg 1's instance stopped before its copy")
          }
          // Cancelled from instance 1, which dies right after it refused the legs' hand-offs.
          yield* Fiber.await(yield* h.run(1, (b) => b.cancel(parent!.threadId)))
          // Thawed: leg 1's instance (the one with the parent's workflow) goes on.
          if (c.leg1Claims) yield* h.thaw(0)
          assert.isTrue(cancelling.stopped, "the cancelling instance died after its refusals")
          assert.strictEqual(h.instance(1).state, "dead")
          assert.strictEqual(yield* statusOf(parent!.tenantId, parent!.executionId), "Paused", "the parent did not end on the dead instance")
          // Instance 0 goes on: the legs finish (the refused ones undo themselves), the parent's lease expires.
          const ended = Effect.map(statusOf(parent!.tenantId, parent!.executionId), (s) => s !== "Running" && s !== "Paused")
          yield* advanceUntil(h, "5 seconds", 40, ended)
          yield* h.advance("60 seconds")
          const parentEnd = yield* statusOf(parent!.tenantId, parent!.executionId)
          assert.strictEqual(parentEnd, "Cancelled", "the parent ends Cancelled: a cancel was asked for")
          // Each leg that booked was undone once (a refused one by itself, a handed-over one by the parent); one
          // stopped at work booked nothing and has nothing to undo.
          let booked = 0
          for (const l of legs) {
            const who = `leg-${l.executionId.slice(-1)}`
            const key = `${book.stepKeys.get(who)}:undo`
            const handedOver = c.leg1Claims && who === "leg-1"
            const stopped = c.stoppedAtWork && !handedOver
            assert.strictEqual(book.applied.get(key), stopped ? undefined : 1, `${who}'s undo applied ${stopped ? "never" : "once"} under ${key}`)
            if (!stopped) booked++
            assert.strictEqual(yield* statusOf(l.tenantId, l.executionId), handedOver ? "Finished" : "Cancelled", `${who} ended`)
          }
          assert.strictEqual(book.applied.size, booked, "no other undo applied")
          const keys = yield* TreeStore.use((t) => t.list(parent!.tenantId, parent!.rootExecutionId, "@baton/"))
          assert.deepStrictEqual(keys, [], "nothing was left in the ended parent's tree")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    }
  })
}

for (const backend of backends) {
  describe(`cancelling a paused execution that ends before the cancel's request lands, on ${backend.name}`, () => {
    it.effect("the cancel answers cancelled: false, the execution stays Finished and no request is left in its tree", () =>
      Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        // Instance 1 stops at its first store call after the cancel read the thread's roots.
        const stop = stopOnce(1, (call) => call.operation.endsWith("RecordStore.listByThread"), { after: true })
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] }, beforeStoreCall: stop.beforeStoreCall })
        stop.attach(h)
        const out = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
        assert.strictEqual(out._tag, "Paused")
        if (out._tag !== "Paused") return
        const cancelling = yield* h.run(1, (b) => b.cancel(out.threadId))
        yield* h.settle
        assert.isTrue(stop.stopped, "the cancel read the paused root and stopped")
        // Meanwhile the execution is resumed elsewhere and finishes.
        yield* Fiber.join(yield* h.run(0, (b) => b.resume({ pauseId: out.pauses[0]!.pauseId, decision: "yes" })))
        assert.strictEqual(yield* statusOf(out.tenantId, out.executionId), "Finished")
        yield* h.thaw(1)
        assert.deepStrictEqual(yield* Fiber.join(cancelling), { cancelled: false }, "nothing was left to cancel")
        assert.strictEqual(yield* statusOf(out.tenantId, out.executionId), "Finished")
        const request = yield* TreeStore.use((t) => t.get(out.tenantId, out.executionId, Cancel.requestKey))
        assert.isTrue(Option.isNone(request), "no cancel request left on the finished tree")
        assert.deepStrictEqual(yield* TreeStore.use((t) => t.list(out.tenantId, out.executionId, "@baton/")), [], "no key left in its tree")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
