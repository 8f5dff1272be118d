/**
 * Ids that are not well-formed Unicode (a lone surrogate), through the public
 * API on a durable backend: SQLite and Postgres keep text as UTF-8, so a lone
 * surrogate would be stored as U+FFFD and "x\uD800y" would be the same tenant
 * (owner, thread, …) as "x\uFFFDy". Every such id is refused with
 * `InvalidInputError` naming it, before anything is written.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option } from "effect"
import * as Baton from "../src/runtime/Baton.ts"
import * as Workflow from "../src/runtime/Workflow.ts"
import { RecordStore } from "../src/stores/RecordStore.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** ask (pauses) → end. */
export const asking = Workflow.make({
  name: "asking",
  version: "1",
  graph: new StateGraph(State)
    .addNode("ask", Workflow.step(async () => ({ log: [`answer:${String(interrupt({ q: "?" }))}`] })))
    .addEdge(START, "ask")
    .addEdge("ask", END)
})

/** The ill-formed text, and the well-formed one a UTF-8 store would turn it into. */
export const lone = "x\uD800y"
export const replaced = "x\uFFFDy"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => Option.getOrUndefined(Exit.findErrorOption(exit)) as
  | { readonly _tag?: string; readonly field?: string; readonly message?: string }
  | undefined

/** `effect` fails with `InvalidInputError` naming `field`, with a message that says what to do. */
export const refused = <A, E>(effect: Effect.Effect<A, E>, field: string, what: string) =>
  Effect.map(Effect.exit(effect), (exit) => {
    const error = failureOf(exit)
    assert.strictEqual(error?._tag, "InvalidInputError", `${what}: expected InvalidInputError, got ${Exit.isSuccess(exit) ? "success" : String(error?._tag)}`)
    assert.strictEqual(error?.field, field, `${what}: InvalidInputError should name ${field}`)
    assert.match(error?.message ?? "", /well-formed/, `${what}: the message says the text must be well-formed`)
  })

/**
 * The scenario on `stores`: a start under tenant "x\uD800y" is refused, and
 * tenant "x\uFFFDy" — which a UTF-8 store would confuse with it — sees
 * nothing, before and after its own start; every other id a call names is
 * refused the same way.
 */
export const scenario = <E>(stores: Layer.Layer<any, E>) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Baton.layer({ workflows: [asking], instanceId: "ill-formed" }).pipe(Layer.provideMerge(stores)))
    const baton: Baton.BatonShape = Context.get(context, Baton.Baton)
    const records = Context.get(context, RecordStore)

    const first = yield* Effect.exit(baton.execute(asking, { log: [] }, { tenantId: lone }))
    // What the other tenant sees: nothing of the first one's execution.
    const seen = yield* baton.list({ tenantId: replaced })
    assert.deepStrictEqual(
      seen.executions.map((r) => `${r.executionId} ${r.status}`),
      [],
      `tenant "x\\uFFFDy" sees tenant "x\\uD800y"'s executions`
    )
    if (Exit.isSuccess(first)) {
      const view = yield* Effect.exit(baton.status(first.value.executionId, { tenantId: replaced }))
      assert.fail(`the start under "x\\uD800y" was accepted; tenant "x\\uFFFDy" reads it as ${Exit.isSuccess(view) ? view.value.status : "unknown"}`)
    }
    yield* refused(Effect.succeed(first).pipe(Effect.flatten), "tenantId", "execute under a tenant with a lone surrogate")
    assert.deepStrictEqual(yield* records.findByStatus("Running", 10, Option.none()), [], "nothing is Running")
    assert.deepStrictEqual(yield* records.findByStatus("Paused", 10, Option.none()), [], "nothing was written")

    // The well-formed twin runs as its own tenant; the ill-formed one cannot reach it.
    const own = yield* baton.execute(asking, { log: [] }, { tenantId: replaced, ownerId: replaced, threadId: replaced })
    assert.strictEqual(own._tag, "Paused")
    const pauseId = own._tag === "Paused" ? own.pauses[0]!.pauseId : ""
    yield* refused(baton.status(own.executionId, { tenantId: lone }), "tenantId", "status under the ill-formed tenant")
    yield* refused(baton.pendingPauses({ tenantId: lone, threadId: replaced }), "tenantId", "pendingPauses under the ill-formed tenant")
    yield* refused(baton.pendingPauses({ tenantId: replaced, threadId: lone }), "threadId", "pendingPauses of an ill-formed thread")
    yield* refused(baton.resume({ pauseId, decision: "no", tenantId: lone }), "tenantId", "resume under the ill-formed tenant")
    yield* refused(baton.resume({ pauseId, decision: "no", tenantId: replaced, ownerId: lone }), "ownerId", "resume by an ill-formed owner")
    yield* refused(baton.resume({ pauseId: pauseId + "\uDC00", decision: "no", tenantId: replaced }), "pauseId", "resume of an ill-formed pause id")
    yield* refused(baton.status(own.executionId + "\uD800", { tenantId: replaced }), "executionId", "status of an ill-formed execution id")
    yield* refused(baton.cancel(lone, { tenantId: replaced }), "threadId", "cancel of an ill-formed thread")
    yield* refused(baton.execute(asking, { log: [] }, { tenantId: replaced, ownerId: lone }), "ownerId", "execute by an ill-formed owner")
    yield* refused(baton.execute(asking, { log: [] }, { tenantId: replaced, threadId: "t\uDFFF" }), "threadId", "execute on an ill-formed thread")
    yield* refused(baton.execute(asking, { log: [] }, { tenantId: replaced, requestKey: "k\uD83D" }), "requestKey", "execute with an ill-formed request key")
    yield* refused(baton.list({ tenantId: replaced, workflow: "asking\uD800" }), "workflow", "list by an ill-formed workflow name")

    // The twin's own pause is untouched and answers as usual.
    const done = yield* baton.resume({ pauseId, decision: "yes", tenantId: replaced, ownerId: replaced })
    assert.strictEqual(done._tag, "Finished")
    assert.deepStrictEqual((done as { output: { log: Array<string> } }).output.log, ["answer:yes"])
    const listed = yield* baton.list({ tenantId: replaced, ownerId: replaced })
    assert.deepStrictEqual(listed.executions.map((r) => r.executionId), [own.executionId], "the twin tenant has its one execution")
  }).pipe(Effect.scoped)

type BuildError = { readonly _tag: string; readonly message: string }

/** An ill-formed workflow name or instance id fails at Layer build, naming the field. */
export const atBuild = <E extends BuildError>(stores: Layer.Layer<any, E>) =>
  Effect.gen(function*() {
    const badName = Workflow.make({ ...asking, name: "ask\uD800ing", graph: asking.graph })
    const named: BuildError = yield* Effect.flip(Layer.build(Baton.layer({ workflows: [badName], instanceId: "ill-formed" }).pipe(Layer.provide(stores))))
    assert.strictEqual(named._tag, "BatonConfigError")
    assert.strictEqual((named as { field?: string }).field, "workflows")
    assert.match(named.message, /well-formed/)
    const instance: BuildError = yield* Effect.flip(Layer.build(Baton.layer({ workflows: [asking], instanceId: "i\uDC00" }).pipe(Layer.provide(stores))))
    assert.strictEqual(instance._tag, "BatonConfigError")
    assert.strictEqual((instance as { field?: string }).field, "instanceId")
    assert.match(instance.message, /well-formed/)
  }).pipe(Effect.scoped)
