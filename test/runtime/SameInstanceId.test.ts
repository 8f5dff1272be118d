/**
 * Two processes given one `instanceId` by mistake (a copied BATON_INSTANCE_ID)
 * must still never share a tree's lease: a lease store extends a live lease
 * for its holder, so two holders with equal ids would both pass the fence.
 * Every pass's holder id carries a per-instance part as well as the id and a
 * counter; readers still see the instance id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, Option } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"

const slow = Workflow.make({
  name: "slow",
  version: "1",
  graph: new StateGraph(Annotation.Root({ n: Annotation<number>() }))
    // The step holds its tree's lease while it sleeps on the test's TestClock (it.effect), which never advances here.
    .addNode("work", Workflow.effectStep((s: { n: number }) => Effect.as(Effect.sleep("60 seconds"), { n: s.n + 1 }))) // TestClock
    .addEdge(START, "work")
    .addEdge("work", END)
})

describe("two instances with one instanceId", () => {
  it.effect("hold their trees under different holder ids; a lease one holds is refused to the other's holder", () =>
    Effect.gen(function*() {
      const stores = yield* Layer.build(MemoryStores.layer)
      const instance = () =>
        Layer.build(Baton.layer({ workflows: [slow], instanceId: "same" })).pipe(Effect.provide(stores), Effect.map(Context.get(Baton.Baton)))
      const a = yield* instance()
      const b = yield* instance()
      const ta = yield* a.start(slow, { n: 0 })
      const tb = yield* b.start(slow, { n: 0 })
      const leases = Context.get(stores, LeaseStore)
      const la = Option.getOrThrow(yield* leases.get(ta.tenantId, ta.executionId))
      const lb = Option.getOrThrow(yield* leases.get(tb.tenantId, tb.executionId))
      assert.notStrictEqual(la.holder, lb.holder, "each instance's holders are its own")
      // b's holder asking for a's live lease is another holder: refused (equal ids would have extended it).
      assert.isTrue(Option.isNone(yield* leases.acquire(ta.tenantId, ta.executionId, lb.holder, 30_000, la.expiresAt - 1)))
      // Readers still see the instance.
      assert.strictEqual((yield* a.status(ta.executionId)).holder?.instanceId, "same")
      assert.strictEqual((yield* b.status(tb.executionId)).holder?.instanceId, "same")
    }).pipe(Effect.scoped))

  it.effect("the longest instanceId accepted runs an execution (its holder ids fit the stores); a longer one is refused at build", () =>
    Effect.gen(function*() {
      const stores = yield* Layer.build(MemoryStores.layer)
      const build = (instanceId: string) => Layer.build(Baton.layer({ workflows: [slow], instanceId })).pipe(Effect.provide(stores))
      const refused = yield* Effect.flip(build("x".repeat(200)))
      assert.strictEqual(refused._tag, "BatonConfigError")
      const baton = Context.get(yield* build("x".repeat(160)), Baton.Baton)
      const handle = yield* baton.start(slow, { n: 0 })
      assert.strictEqual((yield* baton.status(handle.executionId)).holder?.instanceId, "x".repeat(160))
    }).pipe(Effect.scoped))
})
