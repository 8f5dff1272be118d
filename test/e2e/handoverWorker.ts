/**
 * One instance, as its own process, for handover tests and `npm run
 * bench:handover`: it runs a two-step job (`one`, then `long`, a step that
 * sleeps a minute) over a shared SQLite file or Postgres schema and reports,
 * with wall-clock times, every step it starts. Commands on stdin:
 *
 *   execute <threadId>   start an execution on that thread
 *   close <millis>       close gracefully with that timeout, print `closed <t>`, exit
 *
 * Output lines: `<id> ready`, `<id> step <node> <threadId> <t>`, `<id> closed <t>`
 * (t: milliseconds since the epoch, fractional).
 *
 * Usage: node test/e2e/handoverWorker.ts <sqlite|pg> <path|schema> <instance id> [lease ms] [sweep ms] [wakeups on|off]
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Deferred, Duration, Effect, Layer } from "effect"
import { createInterface } from "node:readline"
import { PgStores } from "../../layers/pg/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Baton } from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [kind, target, instanceId, leaseArg, sweepArg, wakeupsArg] = process.argv.slice(2)
if ((kind !== "sqlite" && kind !== "pg") || target === undefined || instanceId === undefined) {
  throw new Error("usage: handoverWorker.ts <sqlite|pg> <path|schema> <instance id> [lease ms] [sweep ms] [wakeups on|off]")
}
const wakeups = wakeupsArg !== "off"
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const now = () => performance.timeOrigin + performance.now()
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const stores = kind === "sqlite"
  ? SqliteStores.layer({ path: target, wakeups })
  : PgStores.layer({ url, schema: target, maxConnections: 4, wakeups, applicationName: `handover-${target}` })

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

const report = (node: string) => (_s: typeof State.State, ctx: Workflow.StepContext) =>
  Effect.sync(() => say(`step ${node} ${ctx.threadId} ${now()}`))

const job = Workflow.make({
  name: "handover-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("one", Workflow.effectStep((s: typeof State.State, ctx) => Effect.as(report("one")(s, ctx), { log: ["one"] })))
    .addNode("long", Workflow.effectStep((s: typeof State.State, ctx) =>
      report("long")(s, ctx).pipe(Effect.andThen(Effect.sleep("1 minute")), Effect.as({ log: ["long"] }))
    ))
    .addEdge(START, "one")
    .addEdge("one", "long")
    .addEdge("long", END)
})

const main = Effect.gen(function*() {
  const context = yield* Layer.build(
    Baton.layer({
      workflows: [job],
      instanceId,
      lease: Duration.millis(Number(leaseArg ?? 2000)),
      sweepInterval: Duration.millis(Number(sweepArg ?? 5000))
    }).pipe(Layer.provide(stores))
  )
  const baton = Context.get(context, Baton)
  const done = yield* Deferred.make<void>()
  createInterface({ input: process.stdin }).on("line", (line) => {
    const [command, arg] = line.trim().split(" ")
    if (command === "execute" && arg !== undefined) {
      Effect.runFork(baton.execute(job, { log: [] }, { threadId: arg }).pipe(Effect.ignore))
    } else if (command === "close") {
      Effect.runFork(baton.close({ timeout: Duration.millis(Number(arg ?? 500)) }).pipe(
        Effect.andThen(Effect.sync(() => say(`closed ${now()}`))),
        Effect.andThen(Deferred.succeed(done, void 0))
      ))
    }
  })
  say("ready")
  yield* Deferred.await(done)
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
