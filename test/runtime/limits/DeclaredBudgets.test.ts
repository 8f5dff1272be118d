/**
 * Budgets declared on a workflow and on the application, rolled up to the
 * tree's root: a child's spend — on whichever instance claims it — is
 * charged to its root's counter and checked against its root's limit,
 * exactly at the limit; the application's budgets reach every step; a bad
 * declaration fails the Layer's build naming it. Harness (TestClock, two
 * instances), memory and SQLite stores.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, Layer } from "effect"
import * as Budget from "../../../src/runtime/limits/Budget.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const advanceUntil = (h: Harness.Harness, step: Duration.Input, max: number, done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !done(); i++) yield* h.advance(step)
  })

interface Seen {
  readonly executionId: string
  readonly instanceId: string
  readonly budgets: ReadonlyArray<Budget.Budget>
}

const ChildState = Annotation.Root({ cost: Annotation<number>() })

/** A child that spends its `cost` against the budgets its steps are given. */
const spender = (seen: Array<Seen>) =>
  Workflow.make({
    name: "spender",
    version: "1",
    budgets: [{ scope: "tree", limit: 1 }], // counts only when it runs as a root
    graph: new StateGraph(ChildState)
      .addNode("spend", Workflow.effectStep((s: { cost: number }, ctx) =>
        Effect.gen(function*() {
          seen.push({ executionId: ctx.executionId, instanceId: ctx.instanceId, budgets: ctx.budgets })
          yield* Budget.spend(ctx.budgets, s.cost)
          return {}
        })))
      .addEdge(START, "spend")
      .addEdge("spend", END)
  })

const ParentState = Annotation.Root({ costs: Annotation<Array<number>>(), last: Annotation<number>(), outcome: Annotation<string>() })

/** Launches one spender per cost on any instance, then spends `last` itself. */
const parentOf = (child: ReturnType<typeof spender>, seen: Array<Seen>) =>
  Workflow.make({
    name: "budgeted-parent",
    version: "1",
    children: [child],
    budgets: [{ scope: "tree", limit: 10 }],
    graph: new StateGraph(ParentState)
      .addNode("fan", Workflow.effectStep((s: { costs: Array<number> }, ctx) =>
        Workflow.launchChildren(ctx, child, s.costs.map((cost) => ({ cost })), { placement: "any" }).pipe(Effect.as({}))))
      .addNode("settle", Workflow.effectStep((s: { last: number }, ctx) =>
        Effect.gen(function*() {
          seen.push({ executionId: ctx.executionId, instanceId: ctx.instanceId, budgets: ctx.budgets })
          return yield* Budget.spend(ctx.budgets, s.last).pipe(
            Effect.as({ outcome: "spent" }),
            Effect.catchTag("BudgetExceededError", (e) => Effect.succeed({ outcome: `refused: ${e.total} of ${e.limit} spent` }))
          )
        })))
      .addEdge(START, "fan")
      .addEdge("fan", "settle")
      .addEdge("settle", END)
  })

const outputOf = (answer: unknown) => {
  const out = answer as { _tag: string; output?: { outcome?: string } }
  assert.strictEqual(out._tag, "Finished")
  return out.output
}

/** Runs `effect` on instance `i` with its services. */
const on = <A, E>(h: Harness.Harness, i: number, effect: Effect.Effect<A, E, any>) =>
  h.run(i, () => Effect.provide(effect, h.instance(i).instance.services) as Effect.Effect<A, E>).pipe(Effect.flatMap(Fiber.join))

