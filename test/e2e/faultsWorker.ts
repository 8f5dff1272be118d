/**
 * One instance, as its own process, for the fault probes of child executions
 * and undo (`faults.test.ts`), over a Postgres schema, built only from the
 * package's entry points. It registers two workflows:
 *
 * - `fan`: step `fan` launches 20 `leaf` children with placement `"any"` and
 *   then applies its effect; step `after` applies its effect. A `leaf` child's
 *   one step `leaf` takes 400 ms, then applies its effect.
 * - `undo-job`: Promise steps `a`, `b`, `c` apply their effects and register undos,
 *   step `d` fails, so the undos run c, b, a. The undo of `b` takes a minute
 *   on the process that started the execution (the window to SIGKILL it in),
 *   10 ms elsewhere.
 *
 * Every effect is applied under its idempotency key into a ledger the test
 * makes (the outside world dedups by key): `f_effects` (steps) and `f_comp`
 * (undos), keyed; every run that reached its effect is also recorded in
 * `f_runs` / `f_comp_runs` (one row a run, never deduplicated).
 *
 * Usage: node test/e2e/faultsWorker.ts <schema> <instance id> <max claimed children>
 *        (URL: BATON_TEST_PG_URL or the local test database)
 *
 * Commands on stdin: `fan <thread>`, `undo <thread>` (start an execution and
 * await it here), `list` (prints `<id> list <json>`: every execution through
 * `Baton.list`), `status <executionId>` (prints `<id> status <json>`).
 *
 * Output lines: `<id> ready`, `<id> run <node> <key>` when a step's body
 * starts, `<id> undo-run <node> <key> <attempt>` when an undo's try starts,
 * `<id> finished <thread>` / `<id> failed <thread> <tag>` when an awaited
 * execution call ends.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { createInterface } from "node:readline"
import { PgClient, PgStores } from "../../layers/pg/index.ts"
import { Baton, Workflow } from "../../src/index.ts"

const [schema, instanceId, maxClaimedArg] = process.argv.slice(2)
if (schema === undefined || instanceId === undefined || maxClaimedArg === undefined) {
  throw new Error("usage: faultsWorker.ts <schema> <instance id> <max claimed children>")
}
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)
const json = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === "bigint" ? Number(v) : v))

const pgOptions = { url, schema, applicationName: `faults-${schema}-${instanceId}` }
const stores = PgStores.layer({ ...pgOptions, maxConnections: 6 })
let ledger: SqlClient.SqlClient | undefined

/** Applies an effect under its key (once per key), and records this run of it; retried over lost connections. */
const apply = (table: "f_effects" | "f_comp", key: string, node: string, executionId: string) =>
  Effect.suspend(() =>
    Effect.andThen(
      ledger!.unsafe(`INSERT INTO ${table === "f_effects" ? "f_runs" : "f_comp_runs"} (key, node, instance) VALUES ($1, $2, $3)`, [key, node, instanceId]),
      ledger!.unsafe(`INSERT INTO ${table} (key, node, execution, instance) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING`, [
        key,
        node,
        executionId,
        instanceId
      ])
    )
  ).pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 50 }))

// ---- children ----

const LeafState = Annotation.Root({ n: Annotation<number>(), done: Annotation<boolean>() })
const leafStep = Workflow.effectStep((s: typeof LeafState.State, ctx: Workflow.StepContext) =>
  Effect.gen(function*() {
    say(`run leaf ${ctx.idempotencyKey}`)
    yield* Effect.sleep("400 millis")
    if (!ctx.leaseHeld()) return yield* Effect.die(new Error("lease lost mid-step"))
    yield* apply("f_effects", ctx.idempotencyKey, "leaf", ctx.executionId)
    return { n: s.n, done: true }
  })
)
const Leaf = Workflow.make({
  name: "leaf",
  version: "1",
  graph: new StateGraph(LeafState).addNode("leaf", leafStep).addEdge(START, "leaf").addEdge("leaf", END),
  steps: { leafStep }
})

const FanState = Annotation.Root({ count: Annotation<number>(), seen: Annotation<number>() })
const fanStep = Workflow.effectStep((s: typeof FanState.State, ctx: Workflow.StepContext) =>
  Effect.gen(function*() {
    say(`run fan ${ctx.idempotencyKey}`)
    const outs = yield* Workflow.launchChildren(ctx, Leaf, Array.from({ length: s.count }, (_, n) => ({ n })), { placement: "any" })
    // After the launch: the step runs again from its start once the children ended.
    yield* apply("f_effects", ctx.idempotencyKey, "fan", ctx.executionId)
    return { seen: outs.filter((o) => (o as { done?: boolean }).done === true).length }
  })
)
const afterStep = Workflow.effectStep((_s: typeof FanState.State, ctx: Workflow.StepContext) =>
  Effect.gen(function*() {
    say(`run after ${ctx.idempotencyKey}`)
    yield* apply("f_effects", ctx.idempotencyKey, "after", ctx.executionId)
    return {}
  })
)
const Fan = Workflow.make({
  name: "fan",
  version: "1",
  children: [Leaf],
  graph: new StateGraph(FanState).addNode("fan", fanStep).addNode("after", afterStep)
    .addEdge(START, "fan").addEdge("fan", "after").addEdge("after", END),
  steps: { fanStep, afterStep }
})

