/**
 * `getManyChunked`: more roots than one `getMany` call takes (the recovery
 * sweep's pages above `maxGetMany`, the orphaned-children look) are read in
 * several calls, and every held lease comes back once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import { getManyChunked, LeaseStore, maxGetMany } from "../../src/stores/LeaseStore.ts"

describe("LeaseStore.getManyChunked", () => {
  it.effect("reads more than maxGetMany roots in chunks: each held lease once, free roots absent", () =>
    Effect.gen(function*() {
      const leases = yield* LeaseStore
      const roots = Array.from({ length: maxGetMany * 2 + 7 }, (_, i) => ({ tenantId: "t", rootExecutionId: `root-${i}` }))
      const held = roots.filter((_, i) => i % 3 !== 0)
      for (const r of held) yield* leases.acquire(r.tenantId, r.rootExecutionId, "holder", 30_000, 0)
      let calls = 0
      const counted = { ...leases, getMany: (keys: Parameters<typeof leases.getMany>[0]) => Effect.suspend(() => (calls++, leases.getMany(keys))) }
      const found = yield* getManyChunked(counted, roots)
      assert.strictEqual(calls, 3, "three calls of at most maxGetMany roots")
      assert.sameMembers(found.map((l) => l.rootExecutionId), held.map((r) => r.rootExecutionId))
      assert.deepStrictEqual(yield* getManyChunked(counted, []), [], "no roots: nothing read")
    }).pipe(Effect.provide(MemoryStores.layer)))
})