for (const backend of backends) {
  describe(`declared budgets on ${backend.name}`, () => {
    it.effect("children's spend on any instance reaches the root's counter: exactly at the limit passes, one more is refused", () =>
      Effect.gen(function*() {
        const seen: Array<Seen> = []
        const child = spender(seen)
        const parent = parentOf(child, seen)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const run = yield* h.run(0, (b) => b.execute(parent, { costs: [4, 6], last: 1 }))
        yield* advanceUntil(h, "1 second", 60, () => run.pollUnsafe() !== undefined)
        assert.strictEqual(outputOf(yield* Fiber.join(run))?.outcome, "refused: 10 of 10 spent")
        const children = seen.filter((s) => s.budgets.length > 0 && seen.indexOf(s) < 2)
        assert.strictEqual(children.length, 2, "both children ran")
        const root = seen[2]!
        const expected: Budget.Budget = { tenantId: "default", scope: "execution", scopeId: root.executionId, limit: 10, window: "lifetime" }
        for (const c of children) {
          assert.notStrictEqual(c.executionId, root.executionId)
          assert.deepStrictEqual(c.budgets, [expected], "a child is given its root's tree budget, not its own workflow's")
        }
        assert.deepStrictEqual(root.budgets, [expected])
        const spent = yield* on(h, 1, Budget.spent(expected))
        assert.strictEqual(spent, 10, "4 + 6 from the children, on the root's counter; the refused 1 not charged")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a child over its root's limit fails, whichever instance runs it; the tree's total stays at the limit", () =>
      Effect.gen(function*() {
        const seen: Array<Seen> = []
        const child = spender(seen)
        const parent = parentOf(child, seen)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const run = yield* h.run(1, (b) => b.execute(parent, { costs: [7, 5], last: 0 }))
        yield* advanceUntil(h, "1 second", 60, () => run.pollUnsafe() !== undefined)
        const exit = yield* Effect.exit(Fiber.join(run))
        // one child fits (7 or 5), the other would pass 10: the launch fails, naming the budget
        assert.isTrue(Exit.isFailure(exit))
        const failure = Exit.isFailure(exit) ? Exit.findErrorOption(exit) : undefined
        const error = failure !== undefined && failure._tag === "Some" ? (failure.value as { _tag: string; message: string }) : undefined
        assert.strictEqual(error?._tag, "ExecutionFailedError")
        assert.include(error?.message ?? "", "budget of exec_", "the child failed on its root's budget")
        assert.include(error?.message ?? "", "is 10;")
        const rootId = seen[0]!.budgets[0]!.scopeId
        const spent = yield* on(h, 0, Budget.spent({ tenantId: "default", scope: "execution", scopeId: rootId, window: "lifetime" }))
        assert.isTrue(spent === 7 || spent === 5, `only the child that fits was charged (${spent})`)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("the application's budgets reach every step, before the root workflow's", () =>
      Effect.gen(function*() {
        const seen: Array<Seen> = []
        const child = spender(seen)
        const h = yield* Harness.make({
          instances: 1,
          baton: { workflows: [child], budgets: [{ scope: "tenant", limit: 100 }, { scope: "tree", limit: 50, window: "day" }] }
        })
        const run = yield* h.run(0, (b) => b.execute(child, { cost: 1 }, { tenantId: "acme" }))
        yield* advanceUntil(h, "1 second", 10, () => run.pollUnsafe() !== undefined)
        assert.strictEqual(((yield* Fiber.join(run)) as { _tag: string })._tag, "Finished")
        const id = seen[0]!.executionId
        assert.deepStrictEqual(seen[0]!.budgets, [
          { tenantId: "acme", scope: "tenant", scopeId: "acme", limit: 100, window: "day" },
          { tenantId: "acme", scope: "execution", scopeId: id, limit: 50, window: "day" },
          { tenantId: "acme", scope: "execution", scopeId: id, limit: 1, window: "lifetime" }
        ])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("declared budgets: bad declarations", () => {
  it.effect("fail the Layer's build naming the workflow or the option", () =>
    Effect.gen(function*() {
      const seen: Array<Seen> = []
      const bad = Workflow.make({ ...spenderOptions(seen), budgets: [{ scope: "tree", limit: -1 }] })
      const e1 = yield* Effect.flip(Effect.scoped(Harness.make({ instances: 1, baton: { workflows: [bad] } })))
      assert.include(String((e1 as { message?: string }).message), `workflow "spender": budgets[0].limit`)
      const e2 = yield* Effect.flip(Effect.scoped(Harness.make({
        instances: 1,
        baton: { workflows: [spender(seen)], budgets: [{ scope: "galaxy" as "tree", limit: 1 }] }
      })))
      assert.include(String((e2 as { message?: string }).message), "budgets[0].scope")
    }).pipe(Effect.provide(Layer.fresh(backends[0].stores))))
})

const spenderOptions = (seen: Array<Seen>) => {
  const w = spender(seen)
  return { name: w.name, version: w.version, graph: w.graph }
}
