/**
 * One instance, as its own process, for handover tests and `npm run
 * bench:handover`: it runs a two-step job (`one`, then `long`, a step that
 * sleeps a minute) over a shared SQLite file or Postgres schema and reports,
 * with wall-clock times, every step it starts. Commands on stdin:
 *
 *   execute <threadId>   start an execution on that thread
 *   close <millis>       close gracefully with that timeout, print `closed <t>`; then
 *   reopen               start another instance in this process (id `<id>-<n>`), or
 *   (any other line)     exit
 *
 * Output lines: `<id> ready`, `<id> step <node> <threadId> <rootExecutionId> <t>`, `<id> closed <t>`,
 * and `<id> woken <rootExecutionId> <t>` whenever this process's wake-up hub hears of a lease
 * release (its own, or another process's by NOTIFY or the SQLite poll), and
 * `<id> path <rootExecutionId> <statements>` at a step of a tree it heard
 * released: the SQL statements this process ran in between
 * (t: milliseconds since the epoch, fractional).
 *
 * Usage: node test/e2e/handoverWorker.ts <sqlite|pg> <path|schema> <instance id> [lease ms] [sweep ms] [wakeups on|off]
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Duration, Effect, Layer } from "effect"
import { Statement } from "effect/sql"
import { createInterface } from "node:readline"
import { PgStores } from "../../layers/pg/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { LeaseWakeups, type LeaseWakeupsShape, makeHub } from "../../src/stores/LeaseWakeups.ts"

const [kind, target, instanceId, leaseArg, sweepArg, wakeupsArg] = process.argv.slice(2)
if ((kind !== "sqlite" && kind !== "pg") || target === undefined || instanceId === undefined) {
  throw new Error("usage: handoverWorker.ts <sqlite|pg> <path|schema> <instance id> [lease ms] [sweep ms] [wakeups on|off]")
}
const wakeups = wakeupsArg !== "off"
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const now = () => performance.timeOrigin + performance.now()
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

/** SQL statements this process ran (effect's statement transformer sees each one). */
let statements = 0
const counting: Statement.Transformer = (statement) => Effect.sync(() => (statements++, statement))
/** The statement count when this process heard of a tree's release. */
const heardAt = new Map<string, number>()

/** The process's wake-up hub, saying when it hears of a release (where a handover's time goes). */
const hub = makeHub()
const saying: LeaseWakeupsShape = {
  released: (tenantId, root) => {
    say(`woken ${root} ${now()}`)
    heardAt.set(root, statements)
    hub.released(tenantId, root)
  },
  next: hub.next
}

const stores = (kind === "sqlite"
  ? SqliteStores.layer({ path: target, wakeups })
  : PgStores.layer({ url, schema: target, maxConnections: 4, wakeups, applicationName: `handover-${target}` })).pipe(
    Layer.provide(Layer.succeed(LeaseWakeups, saying))
  )

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

/** The threads this process started: their `long` step runs long here. */
const started = new Set<string>()

const report = (node: string) => (_s: typeof State.State, ctx: Workflow.StepContext) =>
  Effect.sync(() => {
    say(`step ${node} ${ctx.threadId} ${ctx.rootExecutionId} ${now()}`)
    const heard = heardAt.get(ctx.rootExecutionId)
    if (heard !== undefined) say(`path ${ctx.rootExecutionId} ${statements - heard}`)
    heardAt.delete(ctx.rootExecutionId)
  })

const job = Workflow.make({
  name: "handover-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("one", Workflow.effectStep((s: typeof State.State, ctx) => Effect.as(report("one")(s, ctx), { log: ["one"] })))
    .addNode("long", Workflow.effectStep((s: typeof State.State, ctx) =>
      report("long")(s, ctx).pipe(
        // Long where it was started (the window to close or kill in); short once handed over, so moved trees end.
        Effect.andThen(Effect.sleep(started.has(ctx.threadId) ? "1 minute" : "10 millis")),
        Effect.as({ log: ["long"] })
      )
    ))
    .addEdge(START, "one")
    .addEdge("one", "long")
    .addEdge("long", END)
})

/** The commands read from stdin, one at a time. */
const commands: Array<string> = []
let wake: (() => void) | undefined
createInterface({ input: process.stdin }).on("line", (line) => {
  commands.push(line.trim())
  wake?.()
})
const nextCommand = Effect.callback<string>((resume) => {
  const take = () => {
    const line = commands.shift()
    if (line === undefined) return false
    wake = undefined
    resume(Effect.succeed(line))
    return true
  }
  if (!take()) wake = take
})

/** One instance: serves `execute` until `close`; answers whether to open another one. */
const serve = (generation: number) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      Baton.layer({
        workflows: [job],
        instanceId: generation === 0 ? instanceId : `${instanceId}-${generation}`,
        lease: Duration.millis(Number(leaseArg ?? 2000)),
        sweepInterval: Duration.millis(Number(sweepArg ?? 5000))
      }).pipe(Layer.provide(stores))
    )
    const baton = Context.get(context, Baton.Baton)
    say("ready")
    while (true) {
      const [command, arg] = (yield* nextCommand).split(" ")
      if (command === "execute" && arg !== undefined) {
        started.add(arg)
        yield* Effect.forkDetach(baton.execute(job, { log: [] }, { threadId: arg }).pipe(
          Effect.catch((e) => Effect.sync(() => say(`execute ${arg} failed: ${e._tag}: ${e.message}`)))
        ))
      } else if (command === "close") {
        yield* baton.close({ timeout: Duration.millis(Number(arg ?? 500)) })
        say(`closed ${now()}`)
        // `reopen`: another instance in this process (its stores too); anything else ends the process.
        return (yield* nextCommand) === "reopen"
      }
    }
  }))

const main = Effect.gen(function*() {
  for (let generation = 0; yield* serve(generation); generation++) {}
})

Effect.runPromise(Effect.scoped(main).pipe(Effect.provideService(Statement.CurrentTransformer, counting))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
