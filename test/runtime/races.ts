/**
 * The start races, through the public API, over any backend given as two
 * store Layers on one database (two connections, two pools): two baton
 * instances in one process, on the live Clock.
 *
 * - A root is born leased: while instance A starts many roots, instance B's
 *   recovery sweep looks as often as its floor allows, every 100 ms (and at
 *   every release, which the
 *   process's wake-up hub tells it). Before, a root was recorded before its
 *   lease was taken, so B could take it as orphaned and A's start died with
 *   a defect.
 * - One active root per thread: concurrent starts on one idle thread, half
 *   on each instance, half `start` and half `execute` — exactly one starts.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert } from "@effect/vitest"
import { Cause, Context, type Duration, Effect, Exit, Layer, Option } from "effect"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One step, then the end. */
export const quick = Workflow.make({
  name: "quick",
  version: "1",
  graph: new StateGraph(State).addNode("only", Workflow.step(async () => ({ log: ["only"] }))).addEdge(START, "only").addEdge("only", END)
})

const instance = (instanceId: string, stores: Layer.Layer<Baton.BatonStores, unknown>, sweepInterval: Duration.Input) =>
  Effect.map(
    Layer.build(Baton.layer({ workflows: [quick], instanceId, sweepInterval }).pipe(Layer.provide(stores))),
    (context) => Context.get(context, Baton.Baton)
  )

/** What the exits of public calls hold besides successes and typed failures: defects and interruptions. */
const untyped = <A, E>(exits: ReadonlyArray<Exit.Exit<A, E>>) =>
  exits.flatMap((exit) => Exit.isFailure(exit) && Option.isNone(Exit.findErrorOption(exit)) ? [Cause.pretty(exit.cause)] : [])

/** Every execution of the tenant, through `list`, page by page. */
const listAll = (b: Baton.BatonShape, tenantId: string) =>
  Effect.gen(function*() {
    const out: Array<{ readonly executionId: string; readonly status: string }> = []
    let cursor: string | undefined
    do {
      const page = yield* b.list({ tenantId, cursor, limit: 100 })
      out.push(...page.executions)
      cursor = page.next ?? undefined
    } while (cursor !== undefined)
    return out
  })

/**
 * `roots` executions started on A (all at once) while B sweeps as often as
 * it may (every 100 ms, `sweepInterval`'s floor, and at every release its
 * wake-up hub tells it of): no call ends in a defect, every start answers a handle, and
 * every execution finishes, awaited on B.
 */
export const bornLeased = (storesA: Layer.Layer<Baton.BatonStores, unknown>, storesB: Layer.Layer<Baton.BatonStores, unknown>, roots: number) =>
  Effect.gen(function*() {
    const a = yield* instance("instance-a", storesA, "1 hour")
    const b = yield* instance("instance-b", storesB, "100 millis")
    const tenantId = `race-${Math.random().toString(36).slice(2, 10)}`
    const starts = yield* Effect.forEach(
      Array.from({ length: roots }, (_, i) => i),
      () => Effect.exit(a.start(quick, { log: [] }, { tenantId })),
      { concurrency: "unbounded" }
    )
    assert.deepStrictEqual(untyped(starts), [], "no start ended in a defect")
    const handles = starts.flatMap((exit) => (Exit.isSuccess(exit) ? [exit.value] : []))
    assert.strictEqual(handles.length, roots, "every start answered a handle")
    const outs = yield* Effect.forEach(handles, (h) => Effect.exit(b.await(h)), { concurrency: 16 })
    assert.deepStrictEqual(untyped(outs), [], "no await ended in a defect")
    for (const out of outs) assert.isTrue(Exit.isSuccess(out) && out.value._tag === "Finished", "every execution finished")
    const all = yield* listAll(b, tenantId)
    assert.strictEqual(all.length, roots)
    assert.deepStrictEqual([...new Set(all.map((e) => e.status))], ["Finished"])
  }).pipe(Effect.scoped)

/**
 * `callers` concurrent calls on one idle existing thread, alternating
 * instances and start/execute: exactly one starts, the others fail with
 * `ThreadBusyError`; nothing dies.
 */
export const oneRootPerThread = (storesA: Layer.Layer<Baton.BatonStores, unknown>, storesB: Layer.Layer<Baton.BatonStores, unknown>, callers: number) =>
  Effect.gen(function*() {
    const a = yield* instance("instance-a", storesA, "1 hour")
    const b = yield* instance("instance-b", storesB, "1 hour")
    const tenantId = `busy-${Math.random().toString(36).slice(2, 10)}`
    const threadId = "the-thread"
    const first = yield* a.execute(quick, { log: [] }, { tenantId, threadId })
    assert.strictEqual(first._tag, "Finished", "the thread exists and is idle")
    const exits = yield* Effect.forEach(
      Array.from({ length: callers }, (_, i) => i),
      (i) => {
        const on = i % 2 === 0 ? a : b
        return Effect.exit<unknown, unknown, never>(
          i % 4 < 2 ? on.start(quick, { log: [] }, { tenantId, threadId }) : on.execute(quick, { log: [] }, { tenantId, threadId })
        )
      },
      { concurrency: "unbounded" }
    )
    assert.deepStrictEqual(untyped(exits), [], "no call ended in a defect")
    const tags = exits.map((exit) => Exit.isSuccess(exit) ? "Success" : (Option.getOrUndefined(Exit.findErrorOption(exit)) as { _tag: string })._tag)
    assert.strictEqual(tags.filter((t) => t === "Success").length, 1, `exactly one starts: ${tags.join(", ")}`)
    assert.strictEqual(tags.filter((t) => t === "ThreadBusyError").length, callers - 1, `the others are busy: ${tags.join(", ")}`)
    const roots = (yield* listAll(a, tenantId)).filter((e) => e.executionId !== first.executionId)
    assert.strictEqual(roots.length, 1, "one more root was recorded")
  }).pipe(Effect.scoped)
