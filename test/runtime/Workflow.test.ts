/**
 * Typed workflows: payload schemas decoded at the boundary, and the services
 * of Effect steps carried in the workflow's type (checked by the compiler:
 * this file is typechecked with the rest, so every `@ts-expect-error` below
 * must stay an error).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { expectInvalid } from "../../src/testing/conformance/Suite.ts"

class Payments extends Context.Service<Payments, { readonly pay: (amount: number) => Effect.Effect<void> }>()("test/Payments") {}
class Mailer extends Context.Service<Mailer, { readonly send: (to: string) => Effect.Effect<void> }>()("test/Mailer") {}

const State = Annotation.Root({
  amount: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const pay = Workflow.effectStep((s: typeof State.State) =>
  Payments.use((p) => p.pay(s.amount)).pipe(Effect.as({ log: ["paid"] })))
const mail = Workflow.effectStep((_s: typeof State.State) =>
  Mailer.use((m) => m.send("boss")).pipe(Effect.as({ log: ["mailed"] })))
const note = Workflow.step(async (_s: typeof State.State) => ({ log: ["noted"] }))

const graph = () =>
  new StateGraph(State)
    .addNode("pay", pay)
    .addNode("note", note)
    .addEdge(START, "pay")
    .addEdge("pay", "note")
    .addEdge("note", END)

const Input = Schema.Struct({ amount: Schema.Number, log: Schema.Array(Schema.String) })
const Decision = Schema.Union([Schema.Literal("approve"), Schema.Literal("reject")])

const typed = Workflow.make({
  name: "typed",
  version: "1",
  graph: graph(),
  steps: { pay, note },
  input: Input,
  output: Schema.Struct({ log: Schema.Array(Schema.String) }),
  decision: Decision
})

const parent = Workflow.make({ name: "parent", version: "1", graph: graph(), steps: { mail }, children: [typed] })
const plain = Workflow.make({ name: "plain", version: "1", graph: graph() })

/** True only when A and B are the same type. */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false

describe("typed workflows: the compiler sees what a workflow needs", () => {
  it("effectStep's services flow into the workflow's type, children's too; a plain workflow needs nothing", () => {
    const needsPayments: Equals<Workflow.Requirements<typeof typed>, Payments> = true
    const needsBoth: Equals<Workflow.Requirements<typeof parent>, Payments | Mailer> = true
    const needsNothing: Equals<Workflow.Requirements<typeof plain>, never> = true
    // @ts-expect-error a workflow whose step needs Payments is not a workflow that needs nothing
    const forgotten: Workflow.Workflow<any, any, any, never> = typed
    assert.isTrue(needsPayments && needsBoth && needsNothing)
    assert.strictEqual(forgotten.name, "typed")
  })

  it("the payload types come from the schemas", () => {
    const input: Equals<typeof typed extends Workflow.Workflow<infer I, any, any, any> ? I : never, typeof Input.Type> = true
    const decision: Equals<typeof typed extends Workflow.Workflow<any, any, infer D, any> ? D : never, "approve" | "reject"> = true
    const start = <I>(_w: Workflow.Workflow<I, any, any, any>, _input: I) => true
    assert.isTrue(start(typed, { amount: 3, log: [] }))
    // @ts-expect-error the input schema says amount is a number
    assert.isTrue(start(typed, { amount: "3", log: [] }))
    assert.isTrue(input && decision)
  })
})

describe("typed workflows: payloads decoded at the boundary", () => {
  it.effect("a value the schema refuses fails with InvalidInputError naming the path of the problem", () =>
    Effect.gen(function*() {
      yield* expectInvalid(Workflow.decode(typed, "input", { amount: "3", log: [] }, "Baton.start"), "input.amount", "amount a string")
      yield* expectInvalid(Workflow.decode(typed, "input", { amount: 3, log: ["a", 2] }, "Baton.start"), "input.log[1]", "a number in log")
      yield* expectInvalid(Workflow.decode(typed, "input", undefined, "Baton.start"), "input", "no input at all")
      yield* expectInvalid(Workflow.decode(typed, "decision", "maybe", "Baton.resume"), "decision", "a decision not in the union")
      yield* expectInvalid(Workflow.decode(typed, "output", { log: "x" }, "Baton.await"), "output.log", "an output that does not fit")
      const error = yield* Effect.flip(Workflow.decode(typed, "input", { amount: "3", log: [1] }, "Baton.start"))
      assert.strictEqual(error.operation, "Baton.start")
      assert.include(error.reason, "input.amount")
      assert.include(error.reason, "input.log[0]", "every problem is named in the reason")
      assert.include(error.message, "Nothing was written")
    }))

  it.effect("a value the schema accepts is decoded; without a schema a payload is taken as it comes", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* Workflow.decode(typed, "input", { amount: 3, log: ["a"] }, "Baton.start"), { amount: 3, log: ["a"] })
      assert.strictEqual(yield* Workflow.decode(typed, "decision", "approve", "Baton.resume"), "approve")
      const anything = { whatever: [1, "two", null] }
      assert.strictEqual(yield* Workflow.decode(plain, "input", anything, "Baton.start"), anything)
      assert.strictEqual(yield* Workflow.decode(plain, "decision", 42, "Baton.resume"), 42)
      assert.strictEqual(yield* Workflow.decode(plain, "output", anything, "Baton.await"), anything)
    }))

  it("schemas leave the config hash alone: a typed workflow recovers trees of the same untyped one", () => {
    const untyped = Workflow.make({ name: "typed", version: "1", graph: graph() })
    assert.strictEqual(typed.configHash, untyped.configHash)
  })
})

describe("typed workflows: the runtime Layer requires what the workflows' steps need", () => {
  it("Baton.layer over a workflow whose step needs Payments requires Payments; provided, it requires nothing more", () => {
    const runtime = Baton.layer({ workflows: [typed, plain] }).pipe(Layer.provide(MemoryStores.layer))
    const needs: Equals<typeof runtime extends Layer.Layer<infer _A, infer _E, infer R> ? R : never, Payments> = true
    // @ts-expect-error Payments is provided by nobody: a compile error, not a failure at run time
    const unprovided: Layer.Layer<Baton.Baton, unknown, never> = runtime
    const provided: Layer.Layer<Baton.Baton, unknown, never> = runtime.pipe(
      Layer.provide(Layer.succeed(Payments, { pay: () => Effect.void }))
    )
    const plainOnly: Layer.Layer<Baton.Baton, unknown, never> = Baton.layer({ workflows: [plain] }).pipe(Layer.provide(MemoryStores.layer))
    assert.isTrue(needs)
    assert.isDefined(unprovided)
    assert.isDefined(provided)
    assert.isDefined(plainOnly)
  })
})
