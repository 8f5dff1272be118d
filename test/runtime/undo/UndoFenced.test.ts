/**
 * Undo markers are fenced in the store's write, like checkpoint writes: a
 * holder whose marker write was under way when it froze (past its local
 * fence check) and that lost its lease meanwhile is refused by the store.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Layer, Option } from "effect"
import { TreeStore, type TreeStoreShape } from "../../../src/stores/TreeStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, recordOf, theRunningRoot } from "../fixtures.ts"
import { booking, makeBook, undoneNodes } from "./undoFixtures.ts"

/** What the test does when the first `@baton/compensated/…` write reaches the store, before it is made; and how it ended. */
interface Hook {
  onFirstMarker: Effect.Effect<void> | undefined
  exit: Exit.Exit<boolean, unknown> | undefined
}

/** The backend's stores, with the hook in the tree store's marker writes (fenced or not). */
const hooked = <E>(stores: Layer.Layer<Harness.HarnessStores, E>, hook: Hook) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Harness.HarnessStores>()
    const tree: TreeStoreShape = Context.get(context, TreeStore)
    const around = <A extends boolean, X>(name: string, write: Effect.Effect<A, X>): Effect.Effect<A, X> => {
      const first = hook.onFirstMarker
      if (!name.startsWith("compensated/") || first === undefined) return write
      hook.onFirstMarker = undefined
      return Effect.andThen(first, Effect.onExit(write, (exit) => Effect.sync(() => void (hook.exit = exit))))
    }
    const wrapped: Record<string, unknown> = {
      ...tree,
      saveReservedIfAbsent: (tenantId: string, root: string, name: string, value: unknown) =>
        around(name, tree.saveReservedIfAbsent(tenantId, root, name, value)),
      saveReservedFenced: (...args: Parameters<TreeStoreShape["saveReservedFenced"]>) => around(args[2], tree.saveReservedFenced(...args))
    }
    return Context.add(context, TreeStore, wrapped as unknown as TreeStoreShape)
  })).pipe(Layer.provide(Layer.fresh(stores)))

for (const backend of backends) {
  describe(`undo markers fenced in the store on ${backend.name}`, () => {
    it.effect("a holder frozen with its marker write under way, thawed after a takeover: the store refuses the write (LeaseLostError), nothing is left in the ended tree", () => {
      const hook: Hook = { onFirstMarker: undefined, exit: undefined }
      return Effect.gen(function*() {
        const book = makeBook({ s4: "fail", undoSleep: "5 seconds" })
        const wf = booking(book)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const release = yield* Deferred.make<void>()
        // The undo of s3 is done; its marker write passed the local fence and is on its way: the process stops.
        hook.onFirstMarker = Effect.andThen(Effect.orDie(h.freeze(0)), Deferred.await(release)) // 0: an instance of the harness
        yield* h.run(0, (b) => b.execute(wf, { log: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        yield* h.advance("5 seconds")
        assert.isUndefined(hook.onFirstMarker, "the marker write of s3's undo began")
        assert.deepStrictEqual(undoneNodes(book), ["s3"])
        // Its lease expires; instance 1 takes the tree, runs s3's undo again (same key: it was not marked), then s2, s1.
        yield* h.advance("31 seconds")
        yield* h.advance("15 seconds")
        assert.deepStrictEqual(undoneNodes(book).slice(1), ["s3", "s2", "s1"])
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
        // Thawed: the write it had under way reaches the store now, under its lost lease.
        yield* h.thaw(0)
        yield* Deferred.succeed(release, undefined)
        yield* h.advance("20 seconds")
        assert.isDefined(hook.exit, "the stale marker write ended")
        assert.isTrue(Exit.isFailure(hook.exit!), "the store refused it")
        const error = Exit.isFailure(hook.exit!) ? Option.getOrUndefined(Exit.findErrorOption(hook.exit!)) : undefined
        assert.strictEqual((error as { _tag?: string } | undefined)?._tag, "LeaseLostError")
        const keys = yield* TreeStore.use((t) => t.list(root.tenantId, root.rootExecutionId, "@baton/"))
        assert.deepStrictEqual(keys, [], "no marker landed in the ended tree")
        assert.strictEqual((yield* recordOf(root.tenantId, root.executionId))?.status, "Failed")
      }).pipe(Effect.provide(hooked(backend.stores, hook)))
    })
  })
}
