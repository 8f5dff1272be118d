/**
 * A parent with no undos of its own, resting on children it launched, is
 * cancelled from an instance that does not register its workflow: that
 * instance ends it without its workflow (`TreeDriver.endIfFree`) unless the
 * tree has an undo open — then an instance with the workflow ends it (its
 * recovery sweep finds the request once the lease is free). A child that finished and registered an undo, at
 * each point of its hand-off (not claimed yet, claimed but not copied into
 * the parent's tree, copied) or still at work, must be undone exactly once
 * — by an instance that has the workflow — and the parent must end
 * Cancelled with nothing left in its tree.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Layer, Option } from "effect"
import type { AnyWorkflow } from "../../../src/runtime/Workflow.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, statusOf, unrelated } from "../fixtures.ts"
import { makeTripBook, tripWorkflow } from "./undoChildrenFixtures.ts"

/** Where leg 1's instance is stopped (frozen) when the parent is cancelled; `undefined`: not stopped (its hand-off landed). */
type Stop = "before its undo registration" | "before its claim" | "before its copy" | undefined

/** True for the store call `Stop` names: leg 1's own tree (the root id ends `.1`) or its copy into the parent's. */
const isStopCall = (stop: Stop, call: Harness.StoreCall) => {
  if (stop === undefined || !call.operation.endsWith("TreeStore.saveReservedFenced")) return false
  const [, root, name] = call.args as [string, string, string]
  switch (stop) {
    case "before its undo registration":
      return root.endsWith(".1") && name.startsWith("undo/")
    case "before its claim":
      return root.endsWith(".1") && name === "handoff"
    case "before its copy":
      return name.startsWith("child-undo/") && name.endsWith(".1")
  }
}

interface Case {
  readonly name: string
  readonly stop: Stop
  readonly other: "child only" | "neither"
  /** Whether the cancelling instance leaves the parent (leg 1's undo is the parent's: it needs the parent's workflow). */
  readonly leaves: boolean
  /** How leg 1 ends: Finished (its undo handed to the parent) or Cancelled (refused: it undid itself). */
  readonly leg1Ends: "Finished" | "Cancelled"
}

const cases: ReadonlyArray<Case> = [
  {
    name: "leg 1 claimed its hand-off, its copy not in the parent's tree yet; the cancelling instance registers only the child workflow",
    stop: "before its copy",
    other: "child only",
    leaves: true,
    leg1Ends: "Finished"
  },
  {
    name: "leg 1 claimed its hand-off, its copy not in the parent's tree yet; the cancelling instance registers neither workflow",
    stop: "before its copy",
    other: "neither",
    leaves: true,
    leg1Ends: "Finished"
  },
  {
    name: "leg 1 found its parent live and not unwinding, its claim not written yet",
    stop: "before its claim",
    other: "child only",
    leaves: false,
    leg1Ends: "Cancelled"
  },
  {
    name: "leg 1 still at work: its step returned, its undo not registered yet",
    stop: "before its undo registration",
    other: "child only",
    leaves: false,
    leg1Ends: "Cancelled"
  },
  { name: "leg 1 handed its undo over and ended Finished", stop: undefined, other: "child only", leaves: true, leg1Ends: "Finished" }
]

const advanceUntil = <E, R>(h: Harness.Harness, step: Duration.Input, max: number, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !(yield* done); i++) yield* h.advance(step)
  })

