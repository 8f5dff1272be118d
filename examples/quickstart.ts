/**
 * baton in one command: two instances of an app over one SQLite file.
 *
 *   1. Instance A starts an expense workflow and gets a handle at once.
 *   2. Instance B awaits it (it pauses for approval), reads its status and
 *      the thread's pending pauses.
 *   3. B answers the pause; the workflow goes on *on B*, and its "send" step
 *      pays once, keyed by the step's idempotency key; A awaits the end.
 *   4. Leases on a TestClock: A holds a tree, B is refused, A goes silent,
 *      the clock passes 30 s, B takes the tree with epoch 2.
 *
 * Run: `npm start` (a temp file), or `npm start -- ./demo.sqlite`.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqliteStores } from "baton/sqlite"
import { Baton, LeaseStore, Workflow } from "baton"

const given = process.argv[2]
const dir = given === undefined ? mkdtempSync(join(tmpdir(), "baton-quickstart-")) : undefined
const path = given ?? join(dir!, "baton.sqlite")
const say = (line: string) => Effect.sync(() => console.log(line))

/** Payments made, by idempotency key: a step run again on another instance pays once. */
const payments = new Map<string, number>()

const Expense = Annotation.Root({
  amount: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const expenses = Workflow.make({
  name: "expense",
  version: "1",
  // Typed payloads: the input is decoded before anything is written, the output when it is handed back.
  input: Schema.Struct({ amount: Schema.Number, log: Schema.Array(Schema.String) }),
  output: Schema.Struct({ amount: Schema.Number, log: Schema.Array(Schema.String) }),
  decision: Schema.Literals(["approved", "rejected"]),
  graph: new StateGraph(Expense)
    .addNode("draft", Workflow.step(async (s: typeof Expense.State, ctx) => {
      console.log(`  [${ctx.instanceId}] draft: expense of ${s.amount} written up`)
      return { log: [`drafted on ${ctx.instanceId}`] }
    }))
    .addNode("approve", Workflow.step(async (s: typeof Expense.State, ctx) => {
      console.log(`  [${ctx.instanceId}] approve: asking a human about ${s.amount}`)
      const decision = interrupt({ question: `Pay ${s.amount}?` }) as string
      console.log(`  [${ctx.instanceId}] approve: the answer is "${decision}"`)
      return { log: [`${decision} on ${ctx.instanceId}`] }
    }))
    .addNode("send", Workflow.step(async (s: typeof Expense.State, ctx) => {
      if (!payments.has(ctx.idempotencyKey)) payments.set(ctx.idempotencyKey, s.amount)
      console.log(`  [${ctx.instanceId}] send: paid ${s.amount} (idempotency key …${ctx.idempotencyKey.slice(-12)})`)
      return { log: [`paid on ${ctx.instanceId}`] }
    }))
    .addEdge(START, "draft")
    .addEdge("draft", "approve")
    .addEdge("approve", "send")
    .addEdge("send", END)
})

/** One instance: its own connection to the shared file, its own runtime. */
const instance = (instanceId: string) =>
  Baton.layer({ workflows: [expenses], instanceId }).pipe(Layer.provide(SqliteStores.layer({ path })))

const pauseAndResume = Effect.gen(function*() {
  const a = Context.get(yield* Layer.build(instance("A")), Baton.Baton)
  const b = Context.get(yield* Layer.build(instance("B")), Baton.Baton)
  yield* say(`Two instances, A and B, share ${path}\n\n1. A starts the expense workflow:`)
  const handle = yield* a.start(expenses, { amount: 120, log: [] })
  yield* say(`   → handle: execution ${handle.executionId} on thread ${handle.threadId} (recorded and leased by A)`)
  const rested = yield* b.await(handle)
  yield* say(`\n2. B awaits it: ${rested._tag}`)
  const status = yield* b.status(handle.executionId)
  yield* say(`   B reads its status: ${status.workflowName} v${status.workflowVersion}, ${status.status}`)
  const pauses = yield* b.pendingPauses({ threadId: handle.threadId })
  const pause = pauses[0]
  if (pause === undefined) return yield* Effect.die(new Error("expected the workflow to pause"))
  yield* say(`   B reads the thread's pending pauses: ${JSON.stringify(pause.payload)} (pause ${pause.pauseId})\n\n3. B answers the pause:`)
  yield* b.resume({ pauseId: pause.pauseId, decision: "approved" })
  const done = yield* a.await(handle)
  if (done._tag !== "Finished") return yield* Effect.die(new Error("expected the workflow to finish"))
  yield* say(`   → A awaits it: finished, ${done.output.log.join(", ")}`)
  yield* say(`   payments made: ${payments.size} (of ${[...payments.values()].join(", ")})`)
  const page = yield* a.list({ workflow: "expense" })
  yield* say(`   A lists the expense executions: ${page.executions.map((e) => `${e.executionId} ${e.status}`).join("; ")}`)
})

const takeover = Effect.gen(function*() {
  const leasesA = Context.get(yield* Layer.build(SqliteStores.layerLeaseStore({ path })), LeaseStore.LeaseStore)
  const leasesB = Context.get(yield* Layer.build(SqliteStores.layerLeaseStore({ path })), LeaseStore.LeaseStore)
  const lease = 30_000
  yield* say("\n4. Leases on a TestClock (the way tests drive baton):")
  const now = () => Clock.currentTimeMillis
  const heldByA = yield* leasesA.acquire("default", "tree-1", "A", lease, yield* now())
  yield* say(`   A acquires tree-1: ${Option.match(heldByA, { onNone: () => "refused", onSome: (l) => `held, epoch ${l.epoch}` })}`)
  const refused = yield* leasesB.acquire("default", "tree-1", "B", lease, yield* now())
  yield* say(`   B tries tree-1:    ${Option.isNone(refused) ? "refused (A holds it)" : "held?!"}`)
  yield* say("   A goes silent (no renewal)… the clock passes 30 s")
  yield* TestClock.adjust("30 seconds")
  const heldByB = yield* leasesB.acquire("default", "tree-1", "B", lease, yield* now())
  yield* say(`   B tries tree-1:    ${Option.match(heldByB, { onNone: () => "refused", onSome: (l) => `taken over, epoch ${l.epoch}` })}`)
  if (Option.isSome(heldByA)) {
    const renewed = yield* leasesA.renew(heldByA.value, lease, yield* now())
    yield* say(`   A wakes and renews its epoch-${heldByA.value.epoch} lease: ${renewed ? "ok?!" : "refused — its writes are fenced off"}`)
  }
}).pipe(Effect.provide(TestClock.layer()))

const main = Effect.scoped(Effect.andThen(pauseAndResume, takeover)).pipe(
  Effect.ensuring(Effect.sync(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  }))
)

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
