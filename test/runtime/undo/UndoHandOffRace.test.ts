/**
 * A child's undo hand-off racing its parent's unwinding: the child looked at
 * its parent (live, not unwinding) and is stopped (frozen) before it writes;
 * meanwhile the parent is cancelled, unwinds and ends. Whenever the child's
 * hand-off lands — before the parent's final status write, or after the
 * parent ended — the child's undo must run exactly once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option } from "effect"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"
import * as Undo from "../../../src/runtime/internal/undo/Undo.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, recordOf } from "../fixtures.ts"
import { makeTripBook, type TripBook, tripWorkflow, undoneWho } from "./undoChildrenFixtures.ts"

/** What the test does at the two points of the race. */
interface Hooks {
  /** The parent whose unwinding marker the child reads. */
  parentId: string
  /** Runs once, right after a read of the parent's `@baton/unwinding` found none (the child's look at its parent). */
  onParentNotUnwinding: Effect.Effect<void> | undefined
  /** Runs once, right before the parent's record is written Cancelled (its final status write). */
  beforeParentEnds: Effect.Effect<void> | undefined
  /** Runs once, right before a child's hand-off is copied into the parent's tree. */
  beforeCopy: Effect.Effect<void> | undefined
}

/** The backend's stores, with the hooks of the race in the tree store's read and the record store's fenced write. */
const hooked = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, hooks: Hooks) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const tree = Context.get(context, TreeStore)
    const records = Context.get(context, RecordStore)
    const once = (take: "onParentNotUnwinding" | "beforeParentEnds" | "beforeCopy") =>
      Effect.suspend(() => {
        const hook = hooks[take]
        hooks[take] = undefined
        return hook ?? Effect.void
      })
    return Context.add(
      Context.add(context, TreeStore, {
        ...tree,
        saveReservedFenced: (tenantId, root, name, value, lease, now) =>
          Effect.andThen(
            root === hooks.parentId && name.startsWith("child-undo/") ? once("beforeCopy") : Effect.void,
            tree.saveReservedFenced(tenantId, root, name, value, lease, now)
          ),
        get: (tenantId, root, key) =>
          Effect.tap(tree.get(tenantId, root, key), (found) =>
            root === hooks.parentId && key === Undo.unwindingKey && Option.isNone(found) ? once("onParentNotUnwinding") : Effect.void)
      }),
      RecordStore,
      {
        ...records,
        setStatusFenced: (input) =>
          Effect.andThen(
            input.executionId === hooks.parentId && input.to === "Cancelled" ? once("beforeParentEnds") : Effect.void,
            records.setStatusFenced(input)
          )
      }
    )
  })).pipe(Layer.provide(Layer.fresh(stores)))

/** Each undo applied once, under its step's key + ":undo"; nothing else applied. */
const assertOnce = (book: TripBook, who: ReadonlyArray<string>) => {
  for (const w of who) {
    const key = `${book.stepKeys.get(w)}:undo`
    assert.strictEqual(book.applied.get(key), 1, `the undo of ${w} applied once under ${key}`)
  }
  assert.strictEqual(book.applied.size, who.length, "no other undo applied")
}

/** Lets the other fibers run for a bounded number of event-loop turns until `done` (no Clock involved: a thawed instance finishing its store calls). */
const turnsUntil = (done: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 2000 && !(yield* done); i++) {
      // A real event-loop turn (not a wait on time): the thawed instance's store calls (SQLite) answer in it.
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    }
  })

/** When leg 1's hand-off lands; and whether the parent has undos of its own and a finished child before (leg 0). */
const windows = [
  { name: "before the parent's final status write", late: false, ownUndos: true },
  { name: "after the parent ended", late: true, ownUndos: true },
  { name: "after the parent ended, a parent whose only undos were its children's, none handed over yet", late: true, ownUndos: false }
] as const

