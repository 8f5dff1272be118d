/**
 * Handles and reads through the public API, on every backend the runtime
 * tests run on: `start` answers a handle once the root is recorded and
 * leased; `await`, `status`, `list` and `pendingPauses` work from any
 * instance, tenant-scoped and owner-checked; typed payloads are decoded at
 * the boundary; one active root per thread.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Schema } from "effect"
import type { ExecutionOutput } from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { expectInvalid, expectTag } from "../../src/testing/conformance/Suite.ts"
import { approval, backends, errorTag, makeSideEffects, slow } from "./fixtures.ts"

const State = Annotation.Root({
  amount: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** ask (pauses for an approve/reject decision) → done; its input, decisions and output typed by schemas. */
const typed = Workflow.make({
  name: "typed",
  version: "1",
  graph: new StateGraph(State)
    .addNode("ask", Workflow.step(async (s: typeof State.State) => ({ log: [`ask ${s.amount}:${String(interrupt({ amount: s.amount }))}`] })))
    .addEdge(START, "ask")
    .addEdge("ask", END),
  input: Schema.Struct({ amount: Schema.Number, log: Schema.Array(Schema.String) }),
  decision: Schema.Union([Schema.Literal("approve"), Schema.Literal("reject")]),
  output: Schema.Struct({ amount: Schema.Number, log: Schema.Array(Schema.String) })
})

/** One step, then the end. */
const quick = Workflow.make({
  name: "quick",
  version: "1",
  graph: new StateGraph(State).addNode("only", Workflow.step(async () => ({ log: ["only"] }))).addEdge(START, "only").addEdge("only", END)
})

const paused = (out: ExecutionOutput) => {
  assert.strictEqual(out._tag, "Paused")
  return out._tag === "Paused" ? out : (undefined as never)
}

