/**
 * What a user of the public API, from JavaScript or TypeScript, can get
 * wrong — found by using the packed package from outside: each is a typed
 * error that says what to do (never a defect), or simply works.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { expectInvalid, expectTag } from "../../src/testing/conformance/Suite.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./children/childFixtures.ts"
import { approval, makeSideEffects, memoryStores } from "./fixtures.ts"

const State = Annotation.Root({ x: Annotation<number>() })

/** A one-step workflow whose step throws `thrown` (what a JavaScript step may throw: anything). */
const throwing = (name: string, thrown: unknown) =>
  Workflow.make({
    name,
    version: "1",
    graph: new StateGraph(State)
      .addNode("n", Workflow.step(async () => {
        throw thrown
      }))
      .addEdge(START, "n")
      .addEdge("n", END)
  })

/** The same, as an Effect step that fails (or dies) with `thrown`. */
const failing = (name: string, effect: Effect.Effect<never, unknown>) =>
  Workflow.make({
    name,
    version: "1",
    graph: new StateGraph(State).addNode("n", Workflow.effectStep(() => effect)).addEdge(START, "n").addEdge("n", END)
  })

const review = approval(makeSideEffects())
const steps = [
  throwing("throws-string", "the card was declined"),
  throwing("throws-object", { code: 402, reason: "declined" }),
  throwing("throws-number", 42),
  failing("fails-string", Effect.fail("the card was declined")),
  failing("dies-string", Effect.die("the card was declined"))
]

/** One instance over fresh memory stores, its Baton handed to `f`. */
const withBaton = <A, E>(workflows: ReadonlyArray<Workflow.AnyWorkflow>, f: (baton: Baton.Baton["Service"]) => Effect.Effect<A, E>) =>
  Baton.Baton.use(f).pipe(Effect.provide(Baton.layer({ workflows }).pipe(Layer.provide(Layer.fresh(memoryStores)))))

/** Bypasses the types, as a JavaScript caller does. */
const untyped = (value: unknown) => value as any