for (const backend of backends) {
  describe(`a child's undo hand-off racing its parent's unwinding on ${backend.name}`, () => {
    for (const window of windows) {
      it.effect(`the hand-off lands ${window.name}: the child's undo runs exactly once, the parent ends Cancelled with no key left`, () => {
        const hooks: Hooks = { parentId: "", onParentNotUnwinding: undefined, beforeParentEnds: undefined, beforeCopy: undefined }
        return Effect.gen(function*() {
          const book = makeTripBook({
            placement: "any",
            cFails: false,
            aUndo: window.ownUndos,
            legWorkOf: new Map([[0, window.ownUndos ? "1 second" : "60 seconds"], [1, "3 seconds"], [2, "60 seconds"]])
          })
          const before = window.ownUndos ? ["leg-0", "a"] : []
          const wf = tripWorkflow(book)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
          yield* h.run(0, (b) => b.execute(wf, { log: [] }))
          yield* h.advance("2 seconds")
          const all = yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none()))
          const paused = yield* RecordStore.use((r) => r.findByStatus("Paused", 50, Option.none()))
          const parent = paused.find((r) => r.parentExecutionId == null)
          assert.isDefined(parent, "the parent rests on its children")
          const leg1 = all.find((r) => r.parentExecutionId === parent!.executionId && r.executionId.endsWith(".1"))
          assert.isDefined(leg1, "leg 1 is at work")
          const lease = yield* LeaseStore.use((l) => l.get(leg1!.tenantId, leg1!.rootExecutionId))
          const childAt = h.instances.findIndex((i) => Option.isSome(lease) && lease.value.holder.startsWith(i.instanceId))
          assert.isAtLeast(childAt, 0, "leg 1 runs on an instance of the harness")
          const other = 1 - childAt
          const records = yield* RecordStore
          const leg1Decided = records.getRecord(leg1!.tenantId, leg1!.executionId).pipe(
            Effect.map((r) => Option.isNone(r) || r.value.status !== "Running" || book.tries.some((t) => t.who === "leg-1")),
            Effect.orDie
          )
          // Leg 1 finishes: it finds its parent live and not unwinding, then its instance stops before it writes.
          hooks.parentId = parent!.executionId
          hooks.onParentNotUnwinding = Effect.orDie(h.freeze(childAt)) // childAt: an instance of the harness
          if (!window.late) {
            // The parent has unwound (undone leg 0 and a) and is about to end: leg 1's instance goes on now.
            hooks.beforeParentEnds = Effect.andThen(Effect.orDie(h.thaw(childAt)), turnsUntil(leg1Decided))
          }
          yield* h.advance("2 seconds")
          assert.isUndefined(hooks.onParentNotUnwinding, "leg 1 looked at its parent")
          assert.strictEqual(h.instance(childAt).state, "frozen")
          assert.deepStrictEqual(yield* Fiber.join(yield* h.run(other, (b) => b.cancel(parent!.threadId))), { cancelled: true })
          assert.strictEqual((yield* recordOf(parent!.tenantId, parent!.executionId))?.status, "Cancelled")
          if (window.late) yield* h.thaw(childAt)
          yield* h.advance("2 seconds")
          yield* h.advance("60 seconds")
          assert.deepStrictEqual(undoneWho(book).slice(0, before.length), before)
          assert.deepStrictEqual(undoneWho(book).slice(before.length), ["leg-1"], "leg 1's undo ran (by itself: its parent had ended or refused it)")
          assertOnce(book, [...before, "leg-1"])
          assert.strictEqual((yield* recordOf(leg1!.tenantId, leg1!.executionId))?.status, "Cancelled", "leg 1 undid itself and ended Cancelled")
          const keys = yield* TreeStore.use((t) => t.list(parent!.tenantId, parent!.rootExecutionId, "@baton/"))
          assert.deepStrictEqual(keys, [], "nothing was left in the ended parent's tree")
        }).pipe(Effect.provide(hooked(backend.stores, hooks)))
      })
    }

    it.effect("a child that claimed its hand-off, then stopped and was cancelled: its undos run once, by the parent — not again by the child", () => {
      const hooks: Hooks = { parentId: "", onParentNotUnwinding: undefined, beforeParentEnds: undefined, beforeCopy: undefined }
      return Effect.gen(function*() {
        const book = makeTripBook({ placement: "any", cFails: false, legWorkOf: new Map([[1, "3 seconds"], [2, "60 seconds"]]) })
        const wf = tripWorkflow(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.advance("2 seconds")
        const parent = (yield* RecordStore.use((r) => r.findByStatus("Paused", 50, Option.none()))).find((r) => r.parentExecutionId == null)
        assert.isDefined(parent, "the parent rests on its children")
        const leg1 = (yield* RecordStore.use((r) => r.findByStatus("Running", 50, Option.none())))
          .find((r) => r.parentExecutionId === parent!.executionId && r.executionId.endsWith(".1"))
        assert.isDefined(leg1, "leg 1 is at work")
        const lease = yield* LeaseStore.use((l) => l.get(leg1!.tenantId, leg1!.rootExecutionId))
        const childAt = h.instances.findIndex((i) => Option.isSome(lease) && lease.value.holder.startsWith(i.instanceId))
        assert.isAtLeast(childAt, 0, "leg 1 runs on an instance of the harness")
        // Leg 1 finishes and claims its hand-off; its instance stops before it copies it into the parent's tree.
        hooks.parentId = parent!.executionId
        hooks.beforeCopy = Effect.orDie(h.freeze(childAt)) // childAt: an instance of the harness (asserted above)
        yield* h.advance("2 seconds")
        assert.isUndefined(hooks.beforeCopy, "leg 1 claimed its hand-off")
        // The parent is cancelled: it finds leg 1's claim and undoes it (with leg 0 and a); leg 1 is asked to stop.
        assert.deepStrictEqual(yield* Fiber.join(yield* h.run(1 - childAt, (b) => b.cancel(parent!.threadId))), { cancelled: true })
        assert.deepStrictEqual(undoneWho(book), ["leg-1", "leg-0", "a"])
        // Leg 1's lease expires; the other instance takes it, reads the cancel request and ends it.
        yield* h.advance("31 seconds")
        yield* h.thaw(childAt)
        yield* h.advance("60 seconds")
        assert.deepStrictEqual(undoneWho(book), ["leg-1", "leg-0", "a"], "leg 1's undos ran once, by its parent")
        assertOnce(book, ["leg-1", "leg-0", "a"])
        assert.strictEqual((yield* recordOf(parent!.tenantId, parent!.executionId))?.status, "Cancelled")
        const leg1End = (yield* recordOf(leg1!.tenantId, leg1!.executionId))?.status
        assert.isTrue(leg1End === "Cancelled" || leg1End === "Finished", `leg 1 ended (${leg1End})`)
        const keys = yield* TreeStore.use((t) => t.list(parent!.tenantId, parent!.rootExecutionId, "@baton/"))
        assert.deepStrictEqual(keys, [], "no copy landed in the ended parent's tree")
      }).pipe(Effect.provide(hooked(backend.stores, hooks)))
    })
  })
}
