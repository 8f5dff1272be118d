/**
 * Provider slot waiters of one instance take tenants in turn: a tenant's
 * burst of waiting calls does not keep another tenant's call waiting behind
 * all of it, and each tenant's calls still start in the order they came. On
 * the harness (TestClock), memory stores.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer } from "effect"
import { MemoryLimiters } from "../../../layers/memory/index.ts"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { memoryStores } from "../fixtures.ts"

const stores = Layer.merge(memoryStores, MemoryLimiters.layer())

/** Starts, on instance 0, one 10-second call per tenant named, in that order; answers the order the calls started in. */
const startOrder = (tenants: ReadonlyArray<string | undefined>) =>
  Effect.gen(function*() {
    const h = yield* Harness.make({ instances: 1, baton: { workflows: [] } })
    const provider = yield* Provider.make({ key: "llm-fair", slots: { max: 1, timeout: "1 hour" } })
    const started: Array<string> = []
    const fibers = []
    for (const [n, tenantId] of tenants.entries()) {
      const call = Effect.gen(function*() {
        started.push(`${tenantId ?? "-"}${n}@${(yield* Clock.currentTimeMillis) / 1000}`)
        yield* Effect.sleep(Duration.seconds(10))
      })
      const guarded = Provider.guard(provider, { holder: h.instance(0).instanceId, tenantId })(call)
      fibers.push(yield* h.run(0, () => Effect.provide(guarded, h.instance(0).instance.services)))
      yield* h.settle
    }
    for (let k = 0; k < tenants.length; k++) yield* h.advance("10 seconds")
    for (const f of fibers) yield* Fiber.join(f)
    return started
  }).pipe(Effect.provide(stores))

describe("provider slot waiters are fair between tenants on one instance", () => {
  it.effect("one late call of tenant b starts right after the head of tenant a's burst, not after all of it", () =>
    Effect.gen(function*() {
      const order = yield* startOrder(["a", "a", "a", "a", "a", "b"])
      assert.deepStrictEqual(order, ["a0@0", "a1@10", "b5@20", "a2@30", "a3@40", "a4@50"])
    }))

  it.effect("two bursts take turns, each tenant's calls in the order they came", () =>
    Effect.gen(function*() {
      const order = yield* startOrder(["a", "a", "a", "a", "b", "b", "b"])
      assert.deepStrictEqual(order.map((s) => s.split("@")[0]), ["a0", "a1", "b4", "a2", "b5", "a3", "b6"])
    }))

  it.effect("calls naming no tenant keep plain arrival order", () =>
    Effect.gen(function*() {
      const order = yield* startOrder([undefined, undefined, undefined, undefined])
      assert.deepStrictEqual(order, ["-0@0", "-1@10", "-2@20", "-3@30"])
    }))
})