for (const backend of backends) {
  describe(`a child's undo when its parent (no undos of its own) is cancelled from an instance without the parent's workflow, on ${backend.name}`, () => {
    for (const c of cases) {
      it.effect(`${c.name}: leg 1's undo runs once, on the instance with the workflow; the parent ends Cancelled`, () =>
        Effect.gen(function*() {
          // The parent's only undos are its children's; leg 1 books in 3 s, legs 0 and 2 work a minute.
          const book = makeTripBook({
            placement: "any",
            cFails: false,
            aUndo: false,
            legWorkOf: new Map([[0, "60 seconds"], [1, "3 seconds"], [2, "60 seconds"]])
          })
          const wf = tripWorkflow(book)
          const leg = wf.children[0] as AnyWorkflow
          let stop = c.stop
          let harness: Harness.Harness | undefined
          const h = yield* Harness.make({
            instances: 2,
            baton: { workflows: [wf] },
            // 0 has the trip (and so the leg); 1 claims no child and has the leg's workflow only, or neither.
            instanceOptions: (i) => (i === 1 ? { workflows: [c.other === "child only" ? leg : unrelated], maxClaimedChildren: 0 } : {}),
            // Leg 1's instance stops (once) right at the call `stop` names.
            beforeStoreCall: (call) =>
              Effect.suspend(() => {
                if (harness === undefined || !isStopCall(stop, call)) return Effect.void
                stop = undefined
                return harness.freeze(call.index)
              })
          })
          harness = h
          yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* h.advance("2 seconds")
          const paused = yield* RecordStore.use((r) => r.findByStatus("Paused", 50, Option.none()))
          const parent = paused.find((r) => r.parentExecutionId == null)
          assert.isDefined(parent, "the parent rests on its children")
          const legs = (yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none())))
            .filter((r) => r.parentExecutionId === parent!.executionId)
          assert.strictEqual(legs.length, 3, "its three legs are at work")
          const leg1 = legs.find((r) => r.executionId.endsWith(".1"))!
          yield* h.advance("2 seconds")
          if (c.stop === undefined) {
            assert.strictEqual(yield* statusOf(leg1.tenantId, leg1.executionId), "Finished", "leg 1 handed its undo over and ended")
          } else {
            assert.isUndefined(stop, `leg 1 reached the point ${c.stop}`)
            assert.strictEqual(h.instance(0).state, "frozen", "leg 1's instance is stopped there")
          }
          // Cancelled from instance 1: it ends the parent only when no undo is left that needs the parent's workflow.
          const answer = yield* Fiber.join(yield* h.run(1, (b) => b.cancel(parent!.threadId)))
          const afterCancel = yield* statusOf(parent!.tenantId, parent!.executionId)
          // Thawed: leg 1's instance (the one with the parent's workflow) goes on.
          yield* h.thaw(0)
          // Left to an instance with the workflow: instance 0 ends it at once when it is not frozen (its sweep finds the
          // request as the cancelling instance lets the lease go), so the cancel answers what it found then.
          const endedAtOnce = !c.leaves || c.stop === undefined
          assert.strictEqual(answer.cancelled, endedAtOnce, c.leaves ? "left to an instance with the workflow" : "ended at once")
          assert.strictEqual(afterCancel, endedAtOnce ? "Cancelled" : "Paused")
          const ended = Effect.map(statusOf(parent!.tenantId, parent!.executionId), (s) => s !== "Running" && s !== "Paused")
          yield* advanceUntil(h, "5 seconds", 40, ended)
          yield* h.advance("60 seconds")
          assert.strictEqual(yield* statusOf(parent!.tenantId, parent!.executionId), "Cancelled", "the parent ends Cancelled")
          // Leg 1 booked: its undo ran exactly once, on the instance that has its workflow.
          const leg1Key = `${book.stepKeys.get("leg-1")}:undo`
          assert.strictEqual(book.applied.get(leg1Key), 1, `leg 1's undo applied once under ${leg1Key}`)
          assert.deepStrictEqual(book.undone.filter((u) => u.who === "leg-1").map((u) => u.instanceId), ["instance-0"])
          for (const [key, n] of book.applied) assert.strictEqual(n, 1, `the undo under ${key} applied once`)
          assert.strictEqual(yield* statusOf(leg1.tenantId, leg1.executionId), c.leg1Ends)
          if (c.stop === undefined) {
            // Ended at once by instance 0: legs 0 and 2, still at work, were asked to stop and booked nothing; leg 1 is the only undo.
            assert.deepStrictEqual(book.undone.map((u) => u.who), ["leg-1"])
            for (const l of legs.filter((r) => !r.executionId.endsWith(".1"))) {
              assert.strictEqual(yield* statusOf(l.tenantId, l.executionId), "Cancelled", `${l.executionId} was stopped at work`)
            }
          }
          // Every leg ended; one that ended Finished booked and handed its undo over: it was undone.
          for (const l of legs) {
            const status = yield* statusOf(l.tenantId, l.executionId)
            assert.isTrue(status === "Finished" || status === "Cancelled", `leg ${l.executionId} ended (${status})`)
            const who = `leg-${l.executionId.slice(-1)}`
            if (status === "Finished") assert.isTrue(book.undone.some((u) => u.who === who), `${who} ended Finished and was undone`)
          }
          const keys = yield* TreeStore.use((t) => t.list(parent!.tenantId, parent!.rootExecutionId, "@baton/"))
          assert.deepStrictEqual(keys, [], "nothing was left in the ended parent's tree")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    }
  })
}
