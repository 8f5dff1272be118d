/**
 * Free-text replies to pauses: `resume({ pauseId, reply })` is read by the
 * workflow's interpreter on the instance that got the call, holding no
 * lease, after the tenant and owner checks and before the pause is resolved;
 * its spend reaches the tree's budgets at once. A reply it cannot map, or a
 * failure of its own, leaves the pause pending with nothing written.
 * Harness (TestClock, two instances), memory and SQLite stores.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Schema } from "effect"
import type { ExecutionOutput } from "../../../src/runtime/Baton.ts"
import { ReplyNotUnderstoodError } from "../../../src/runtime/Errors.ts"
import * as Budget from "../../../src/runtime/limits/Budget.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends, errorTag } from "../fixtures.ts"

class ModelDown extends Schema.TaggedError<ModelDown>()("ModelDown", {}) {}

const State = Annotation.Root({ amount: Annotation<number>(), approved: Annotation<boolean>() })
const Decision = Schema.Struct({ approved: Schema.Boolean })

interface Read {
  readonly reply: string
  readonly instanceId: string
  /** Whether the tree's lease was held by anyone while the interpreter ran. */
  readonly leaseHeld: boolean
  readonly budgets: ReadonlyArray<Budget.Budget>
}

/** A one-question workflow whose interpreter is a pretend model: 2 units of spend a reading. */
const approvalWithInterpreter = (reads: Array<Read>) =>
  Workflow.make({
    name: "reply-approval",
    version: "1",
    decision: Decision,
    budgets: [{ scope: "tree", limit: 5 }],
    interpret: (r) =>
      Effect.gen(function*() {
        const lease = yield* (yield* LeaseStore).get(r.tenantId, r.executionId)
        reads.push({ reply: r.reply, instanceId: r.instanceId, leaseHeld: Option.isSome(lease), budgets: r.budgets })
        yield* Budget.spend(r.budgets, 2)
        if (r.reply.includes("outage")) return yield* new ModelDown()
        if (/\b(yes|approve|go ahead)\b/i.test(r.reply)) return { approved: true }
        if (/\b(no|reject)\b/i.test(r.reply)) return { approved: false }
        return yield* new ReplyNotUnderstoodError({ tenantId: r.tenantId, pauseId: r.pauseId, reason: `"${r.reply}" says neither yes nor no` })
      }),
    graph: new StateGraph(State)
      .addNode("ask", (s: typeof State.State) => ({ approved: (interrupt({ question: `approve ${s.amount}?` }) as { approved: boolean }).approved }))
      .addEdge(START, "ask")
      .addEdge("ask", END)
  })

const paused = (out: ExecutionOutput) => {
  assert.strictEqual(out._tag, "Paused")
  return out._tag === "Paused" ? out : (undefined as never)
}

for (const backend of backends) {
  describe(`free-text replies on ${backend.name}`, () => {
    it.effect("a reply given on another instance is read there, holding no lease, and the tree finishes with its decision", () =>
      Effect.gen(function*() {
        const reads: Array<Read> = []
        const wf = approvalWithInterpreter(reads)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const first = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { amount: 40 }))))
        const pauseId = first.pauses[0]!.pauseId
        const out = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, reply: "Yes, go ahead with it." })))
        assert.strictEqual(out._tag, "Finished")
        assert.strictEqual((out as { output: { approved: boolean } }).output.approved, true)
        assert.deepStrictEqual(reads.map((r) => [r.instanceId, r.leaseHeld]), [["instance-1", false]], "read on the instance that got the call, no lease held")
        assert.deepStrictEqual(reads[0]!.budgets, [{ tenantId: "default", scope: "execution", scopeId: first.executionId, limit: 5, window: "lifetime" }])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("a reply the interpreter cannot map is ReplyNotUnderstoodError and the pause stays pending; its spend counted at once; a failure of its own is ReplyInterpretationFailedError", () =>
      Effect.gen(function*() {
        const reads: Array<Read> = []
        const wf = approvalWithInterpreter(reads)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const first = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { amount: 40 }))))
        const pauseId = first.pauses[0]!.pauseId
        const vague = yield* Fiber.await(yield* h.run(1, (b) => b.resume({ pauseId, reply: "hmm, let me think" })))
        assert.strictEqual(errorTag(vague), "ReplyNotUnderstoodError")
        const pending = yield* Fiber.join(yield* h.run(0, (b) => b.pendingPauses({ threadId: first.threadId })))
        assert.deepStrictEqual(pending.map((p) => p.pauseId), [pauseId], "the pause is still pending")
        const spent = yield* Fiber.join(yield* h.run(0, () => Effect.provide(Budget.spent(reads[0]!.budgets[0]!), h.instance(0).instance.services)))
        assert.strictEqual(spent, 2, "the interpreter's spend reached the tree's counter at once")

        const down = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ pauseId, reply: "yes (during an outage)" })))
        assert.strictEqual(errorTag(down), "ReplyInterpretationFailedError")
        // 4 of 5 spent: the next reading (2 more) is refused by the tree's budget, reported as a failed reading
        const over = yield* Fiber.await(yield* h.run(1, (b) => b.resume({ pauseId, reply: "yes" })))
        assert.strictEqual(errorTag(over), "ReplyInterpretationFailedError")
        assert.include(String(over), "BudgetExceededError")
        const still = yield* Fiber.join(yield* h.run(1, (b) => b.pendingPauses({ threadId: first.threadId })))
        assert.strictEqual(still.length, 1, "still pending after every refused reading")
        const answered = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId, decision: { approved: false } })))
        assert.strictEqual((answered as { output: { approved: boolean } }).output.approved, false, "a decision still answers it")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))

    it.effect("the tenant and owner are checked before the interpreter runs; no interpreter, or a reply with a requestKey, is InvalidInputError naming the field", () =>
      Effect.gen(function*() {
        const reads: Array<Read> = []
        const wf = approvalWithInterpreter(reads)
        const plain = Workflow.make({ name: "no-interpreter", version: "1", graph: approvalWithInterpreter([]).graph })
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf, plain] } })
        const first = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { amount: 1 }, { tenantId: "acme", ownerId: "alice" }))))
        const pauseId = first.pauses[0]!.pauseId
        const tries = [
          [{ pauseId, reply: "yes", tenantId: "other", ownerId: "alice" }, "UnknownPauseError"],
          [{ pauseId, reply: "yes", tenantId: "acme", ownerId: "bob" }, "ThreadOwnerError"],
          [{ pauseId, reply: "", tenantId: "acme", ownerId: "alice" }, "InvalidInputError"]
        ] as const
        for (const [input, tag] of tries) assert.strictEqual(errorTag(yield* Fiber.await(yield* h.run(0, (b) => b.resume(input)))), tag)
        const keyed = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ pauseId, reply: "yes", tenantId: "acme", ownerId: "alice", requestKey: "k1" } as never)))
        assert.strictEqual(errorTag(keyed), "InvalidInputError")
        assert.include(String(keyed), "requestKey")
        assert.strictEqual(reads.length, 0, "the interpreter never ran for a refused call")

        const other = paused(yield* Fiber.join(yield* h.run(0, (b) => b.execute(plain, { amount: 1 }))))
        const none = yield* Fiber.await(yield* h.run(0, (b) => b.resume({ pauseId: other.pauses[0]!.pauseId, reply: "yes" })))
        assert.strictEqual(errorTag(none), "InvalidInputError")
        assert.include(String(none), "declares no interpreter")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}