// ---- undo ----

/** The threads this process started: the undo of `b` is slow here. */
const started = new Set<string>()

const UndoState = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })
// Promise steps and undos (the Effect form is covered by test/runtime/undo/UndoEffectClock.test.ts, which this probe
// led to: an Effect undo reading the live Clock used to fail every try).
const undoable = (node: string) =>
  Workflow.step(
    async (_s: typeof UndoState.State, ctx: Workflow.StepContext) => {
      say(`run ${node} ${ctx.idempotencyKey}`)
      await Effect.runPromise(apply("f_effects", ctx.idempotencyKey, node, ctx.executionId))
      return { log: [node] }
    },
    {
      undo: async (_result, ctx) => {
        say(`undo-run ${node} ${ctx.idempotencyKey} ${ctx.attempt}`)
        // Real time in a real process: the window the test kills the holder in.
        await new Promise((resolve) => setTimeout(resolve, node === "b" && started.has(ctx.threadId) ? 60_000 : 10))
        if (!ctx.leaseHeld()) throw new Error("lease lost mid-undo")
        await Effect.runPromise(apply("f_comp", ctx.idempotencyKey, node, ctx.executionId))
      }
    }
  )
const a = undoable("a")
const b = undoable("b")
const c = undoable("c")
const d = Workflow.effectStep((_s: typeof UndoState.State, ctx: Workflow.StepContext) =>
  Effect.gen(function*() {
    say(`run d ${ctx.idempotencyKey}`)
    return yield* Effect.fail(new Error("d fails, so a, b and c are compensated"))
  })
)
const UndoJob = Workflow.make({
  name: "undo-job",
  version: "1",
  graph: new StateGraph(UndoState).addNode("a", a).addNode("b", b).addNode("c", c).addNode("d", d)
    .addEdge(START, "a").addEdge("a", "b").addEdge("b", "c").addEdge("c", "d").addEdge("d", END),
  steps: { d }
})

const main = Effect.gen(function*() {
  const context = yield* Layer.build(
    Baton.layer({
      workflows: [Fan, UndoJob],
      instanceId,
      lease: "2 seconds",
      sweepInterval: "500 millis",
      waitPoll: "200 millis",
      maxClaimedChildren: Number(maxClaimedArg)
    }).pipe(Layer.provide(stores))
  )
  const baton = Context.get(context, Baton.Baton)
  ledger = Context.get(yield* Layer.build(PgClient.layer({ ...pgOptions, maxConnections: 2 })), SqlClient.SqlClient)

  const run = (thread: string, call: Effect.Effect<unknown, { readonly _tag: string }>) =>
    call.pipe(
      Effect.matchEffect({
        onSuccess: () => Effect.sync(() => say(`finished ${thread}`)),
        onFailure: (e) => Effect.sync(() => say(`failed ${thread} ${e._tag}`))
      })
    )
  const listAll = Effect.gen(function*() {
    const all: Array<Baton.ExecutionSummary> = []
    let cursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const p = yield* baton.list({ limit: 1000, ...(cursor === undefined ? {} : { cursor }) })
      all.push(...p.executions)
      if (p.next === null) break
      cursor = p.next
    }
    return all
  })
  const report = <A>(label: string, read: Effect.Effect<A, { readonly _tag: string }>) =>
    read.pipe(
      Effect.matchEffect({
        onSuccess: (x) => Effect.sync(() => say(`${label} ${json(x)}`)),
        onFailure: (e) => Effect.sync(() => say(`${label} ${json({ error: e._tag })}`))
      })
    )

  say("ready")
  const lines = createInterface({ input: process.stdin })
  yield* Effect.callback<never>(() => {
    lines.on("line", (line) => {
      const [command, arg] = line.trim().split(" ")
      if (command === "fan" && arg !== undefined) {
        Effect.runFork(run(arg, baton.execute(Fan, { count: 20, seen: 0 }, { threadId: arg })))
      } else if (command === "undo" && arg !== undefined) {
        started.add(arg)
        Effect.runFork(run(arg, baton.execute(UndoJob, { log: [] }, { threadId: arg })))
      } else if (command === "list") {
        Effect.runFork(report("list", listAll))
      } else if (command === "status" && arg !== undefined) {
        Effect.runFork(report("status", baton.status(arg)))
      }
    })
  })
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
