/**
 * A tenant permit claim whose answer was lost — the store took the slot,
 * then the connection broke before the caller heard — is retried and gets
 * that same permit, not a second one: with a quota of 1, the pass goes on at
 * once instead of waiting for the lost permit's lease to run out, and no
 * permit is left held once the tree rests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Clock, Context, Effect, Fiber, Layer, Option } from "effect"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { permitKey } from "../../../src/runtime/limits/TenantQuota.ts"
import { StoreError } from "../../../src/stores/Errors.ts"
import { RateLimitStore } from "../../../src/stores/RateLimitStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({ done: Annotation<boolean>() })
const quick = Workflow.make({
  name: "quick",
  version: "1",
  graph: new StateGraph(State).addNode("work", Workflow.step(async () => ({ done: true }))).addEdge(START, "work").addEdge("work", END)
})

/** The stores, with the first permit acquire answered by a broken connection after the store took the slot. */
const losingFirstAnswer = <E, R>(stores: Layer.Layer<Harness.HarnessStores, E, R>, lost: { count: number }) =>
  Layer.effectContext(Effect.gen(function*() {
    const ctx = yield* Layer.build(stores)
    const inner = Context.get(ctx as unknown as Context.Context<RateLimitStore>, RateLimitStore)
    const wrapped: RateLimitStore["Service"] = {
      ...inner,
      acquireSlot: (key, max, holder, ttl, now) =>
        Effect.flatMap(inner.acquireSlot(key, max, holder, ttl, now), (got) =>
          key.startsWith("tenant-quota/") && lost.count++ === 0
            ? Effect.fail(new StoreError({ store: "RateLimitStore", operation: "acquireSlot", kind: "Connection", reason: "the connection broke before the answer" }))
            : Effect.succeed(got))
    }
    return Context.add(ctx as unknown as Context.Context<RateLimitStore>, RateLimitStore, wrapped) as unknown as Context.Context<Harness.HarnessStores | RateLimitStore>
  }))

for (const backend of backends) {
  describe(`a permit claim after a lost answer on ${backend.name}`, () => {
    it.effect("gets the same permit: with tenantQuota 1 the execution finishes at once and leaves no permit held", () => {
      const lost = { count: 0 }
      return Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [quick], tenantQuota: 1 } })
        const run = yield* h.run(0, (b) => b.execute(quick, {}))
        for (let i = 0; i < 3 && run.pollUnsafe() === undefined; i++) yield* h.advance("1 second")
        const out = yield* Fiber.join(run)
        assert.strictEqual(out._tag, "Finished")
        assert.isAtLeast(lost.count, 1, "the first permit answer was lost")
        const store = yield* RateLimitStore
        const free = yield* store.acquireSlot(permitKey("default"), 1, "someone-else", 30_000, yield* Clock.currentTimeMillis)
        assert.isTrue(Option.isSome(free), "the permit is free again: none leaked")
      }).pipe(Effect.provide(losingFirstAnswer(Layer.fresh(backend.stores), lost)))
    })
  })
}