for (const backend of backends) {
describe(`handles and reads on ${backend.name}`, () => {
  it.effect("start answers a handle while the run goes on; status shows its holder; await on another instance answers the output", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] })))
      assert.strictEqual(handle.rootExecutionId, handle.executionId)
      assert.strictEqual(handle.tenantId, "default")
      yield* h.settle
      const running = yield* Fiber.join(yield* h.run(1, (b) => b.status(handle.executionId)))
      assert.strictEqual(running.status, "Running")
      assert.strictEqual(running.workflowName, "slow")
      assert.strictEqual(running.threadId, handle.threadId)
      assert.strictEqual(running.holder?.instanceId, "instance-0")
      assert.strictEqual(running.holder?.epoch, 1)
      assert.isNull(running.error)
      const awaited = yield* h.run(1, (b) => b.await(handle))
      yield* h.advance("46 seconds")
      const out = yield* Fiber.join(awaited)
      assert.strictEqual(out._tag, "Finished")
      assert.deepStrictEqual((out as { output: { log: Array<string> } }).output.log, ["first", "slow", "last"])
      const done = yield* Fiber.join(yield* h.run(1, (b) => b.status(handle.executionId)))
      assert.strictEqual(done.status, "Finished")
      assert.isNull(done.holder, "no holder once it rests")
      const page = yield* Fiber.join(yield* h.run(0, (b) => b.list({})))
      assert.deepStrictEqual(page.executions.map((e) => [e.executionId, e.status]), [[handle.executionId, "Finished"]])
      assert.isNull(page.next)
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("the README's harness example: a frozen holder loses its tree to the other instance, which finishes it (seen through status)", () =>
    Effect.gen(function*() {
      const slowJob = slow(makeSideEffects())
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [slowJob] } })
      const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(slowJob, { log: [] })))
      const status = () => Effect.flatMap(h.run(1, (b) => b.status(handle.executionId)), Fiber.join)
      yield* h.settle
      assert.strictEqual((yield* status()).holder?.instanceId, "instance-0")
      yield* h.freeze(0)
      yield* h.advance("31 seconds")
      const moved = yield* status()
      assert.deepStrictEqual([moved.status, moved.holder?.instanceId, moved.holder?.epoch], ["Running", "instance-1", 2])
      yield* h.thaw(0)
      yield* h.advance("45 seconds")
      assert.strictEqual((yield* status()).status, "Finished")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("start → status → pending pauses → resume → await, across two instances", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] })))
      const rested = paused(yield* Fiber.join(yield* h.run(1, (b) => b.await(handle))))
      const status = yield* Fiber.join(yield* h.run(1, (b) => b.status(handle.executionId)))
      assert.strictEqual(status.status, "Paused")
      assert.deepStrictEqual(status.pendingPauses.map((p) => [p.pauseId, p.payload]), rested.pauses.map((p) => [p.pauseId, p.payload]))
      const pending = yield* Fiber.join(yield* h.run(1, (b) => b.pendingPauses({ threadId: handle.threadId })))
      assert.deepStrictEqual(pending.map((p) => p.pauseId), [rested.pauses[0]!.pauseId])
      assert.deepStrictEqual(pending[0]!.payload, { question: "send it?" })
      assert.strictEqual(pending[0]!.executionId, handle.executionId)
      const resumed = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: pending[0]!.pauseId, decision: "yes" })))
      assert.strictEqual(resumed._tag, "Finished")
      const awaited = yield* Fiber.join(yield* h.run(0, (b) => b.await(handle.executionId)))
      assert.deepStrictEqual(awaited, resumed, "await answers the output execute would have")
      assert.deepStrictEqual(yield* Fiber.join(yield* h.run(0, (b) => b.pendingPauses({ threadId: handle.threadId }))), [])
      assert.deepStrictEqual([...fx.applied.values()], [1], "sent once")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("await with a timeout gives up with AwaitTimeoutError while the execution goes on", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] })))
      const waiting = yield* h.run(1, (b) => b.await(handle, { timeout: "10 seconds" }))
      yield* h.advance("11 seconds")
      const timedOut = yield* Fiber.await(waiting)
      assert.strictEqual(errorTag(timedOut), "AwaitTimeoutError")
      assert.strictEqual((yield* Fiber.join(yield* h.run(1, (b) => b.status(handle.executionId)))).status, "Running")
      yield* expectInvalid(Fiber.join(yield* h.run(1, (b) => b.await(handle, { timeout: -1 }))), "timeout", "a negative timeout")
      yield* h.advance("40 seconds")
      assert.strictEqual((yield* Fiber.join(yield* h.run(1, (b) => b.await(handle))))._tag, "Finished")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("reads are tenant-scoped and owner-checked: another tenant's ids answer as unknown, another owner's as ThreadOwnerError", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const mine = { tenantId: "acme", ownerId: "alice" }
      const handle = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { ...mine, threadId: "t-1" })))
      const other = yield* Fiber.join(yield* h.run(0, (b) => b.start(wf, { log: [] }, { tenantId: "acme", threadId: "t-2" })))
      yield* Fiber.join(yield* h.run(0, (b) => b.await(handle, mine)))
      const read = <A, E>(f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>) => Effect.flatMap(h.run(1, f), Fiber.join)
      yield* expectTag(read((b) => b.status(handle.executionId)), "UnknownExecutionError", "status, the default tenant")
      yield* expectTag(read((b) => b.status(handle.executionId, { tenantId: "other" })), "UnknownExecutionError", "status, another tenant")
      yield* expectTag(read((b) => b.status(handle.executionId, { tenantId: "acme", ownerId: "bob" })), "ThreadOwnerError", "status, another owner")
      yield* expectTag(read((b) => b.await(handle.executionId, { tenantId: "other" })), "UnknownExecutionError", "await, another tenant")
      yield* expectTag(read((b) => b.pendingPauses({ tenantId: "other", threadId: "t-1" })), "UnknownThreadError", "pendingPauses, another tenant")
      yield* expectTag(read((b) => b.pendingPauses({ tenantId: "acme", threadId: "t-1" })), "ThreadOwnerError", "pendingPauses, no owner")
      yield* expectTag(read((b) => b.list({ tenantId: "acme", threadId: "t-1", ownerId: "bob" })), "ThreadOwnerError", "list, another owner's thread")
      assert.strictEqual((yield* read((b) => b.pendingPauses({ ...mine, threadId: "t-1" }))).length, 1)
      assert.deepStrictEqual((yield* read((b) => b.list({ tenantId: "other" }))).executions, [])
      assert.deepStrictEqual((yield* read((b) => b.list({}))).executions, [], "the default tenant has none")
      const anyone = yield* read((b) => b.list({ tenantId: "acme" }))
      assert.deepStrictEqual(anyone.executions.map((e) => e.executionId), [other.executionId], "alice's thread is left out for others")
      const alice = yield* read((b) => b.list(mine))
      assert.deepStrictEqual(alice.executions.map((e) => e.executionId).sort(), [handle.executionId, other.executionId].sort())
      const paged = yield* read((b) => b.list({ ...mine, limit: 1 }))
      assert.strictEqual(paged.executions.length, 1)
      assert.isString(paged.next)
      const rest = yield* read((b) => b.list({ ...mine, limit: 1, cursor: paged.next! }))
      assert.deepStrictEqual([...paged.executions, ...rest.executions].map((e) => e.executionId).sort(), alice.executions.map((e) => e.executionId).sort())
      assert.isNull(rest.next)
      assert.deepStrictEqual((yield* read((b) => b.list({ ...mine, status: "Paused", threadId: "t-1" }))).executions.map((e) => e.executionId), [handle.executionId])
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("typed payloads: bad input fails with InvalidInputError naming the path before anything is written; decisions decoded before they are recorded", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [typed, quick] } })
      const call = <A, E>(i: number, f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>) => Effect.flatMap(h.run(i, f), Fiber.join)
      yield* expectInvalid(call(0, (b) => b.start(typed, { amount: "12", log: [] } as never, { threadId: "t-bad" })), "input.amount", "a string amount")
      yield* expectInvalid(call(0, (b) => b.execute(typed, { log: [] } as never, { threadId: "t-bad" })), "input.amount", "no amount")
      yield* expectInvalid(call(0, (b) => b.start(quick, { amount: 1, log: [], big: 10n }, { threadId: "t-bad" })), "input", "a bigint")
      yield* expectInvalid(call(0, (b) => b.start(quick, (() => 1) as never, { threadId: "t-bad" })), "input", "a function")
      yield* expectTag(call(1, (b) => b.pendingPauses({ threadId: "t-bad" })), "UnknownThreadError", "no bad start created the thread")
      assert.deepStrictEqual((yield* call(1, (b) => b.list({}))).executions, [], "no bad start recorded an execution")

      const first = paused(yield* call(0, (b) => b.execute(typed, { amount: 12, log: [] })))
      const pauseId = first.pauses[0]!.pauseId
      yield* expectInvalid(call(1, (b) => b.resume({ pauseId, decision: "maybe" })), "decision", "a decision outside the union")
      assert.deepStrictEqual((yield* call(1, (b) => b.pendingPauses({ threadId: first.threadId }))).map((p) => p.pauseId), [pauseId], "still pending")
      const done = yield* call(1, (b) => b.resume({ pauseId, decision: "approve" }))
      assert.deepStrictEqual(done._tag === "Finished" ? done.output : undefined, { amount: 12, log: ["ask 12:approve"] })
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))

  it.effect("8 concurrent start/execute calls on one idle thread across two instances: exactly one starts, the others fail ThreadBusyError", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf, quick] } })
      // an existing thread, idle: its first execution finished
      const before = yield* Fiber.join(yield* h.run(0, (b) => b.execute(quick, { log: [] }, { threadId: "busy" })))
      assert.strictEqual(before._tag, "Finished")
      const calls = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), (i) =>
        h.run(i % 2, (b): Effect.Effect<unknown, unknown> =>
          i % 4 < 2 ? b.start(wf, { log: [] }, { threadId: "busy" }) : b.execute(wf, { log: [] }, { threadId: "busy" })))
      yield* h.settle
      const exits = yield* Effect.forEach(calls, Fiber.await)
      const tags = exits.map(errorTag)
      assert.strictEqual(tags.filter((t) => t === "Success").length, 1, `exactly one starts: ${tags.join(", ")}`)
      assert.strictEqual(tags.filter((t) => t === "ThreadBusyError").length, 7, `the others are refused: ${tags.join(", ")}`)
      for (const exit of exits) if (Exit.isFailure(exit)) assert.isTrue(Exit.hasFails(exit) && !Exit.hasDies(exit), "no defect")
      const page = yield* Fiber.join(yield* h.run(1, (b) => b.list({ threadId: "busy" })))
      assert.deepStrictEqual(page.executions.map((e) => e.status).sort(), ["Finished", "Paused"], "one more root, paused")
    }).pipe(Effect.provide(Layer.fresh(backend.stores))))
})
}
