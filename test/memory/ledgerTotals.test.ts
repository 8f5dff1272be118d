/**
 * `LedgerStore.totals` of a backend that leaves it out: `make` reads the days
 * one `get` each, with the same answers and the same argument checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import * as LedgerStore from "../../src/stores/LedgerStore.ts"

describe("LedgerStore.totals without a backend's own", () => {
  it.effect("answers each day's total from get, in the order asked; bad days are refused", () =>
    Effect.gen(function*() {
      const full = yield* LedgerStore.LedgerStore
      let gets = 0
      const { totals: _, ...backend } = full
      const bare = LedgerStore.make({ ...backend, get: (key) => Effect.suspend(() => (gets++, full.get(key))) })
      const key = { tenantId: "t", scope: "execution", scopeId: "e" } as const
      yield* full.add({ ...key, day: "2026-03-02" }, 7)
      assert.deepStrictEqual(yield* bare.totals(key, ["2026-03-02", "2026-03-01", "0000-01-01"]), [7, 0, 0])
      assert.strictEqual(gets, 3, "one get per day")
      assert.deepStrictEqual(yield* bare.totals(key, []), [])
      const refused = yield* Effect.exit(bare.totals(key, ["2026-03-01", "tomorrow"]))
      assert.isTrue(Exit.isFailure(refused))
      assert.strictEqual(gets, 3, "nothing read for a bad day")
    }).pipe(Effect.provide(MemoryStores.layer)))
})