describe("the public boundary", () => {
  it.effect("a parent and its declared child may both be listed, in either order", () =>
    Effect.gen(function*() {
      const child = childWorkflow(makeChildLog(), "1 second")
      const parent = parentWorkflow(child, "parent")
      for (const workflows of [[parent, child], [child, parent]]) {
        const built = yield* Effect.exit(Layer.build(Baton.layer({ workflows }).pipe(Layer.provide(Layer.fresh(memoryStores)))).pipe(Effect.scoped))
        assert.strictEqual(built._tag, "Success", `workflows [${workflows.map((w) => w.name).join(", ")}]: ${String(built)}`)
      }
    }))

  it.effect("a declared child and a listed workflow made by two Workflow.make calls of one graph (equal config hashes) are one registration", () =>
    Effect.gen(function*() {
      const log = makeChildLog()
      const declared = childWorkflow(log, "1 second")
      const listed = childWorkflow(log, "1 second")
      assert.notStrictEqual(declared, listed)
      assert.strictEqual(declared.configHash, listed.configHash)
      const parent = parentWorkflow(declared, "parent")
      for (const workflows of [[parent, listed], [listed, parent]]) {
        const built = yield* Effect.exit(Layer.build(Baton.layer({ workflows }).pipe(Layer.provide(Layer.fresh(memoryStores)))).pipe(Effect.scoped))
        assert.strictEqual(built._tag, "Success", `workflows [${workflows.map((w) => w.name).join(", ")}]: ${String(built)}`)
      }
    }))

  it.effect("a declared child whose name is registered with another graph is refused at build, not when a step launches it", () =>
    Effect.gen(function*() {
      const child = childWorkflow(makeChildLog(), "1 second")
      const parent = parentWorkflow(child, "parent")
      const other = { ...throwing(child.name, "x"), name: child.name }
      for (const workflows of [[other, parent], [parent, other]]) {
        const built = yield* Effect.exit(Layer.build(Baton.layer({ workflows }).pipe(Layer.provide(Layer.fresh(memoryStores)))).pipe(Effect.scoped))
        assert.strictEqual(built._tag, "Failure", workflows.map((w) => w.name).join(", "))
        assert.include(String(built), `"${child.name}"`)
      }
    }))

  it.effect("two different workflows under one name are still refused, even when one is a child", () =>
    Effect.gen(function*() {
      const child = childWorkflow(makeChildLog(), "1 second")
      const parent = parentWorkflow(child, "parent")
      const impostor = { ...throwing(child.name, "x"), name: child.name }
      const built = yield* Effect.exit(Layer.build(Baton.layer({ workflows: [parent, impostor] }).pipe(Layer.provide(Layer.fresh(memoryStores)))).pipe(Effect.scoped))
      assert.strictEqual(built._tag, "Failure")
      assert.include(String(built), `names workflow "${child.name}" twice`)
    }))

  it.effect("a Baton Layer built without stores (JavaScript: TypeScript refuses it) fails with BatonConfigError naming them, not a defect", () =>
    Effect.gen(function*() {
      const wf = approval(makeSideEffects())
      const unprovided = Baton.layer({ workflows: [wf] }) as unknown as Layer.Layer<Baton.Baton, unknown>
      const error = yield* Effect.flip(Layer.build(unprovided).pipe(Effect.scoped))
      assert.strictEqual((error as { _tag: string })._tag, "BatonConfigError")
      assert.strictEqual((error as { field: string }).field, "stores")
      assert.include((error as Error).message, "baton/LeaseStore")
      assert.include((error as Error).message, "MemoryStores.layer")
    }))

  it.effect("a workflow made without a graph, or with a compiled one, fails the Layer with BatonConfigError saying what to pass", () =>
    Effect.gen(function*() {
      const compiled = new StateGraph(State).addNode("n", async () => ({})).addEdge(START, "n").compile()
      const cases = [
        [Workflow.make(untyped({ name: "no-graph", version: "1" })), "no-graph"],
        [Workflow.make(untyped({ name: "compiled", version: "1", graph: compiled })), "compiled"],
        [Workflow.make(untyped({ name: "odd-children", version: "1", graph: new StateGraph(State).addNode("n", async () => ({})), children: {} })), "odd-children"]
      ] as const
      for (const [workflow, name] of cases) {
        const built = yield* Effect.exit(Layer.build(Baton.layer({ workflows: [workflow] }).pipe(Layer.provide(Layer.fresh(memoryStores)))).pipe(Effect.scoped))
        assert.strictEqual(built._tag, "Failure", name)
        assert.include(String(built), "BatonConfigError", name)
        assert.include(String(built), `workflow "${name}"`, name)
      }
      const compiledError = String(yield* Effect.exit(Layer.build(Baton.layer({ workflows: [cases[1][0]] }).pipe(Layer.provide(Layer.fresh(memoryStores)))).pipe(Effect.scoped)))
      assert.include(compiledError, "before .compile()")
    }))

  it.effect("a missing or malformed argument is InvalidInputError naming it, not a defect", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        yield* expectInvalid(b.start(untyped(undefined), {}), "workflow", "start(undefined)")
        yield* expectInvalid(b.execute(untyped({ name: "approval" }), {}), "workflow", "execute({ name })")
        yield* expectInvalid(b.await(untyped(undefined)), "target", "await(undefined)")
        yield* expectInvalid(b.await(untyped(null)), "target", "await(null)")
        yield* expectInvalid(b.pendingPauses(untyped(undefined)), "options", "pendingPauses(undefined)")
        yield* expectInvalid(b.resume(untyped(undefined)), "input", "resume(undefined)")
        yield* expectInvalid(b.resume(untyped(null)), "input", "resume(null)")
        yield* expectInvalid(b.close({ timeout: untyped("soon") }), "timeout", "close({ timeout: \"soon\" })")
        yield* expectInvalid(b.close({ timeout: -1 }), "timeout", "close({ timeout: -1 })")
        yield* expectInvalid(b.close({ timeout: Number.NaN }), "timeout", "close({ timeout: NaN })")
        yield* expectInvalid(b.await("exec_nope", { timeout: Number.NaN }), "timeout", "await(id, { timeout: NaN })")
        // Refused before anything stopped: the instance still takes calls.
        assert.strictEqual((yield* b.checkLiveness).status, "Healthy")
      })))

  it.effect("a malformed id is refused naming the Baton call it was given to, not the store call behind it", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        const long = "t".repeat(201)
        const cases = [
          [b.start(review, { log: [] }, { threadId: long }), "Baton.start", "threadId"],
          [b.execute(review, { log: [] }, { tenantId: "" }), "Baton.execute", "tenantId"],
          [b.start(review, { log: [] }, { ownerId: "a\u0000b" }), "Baton.start", "ownerId"],
          [b.status("exec_1", { tenantId: long }), "Baton.status", "tenantId"],
          [b.list({ tenantId: "acme", threadId: "" }), "Baton.list", "threadId"],
          [b.pendingPauses({ threadId: long }), "Baton.pendingPauses", "threadId"],
          [b.resume({ pauseId: "", decision: "yes" }), "Baton.resume", "pauseId"],
          [b.cancel(long), "Baton.cancel", "threadId"]
        ] as const
        for (const [call, operation, field] of cases) {
          const found = yield* expectTag(call as Effect.Effect<unknown, unknown>, "InvalidInputError", operation)
          assert.deepStrictEqual([found.operation, found.field], [operation, field], String(found.message))
        }
      })))

  it.effect("a start without input (undefined or null, no input schema) is InvalidInputError and records nothing", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        yield* expectInvalid(b.start(review, untyped(undefined)), "input", "start(workflow, undefined)")
        yield* expectInvalid(b.execute(review, untyped(null)), "input", "execute(workflow, null)")
        assert.deepStrictEqual((yield* b.list()).executions, [], "no execution was recorded")
      })))

  it.effect("a step that throws or fails with a value that is not an Error fails the execution with that value as its message", () =>
    withBaton(steps, (b) =>
      Effect.gen(function*() {
        const messages: Array<string> = []
        for (const workflow of steps) {
          const error = yield* expectTag(b.execute(workflow, { x: 1 }), "ExecutionFailedError", workflow.name)
          messages.push(String(error.error))
        }
        assert.deepStrictEqual(messages, [
          "the card was declined",
          `{"code":402,"reason":"declined"}`,
          "42",
          "the card was declined",
          "the card was declined"
        ])
      })))

  it.effect("ThreadOwnerError tells a caller who gave no owner to pass the one the thread was started with", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        const handle = yield* b.start(review, { log: [] }, { tenantId: "acme", ownerId: "alice" })
        const none = yield* expectTag(b.await(handle), "ThreadOwnerError", "await(handle) without the owner")
        assert.isUndefined(none.ownerId)
        assert.include(String(none.message), "was asked for without an `ownerId`")
        const other = yield* expectTag(b.status(handle.executionId, { tenantId: "acme", ownerId: "bob" }), "ThreadOwnerError", "another owner")
        assert.include(String(other.message), "belongs to another owner than bob")
      })))

  it.effect("an options argument that is not an object (a string, a number) is InvalidInputError naming `options`, not silently read as none", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        yield* expectInvalid(b.start(review, { log: [] }, untyped("acme")), "options", "start(workflow, input, \"acme\")")
        yield* expectInvalid(b.execute(review, { log: [] }, untyped(5)), "options", "execute(workflow, input, 5)")
        yield* expectInvalid(b.status("exec_1", untyped("acme")), "options", "status(id, \"acme\")")
        yield* expectInvalid(b.list(untyped(5)), "options", "list(5)")
        yield* expectInvalid(b.cancel("thread_1", untyped("acme")), "options", "cancel(thread, \"acme\")")
        yield* expectInvalid(b.await("exec_1", untyped("acme")), "options", "await(id, \"acme\")")
        yield* expectInvalid(b.close(untyped("now")), "options", "close(\"now\")")
        assert.deepStrictEqual((yield* b.list()).executions, [], "no execution was recorded")
        assert.strictEqual((yield* b.checkLiveness).status, "Healthy", "the refused close did not close the instance")
      })))

  it.effect("await of a malformed execution id (in a handle too) is refused under Baton.await, naming executionId", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        for (const [target, what] of [["", "await(\"\")"], [untyped({ executionId: 5 }), "await({ executionId: 5 })"], ["a\u0000b", "await(NUL)"]] as const) {
          const found = yield* expectTag(b.await(target), "InvalidInputError", what)
          assert.deepStrictEqual([found.operation, found.field], ["Baton.await", "executionId"], what)
        }
        const tenant = yield* expectTag(b.await("exec_1", { tenantId: "" }), "InvalidInputError", "await(id, { tenantId: \"\" })")
        assert.deepStrictEqual([tenant.operation, tenant.field], ["Baton.await", "tenantId"])
      })))

  it.effect("a resume's malformed requestKey is refused before the pause is looked up, like start's", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        yield* expectInvalid(b.resume({ pauseId: "pause_unknown", decision: "yes", requestKey: "" }), "requestKey", "resume requestKey \"\"")
        yield* expectInvalid(b.resume({ pauseId: "pause_unknown", decision: "yes", requestKey: "k".repeat(201) }), "requestKey", "resume requestKey of 201")
      })))

  it.effect("a start input that is not an object (a string, a number, an array) is InvalidInputError and records nothing", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        yield* expectInvalid(b.start(review, untyped("draft")), "input", "start(workflow, \"draft\")")
        yield* expectInvalid(b.execute(review, untyped(42)), "input", "execute(workflow, 42)")
        yield* expectInvalid(b.execute(review, untyped([{ log: [] }])), "input", "execute(workflow, [..])")
        assert.deepStrictEqual((yield* b.list()).executions, [], "no execution was recorded")
      })))

  it.effect("a step that throws a value JSON cannot write (a cycle, a BigInt, a throwing toJSON) fails with a message that shows the value, not [object Object]", () => {
    const cyclic: Record<string, unknown> = { code: 402 }
    cyclic.self = cyclic
    const poison = [
      throwing("throws-cycle", cyclic),
      throwing("throws-bigint-field", { amount: 10n }),
      throwing("throws-bad-tojson", { code: 7, toJSON: () => { throw new Error("no JSON") } })
    ]
    return withBaton(poison, (b) =>
      Effect.gen(function*() {
        const messages: Array<string> = []
        for (const workflow of poison) messages.push(String((yield* expectTag(b.execute(workflow, { x: 1 }), "ExecutionFailedError", workflow.name)).error))
        for (const [i, wanted] of ["code: 402", "amount: 10n", "code: 7"].entries()) {
          assert.include(messages[i], wanted, `${poison[i]!.name}: ${messages[i]}`)
        }
      }))
  })

  it.effect("a decision that is not JSON (a BigInt, a cycle, a function) is refused under Baton.resume naming decision; the pause stays answerable", () =>
    withBaton([review], (b) =>
      Effect.gen(function*() {
        const cyclic: Record<string, unknown> = {}
        cyclic.self = cyclic
        const out = yield* b.execute(review, { log: [] })
        assert.strictEqual(out._tag, "Paused")
        const pauseId = out._tag === "Paused" ? out.pauses[0]!.pauseId : ""
        for (const [decision, what] of [[10n, "a BigInt"], [cyclic, "a cycle"], [() => "yes", "a function"]] as const) {
          const found = yield* expectTag(b.resume({ pauseId, decision }), "InvalidInputError", what)
          assert.deepStrictEqual([found.operation, found.field], ["Baton.resume", "decision"], what)
        }
        const done = yield* b.resume({ pauseId, decision: "yes" })
        assert.strictEqual(done._tag, "Finished")
      })))
})
