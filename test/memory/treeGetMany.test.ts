/**
 * `TreeStore.getMany` of a backend that leaves it out (like the Redis
 * example's): `make` reads the keys one `get` each, with the same answers
 * and the same argument checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import * as TreeStore from "../../src/stores/TreeStore.ts"

describe("TreeStore.getMany without a backend's own", () => {
  it.effect("answers the existing keys' entries from get, in key order; bad keys are refused", () =>
    Effect.gen(function*() {
      const full = yield* TreeStore.TreeStore
      let gets = 0
      const { findRootsWith: ____, getMany: _, saveReservedIfAbsent: __, saveReservedFenced: ___, ...backend } = full
      const bare = TreeStore.make({
        ...backend,
        // A backend's saveIfAbsent has no reserved-key rule (make adds it).
        saveIfAbsent: (t, r, k, v) => Effect.catchTag(full.saveIfAbsent(t, r, k, v), "ReservedKeyError", Effect.die),
        // Fenced writes are not what this test reads.
        saveIfAbsentFenced: () => Effect.die(new Error("saveIfAbsentFenced is not used here")),
        findRootsWithKey: () => Effect.die(new Error("findRootsWithKey is not used here")),
        get: (t, r, k) => Effect.suspend(() => (gets++, full.get(t, r, k)))
      })
      yield* full.saveIfAbsent("t", "r", "b", 2)
      yield* full.saveReservedIfAbsent("t", "r", "x", { on: true })
      assert.deepStrictEqual(yield* bare.getMany("t", "r", ["b", "missing", "@baton/x"]), [
        { key: "@baton/x", value: { on: true } },
        { key: "b", value: 2 }
      ])
      assert.strictEqual(gets, 3, "one get per key")
      assert.isTrue(Exit.isFailure(yield* Effect.exit(bare.getMany("t", "r", ["b", ""]))))
      assert.strictEqual(gets, 3, "nothing read for a bad key")
    }).pipe(Effect.provide(MemoryStores.layer)))
})
