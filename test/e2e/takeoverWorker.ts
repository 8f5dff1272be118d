/**
 * One instance, as its own process, for the crash takeover tests and `npm
 * run bench:takeover`: the default lease (30 s) and sweep, over a shared
 * SQLite file or Postgres schema. Its job runs `one`, then `long` (a minute
 * where it was started: the window to kill in; 10 ms once taken elsewhere),
 * then `done`. Commands on stdin:
 *
 *   execute <threadId>        start an execution on that thread
 *   many <n> <prefix>         start n executions, threads <prefix>-0 … <prefix>-(n-1)
 *
 * Output lines (t: wall-clock milliseconds since the epoch, fractional):
 * `<id> ready <crash-takeover readiness message>`,
 * `<id> run <node> <threadId> <idempotencyKey> <t>` when a step starts,
 * `<id> effect <node> <threadId> <idempotencyKey> <t>` when it applies its effect (at its end),
 * `<id> failed <threadId> <tag> <t>` when an execution call fails (e.g. LeaseLostError),
 * `<id> finished <threadId> <t>`.
 *
 * Usage: node test/e2e/takeoverWorker.ts <sqlite|pg> <path|schema|prefix=<table prefix>> <instance id>
 *        (Postgres: BATON_TEST_PG_URL or the local test database)
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer } from "effect"
import { createInterface } from "node:readline"
import { PgStores } from "../../layers/pg/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [kind, target, instanceId] = process.argv.slice(2)
if ((kind !== "sqlite" && kind !== "pg") || target === undefined || instanceId === undefined) {
  throw new Error("usage: takeoverWorker.ts <sqlite|pg> <path|schema> <instance id>")
}
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const now = () => performance.timeOrigin + performance.now()
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const stores = kind === "sqlite"
  ? SqliteStores.layer({ path: target, wakeups: true })
  : PgStores.layer({
    url,
    // `prefix=<p>`: the tables under that prefix in the default schema (a pooler such as pgbouncer refuses a
    // search_path at connect); otherwise the schema.
    ...(target.startsWith("prefix=") ? { tablePrefix: target.slice("prefix=".length) } : { schema: target }),
    applicationName: `takeover-${target.replace("prefix=", "")}-${instanceId}`
  })

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

/** The threads this process started: their `long` step runs long here. */
const started = new Set<string>()

const step = (node: string) =>
  Workflow.effectStep((_s: typeof State.State, ctx: Workflow.StepContext) =>
    Effect.gen(function*() {
      say(`run ${node} ${ctx.threadId} ${ctx.idempotencyKey} ${now()}`)
      if (node === "long") yield* Effect.sleep(started.has(ctx.threadId) ? "1 minute" : "10 millis")
      say(`effect ${node} ${ctx.threadId} ${ctx.idempotencyKey} ${now()}`)
      return { log: [node] }
    })
  )

const job = Workflow.make({
  name: "takeover-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("one", step("one"))
    .addNode("long", step("long"))
    .addNode("done", step("done"))
    .addEdge(START, "one")
    .addEdge("one", "long")
    .addEdge("long", "done")
    .addEdge("done", END)
})

const main = Effect.gen(function*() {
  const context = yield* Layer.build(Baton.layer({ workflows: [job], instanceId }).pipe(Layer.provide(stores)))
  const baton = Context.get(context, Baton.Baton)
  const readiness = yield* baton.checkReadiness
  say(`ready ${readiness.components.find((c) => c.name === "crash-takeover")?.message ?? "(no crash-takeover component)"}`)
  const execute = (thread: string) => {
    started.add(thread)
    return Effect.forkDetach(baton.execute(job, { log: [] }, { threadId: thread }).pipe(
      Effect.matchEffect({
        onSuccess: () => Effect.sync(() => say(`finished ${thread} ${now()}`)),
        onFailure: (e) => Effect.sync(() => say(`failed ${thread} ${e._tag} ${now()}`))
      })
    ))
  }
  const lines = createInterface({ input: process.stdin })
  yield* Effect.callback<never>(() => {
    lines.on("line", (line) => {
      const [command, a, b] = line.trim().split(" ")
      if (command === "execute" && a !== undefined) Effect.runFork(execute(a))
      if (command === "many" && a !== undefined && b !== undefined) {
        for (let i = 0; i < Number(a); i++) Effect.runFork(execute(`${b}-${i}`))
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
