import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Harness from "../../../src/testing/Harness.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { backends, statusOf, theRunningRoot } from "../fixtures.ts"

const State = Annotation.Root({
  /** A token of another execution to try to re-identify. */
  foreign: Annotation<string | null>({ reducer: (_a, b) => b, default: () => null }),
  tokens: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

interface Seen {
  readonly node: string
  readonly instanceId: string
  readonly executionId: string
  readonly token: string
  readonly back?: string
  readonly foreign?: string
}

const personal = "alice@example.com"

/** first pseudonymizes → slow (45 s) → last pseudonymizes again, re-identifies, and tries a foreign token. */
const pseudonymous = (seen: Array<Seen>) =>
  Workflow.make({
    name: "pseudonymous",
    version: "1",
    graph: new StateGraph(State)
      .addNode("first", Workflow.step(async (_s, ctx) => {
        const token = await ctx.pseudonymize(personal)
        seen.push({ node: "first", instanceId: ctx.instanceId, executionId: ctx.executionId, token })
        return { tokens: [token] }
      }))
      .addNode("slow", Workflow.effectStep(() => Effect.as(Effect.sleep("45 seconds"), {})))
      .addNode("last", Workflow.step(async (s: typeof State.State, ctx) => {
        const token = await ctx.pseudonymize(personal)
        const back = await ctx.reidentify(s.tokens[0]!)
        const foreign = s.foreign === null ? undefined : await ctx.reidentify(s.foreign).then(
          (v) => `decoded:${v}`,
          (e: { readonly _tag?: string }) => `refused:${e._tag}`
        )
        seen.push({ node: "last", instanceId: ctx.instanceId, executionId: ctx.executionId, token, back, ...(foreign === undefined ? {} : { foreign }) })
        return { tokens: [token] }
      }))
      .addEdge(START, "first")
      .addEdge("first", "slow")
      .addEdge("slow", "last")
      .addEdge("last", END)
  })

for (const backend of backends) {
  describe(`pseudonyms on ${backend.name}`, () => {
    it.effect("a takeover instance makes the same tokens and re-identifies them; another execution's tokens do not decode", () =>
      Effect.gen(function*() {
        const seen: Array<Seen> = []
        const wf = pseudonymous(seen)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        yield* h.run(0, (b) => b.execute(wf, { foreign: null, tokens: [] }))
        yield* h.settle
        const root = yield* theRunningRoot
        yield* h.kill(0)
        yield* h.advance("31 seconds")
        yield* h.advance("45 seconds")
        assert.strictEqual(yield* statusOf(root.tenantId, root.executionId), "Finished")
        const [first, last] = seen
        assert.strictEqual(first?.instanceId, "instance-0")
        assert.strictEqual(last?.instanceId, "instance-1", "continued by the other instance")
        assert.strictEqual(last?.token, first?.token, "the same token on the instance that took over")
        assert.notInclude(first!.token, personal)
        assert.strictEqual(last?.back, personal)

        const other = yield* h.run(1, (b) => b.execute(wf, { foreign: first!.token, tokens: [] }))
        yield* h.settle
        yield* h.advance("45 seconds")
        assert.strictEqual((yield* Fiber.join(other))._tag, "Finished")
        const [, , otherFirst, otherLast] = seen
        assert.notStrictEqual(otherFirst?.token, first!.token, "another execution makes other tokens for the same value")
        assert.strictEqual(otherLast?.back, personal)
        assert.strictEqual(otherLast?.foreign, "refused:PseudonymError", "a token of another execution does not decode")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
