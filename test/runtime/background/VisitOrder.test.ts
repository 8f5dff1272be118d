/**
 * `VisitOrder.ofInstance`: the order in which an instance visits a sweep
 * page's roots — every root once, the same order on every call of one
 * instance, and unrelated orders for two instances (their first picks of a
 * page rarely meet).
 */
import { assert, describe, it } from "@effect/vitest"
import * as VisitOrder from "../../../src/runtime/internal/background/VisitOrder.ts"

const page = Array.from({ length: 100 }, (_, i) => ({ tenantId: `tenant-${i % 10}`, rootExecutionId: `run-${String(i).padStart(7, "0")}` }))
const key = (r: { readonly tenantId: string; readonly rootExecutionId: string }) => `${r.tenantId}/${r.rootExecutionId}`

describe("VisitOrder.ofInstance", () => {
  it("a permutation of the page, the same for one instance on every call", () => {
    const order = VisitOrder.ofInstance("bench-0", page)
    assert.sameMembers(order.map(key), page.map(key))
    assert.deepStrictEqual(VisitOrder.ofInstance("bench-0", [...page].reverse()).map(key), order.map(key), "whatever order the page came in")
    assert.notDeepEqual(order.map(key), page.map(key), "not the key order")
  })

  it("three instances' first 32 picks of a page of 100 overlap about as little as random picks (≈ 10 a pair), far from all 32", () => {
    const firsts = ["bench-0", "bench-1", "bench-2"].map((id) => new Set(VisitOrder.ofInstance(id, page).slice(0, 32).map(key)))
    for (const [a, b] of [[0, 1], [0, 2], [1, 2]] as const) {
      const shared = [...firsts[a]!].filter((k) => firsts[b]!.has(k)).length
      assert.isAtMost(shared, 20, `instances ${a} and ${b} share ${shared} of their first 32`)
    }
  })
})
