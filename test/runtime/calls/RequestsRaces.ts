/**
 * Request key races through the public API, over any backend given as two
 * store Layers on one database (two connections, two pools): two baton
 * instances in one process, on the live Clock.
 *
 * Concurrent calls with one request key, half on each instance, half
 * `start` and half `execute`, on a new thread and on an existing idle one:
 * exactly one execution starts (its step runs once), every call answers it;
 * the same key with another input is `RequestConflictError`. Concurrent
 * resumes of one key for one pause: one continuation, every call answered.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Option } from "effect"
import * as Baton from "../../../src/runtime/Baton.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** Runs of the step, by tenant. */
const runs = new Map<string, number>()

/** One step (counted per tenant), then the end. */
export const counted = Workflow.make({
  name: "counted",
  version: "1",
  graph: new StateGraph(State)
    .addNode("only", Workflow.step(async (_s, ctx) => {
      runs.set(ctx.tenantId, (runs.get(ctx.tenantId) ?? 0) + 1)
      return { log: ["only"] }
    }))
    .addEdge(START, "only")
    .addEdge("only", END)
})

/** Runs of the step after the pause, by tenant. */
const acted = new Map<string, number>()

/** ask (pauses) → act (counted per tenant) → end. */
export const gated = Workflow.make({
  name: "gated",
  version: "1",
  graph: new StateGraph(State)
    .addNode("ask", Workflow.step(async () => ({ log: [`answer:${String(interrupt({ q: "go?" }))}`] })))
    .addNode("act", Workflow.step(async (_s, ctx) => {
      acted.set(ctx.tenantId, (acted.get(ctx.tenantId) ?? 0) + 1)
      return { log: ["acted"] }
    }))
    .addEdge(START, "ask")
    .addEdge("ask", "act")
    .addEdge("act", END)
})

const instance = (instanceId: string, stores: Layer.Layer<Baton.BatonStores, unknown>) =>
  Effect.map(
    Layer.build(Baton.layer({ workflows: [counted, gated], instanceId, sweepInterval: "1 hour" }).pipe(Layer.provide(stores))),
    (context) => Context.get(context, Baton.Baton)
  )

const untyped = <A, E>(exits: ReadonlyArray<Exit.Exit<A, E>>) =>
  exits.flatMap((exit) => Exit.isFailure(exit) && Option.isNone(Exit.findErrorOption(exit)) ? [Cause.pretty(exit.cause)] : [])

const tagOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isSuccess(exit) ? "Success" : (Option.getOrUndefined(Exit.findErrorOption(exit)) as { _tag: string } | undefined)?._tag

/** `callers` calls of one key at once, alternating instances and start/execute: the execution ids they answer. */
const race = (a: Baton.BatonShape, b: Baton.BatonShape, callers: number, tenantId: string, requestKey: string, threadId?: string) =>
  Effect.gen(function*() {
    const exits = yield* Effect.forEach(
      Array.from({ length: callers }, (_, i) => i),
      (i) => {
        const on = i % 2 === 0 ? a : b
        const options = { tenantId, threadId, requestKey }
        return Effect.exit<string, unknown, never>(
          i % 4 < 2
            ? Effect.map(on.start(counted, { log: [] }, options), (h) => h.executionId)
            : Effect.map(on.execute(counted, { log: [] }, options), (out) => {
              assert.strictEqual(out._tag, "Finished")
              return out.executionId
            })
        )
      },
      { concurrency: "unbounded" }
    )
    assert.deepStrictEqual(untyped(exits), [], "no call ended in a defect")
    assert.deepStrictEqual(exits.map(tagOf), exits.map(() => "Success"), "every call of the key succeeds")
    return exits.map((exit) => (Exit.isSuccess(exit) ? exit.value : ""))
  })

/**
 * `callers` concurrent calls of one request key on two instances: one
 * execution, its step run once, every call answers it — on a new thread,
 * and again on an idle existing thread; then the key with another input is
 * refused with `RequestConflictError`, nothing started.
 */
export const oneStartPerKey = (storesA: Layer.Layer<Baton.BatonStores, unknown>, storesB: Layer.Layer<Baton.BatonStores, unknown>, callers: number) =>
  Effect.gen(function*() {
    const a = yield* instance("instance-a", storesA)
    const b = yield* instance("instance-b", storesB)
    const tenantId = `keyed-${Math.random().toString(36).slice(2, 10)}`

    const ids = yield* race(a, b, callers, tenantId, "order-1")
    assert.strictEqual(new Set(ids).size, 1, `one execution answered to all: ${ids.join(", ")}`)
    const out = yield* b.await(ids[0]!, { tenantId })
    assert.strictEqual(out._tag, "Finished")
    assert.strictEqual(runs.get(tenantId), 1, "its step ran once")
    const listed = yield* a.list({ tenantId, limit: 100 })
    assert.deepStrictEqual(listed.executions.map((e) => e.executionId), [ids[0]], "one execution recorded")

    // On an existing idle thread: one more execution, not ThreadBusyError for the repeated calls.
    const threadId = listed.executions[0]!.threadId
    const again = yield* race(a, b, callers, tenantId, "order-2", threadId)
    assert.strictEqual(new Set(again).size, 1, `one execution answered to all: ${again.join(", ")}`)
    yield* a.await(again[0]!, { tenantId })
    assert.strictEqual(runs.get(tenantId), 2, "its step ran once")
    assert.strictEqual((yield* a.list({ tenantId, limit: 100 })).executions.length, 2)

    const conflict = yield* Effect.exit(b.execute(counted, { log: ["other"] }, { tenantId, requestKey: "order-1" }))
    assert.strictEqual(tagOf(conflict), "RequestConflictError")
    assert.strictEqual((yield* a.list({ tenantId, limit: 100 })).executions.length, 2, "nothing started")
    assert.strictEqual(runs.get(tenantId), 2)

    // resume: `callers` calls of one key for one pause, on both instances at once: one continuation.
    const paused = yield* a.execute(gated, { log: [] }, { tenantId })
    if (paused._tag !== "Paused") return assert.fail("expected a pause")
    const pauseId = paused.pauses[0]!.pauseId
    const resumes = yield* Effect.forEach(
      Array.from({ length: callers }, (_, i) => i),
      (i) => Effect.exit((i % 2 === 0 ? a : b).resume({ pauseId, decision: "yes", tenantId, requestKey: "answer-1" })),
      { concurrency: "unbounded" }
    )
    assert.deepStrictEqual(untyped(resumes), [], "no resume ended in a defect")
    assert.deepStrictEqual(resumes.map(tagOf), resumes.map(() => "Success"), "every resume of the key succeeds")
    for (const exit of resumes) if (Exit.isSuccess(exit)) assert.strictEqual(exit.value._tag, "Finished")
    assert.strictEqual(acted.get(tenantId), 1, "the step after the pause ran once")
  }).pipe(Effect.scoped)
