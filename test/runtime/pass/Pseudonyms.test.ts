import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer, Redacted } from "effect"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
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

/** An application pseudonym key: 32 bytes, base64. */
const applicationKey = Buffer.alloc(32, 7).toString("base64")

for (const backend of backends) {
  describe(`an application pseudonym key on ${backend.name}`, () => {
    it.effect("every execution of a tenant, on any instance, makes one token per value and reads the others' tokens; another tenant's do not read", () =>
      Effect.gen(function*() {
        const seen: Array<Seen> = []
        const wf = pseudonymous(seen)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf], pseudonymKey: applicationKey } })
        const first = yield* h.run(0, (b) => b.execute(wf, { foreign: null, tokens: [] }))
        yield* h.settle
        yield* h.advance("45 seconds")
        assert.strictEqual((yield* Fiber.join(first))._tag, "Finished")
        const token = seen[0]!.token
        assert.notInclude(token, personal)

        const second = yield* h.run(1, (b) => b.execute(wf, { foreign: token, tokens: [] }))
        yield* h.settle
        yield* h.advance("45 seconds")
        assert.strictEqual((yield* Fiber.join(second))._tag, "Finished")
        const [, , secondFirst, secondLast] = seen
        assert.strictEqual(secondFirst?.instanceId, "instance-1")
        assert.strictEqual(secondFirst?.token, token, "another execution on another instance makes the same token")
        assert.strictEqual(secondLast?.foreign, `decoded:${personal}`, "a token of another execution of the tenant reads")

        const otherTenant = yield* h.run(1, (b) => b.execute(wf, { foreign: token, tokens: [] }, { tenantId: "other-tenant" }))
        yield* h.settle
        yield* h.advance("45 seconds")
        assert.strictEqual((yield* Fiber.join(otherTenant))._tag, "Finished")
        const [, , , , otherFirst, otherLast] = seen
        assert.notStrictEqual(otherFirst?.token, token, "another tenant makes another token for the value")
        assert.strictEqual(otherLast?.foreign, "refused:PseudonymError", "a token of another tenant does not read")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("the pseudonymKey option", () => {
  it.effect("a key that is not base64 of at least 32 bytes fails at build naming pseudonymKey, without showing the key; BATON_PSEUDONYM_KEY is read as a secret", () =>
    Effect.gen(function*() {
      const short = Buffer.alloc(16, 1).toString("base64")
      const e = yield* Effect.flip(BatonConfig.make({ pseudonymKey: short }))
      assert.strictEqual(e.field, "pseudonymKey")
      assert.include(e.reason, "16 bytes")
      assert.notInclude(e.message, short)
      const notBase64 = yield* Effect.flip(BatonConfig.make({ pseudonymKey: "not a key!" }))
      assert.strictEqual(notBase64.field, "pseudonymKey")
      const config = yield* Effect.service(BatonConfig.BatonConfig).pipe(
        Effect.provide(BatonConfig.layerConfig()),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ BATON_PSEUDONYM_KEY: applicationKey })))
      )
      assert.isTrue(Redacted.isRedacted(config.pseudonymKey))
      assert.strictEqual(Redacted.value(config.pseudonymKey!), applicationKey)
      assert.notInclude(String(config.pseudonymKey), applicationKey)
    }))
})

const ChildPn = Annotation.Root({ parentToken: Annotation<string>(), token: Annotation<string>(), back: Annotation<string>() })
const ParentPn = Annotation.Root({ token: Annotation<string>(), childTokens: Annotation<Array<string>>(), childBacks: Annotation<Array<string>>() })

/** A child that pseudonymizes the value and re-identifies its parent's token. */
const pseudonymousChild = Workflow.make({
  name: "pseudonymous-child",
  version: "1",
  graph: new StateGraph(ChildPn)
    .addNode("tokens", Workflow.step(async (s: { parentToken: string }, ctx) => ({
      token: await ctx.pseudonymize(personal),
      back: await ctx.reidentify(s.parentToken)
    })))
    .addEdge(START, "tokens")
    .addEdge("tokens", END)
})

const pseudonymousParent = (placement: "parent" | "any") =>
  Workflow.make({
    name: `pseudonymous-parent-${placement}`,
    version: "1",
    children: [pseudonymousChild],
    graph: new StateGraph(ParentPn)
      .addNode("mine", Workflow.step(async (_s, ctx) => ({ token: await ctx.pseudonymize(personal) })))
      .addNode("fan", Workflow.step(async (s: { token: string }, ctx) => {
        const outs = await ctx.launch(pseudonymousChild, [{ parentToken: s.token }], { placement })
        return { childTokens: outs.map((o) => o.token), childBacks: outs.map((o) => o.back) }
      }))
      .addEdge(START, "mine")
      .addEdge("mine", "fan")
      .addEdge("fan", END)
  })

for (const backend of backends) {
  for (const placement of ["parent", "any"] as const) {
    describe(`pseudonyms of children on ${backend.name}, placement ${placement}`, () => {
      it.effect("a child uses its root's key: the same token for the same value, and the root's tokens read in it", () =>
        Effect.gen(function*() {
          const parent = pseudonymousParent(placement)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
          const run = yield* h.run(0, (b) => b.execute(parent, {}))
          for (let i = 0; i < 30 && run.pollUnsafe() === undefined; i++) yield* h.advance("1 second")
          const out = yield* Fiber.join(run)
          assert.strictEqual(out._tag, "Finished")
          const output = (out as { output: { token: string; childTokens: Array<string>; childBacks: Array<string> } }).output
          assert.deepStrictEqual(output.childTokens, [output.token], "the child made its root's token")
          assert.deepStrictEqual(output.childBacks, [personal], "the child read its root's token")
        }).pipe(Effect.provide(Layer.fresh(backend.stores))))
    })
  }
}
