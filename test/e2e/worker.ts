/**
 * One instance of a small app, as its own process, for the multi-process
 * tests: it starts `count` executions of a four-step job (fetch, work, an
 * approval pause, store) over a shared store — a SQLite file or a Postgres
 * schema — and keeps running (its recovery sweep continues other processes'
 * orphans) until SIGTERM, which closes it gracefully. A line `resume <pauseId>`
 * on stdin answers that pause from this process.
 *
 * Usage: node test/e2e/worker.ts sqlite <path> <instance id> <count>
 *        node test/e2e/worker.ts pg <schema> <instance id> <count>   (URL: BATON_TEST_PG_URL or the local test database)
 *
 * The side-effect ledger (`e2e_effects`, made by the test) is keyed by
 * idempotency key, as an outside system that dedups by it would be; every run
 * of a step is recorded in `e2e_runs` (a write retried after a lost
 * connection carries the same attempt id and is one run).
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Cause, Context, Deferred, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { createInterface } from "node:readline"
import { PgClient, PgStores } from "../../layers/pg/index.ts"
import { SqliteClient, SqliteStores } from "../../layers/sqlite/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [kind, target, instanceId, countArg] = process.argv.slice(2)
if ((kind !== "sqlite" && kind !== "pg") || target === undefined || instanceId === undefined) {
  throw new Error("usage: worker.ts <sqlite|pg> <path|schema> <instance id> <count>")
}
const count = Number(countArg ?? 0)
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const pgOptions = { url, schema: target, applicationName: `e2e-${target}` }
const stores = kind === "sqlite" ? SqliteStores.layer({ path: target, wakeups: true }) : PgStores.layer({ ...pgOptions, maxConnections: 4 })
/** The ledger's own connection. */
const ledgerClient = kind === "sqlite" ? SqliteClient.layer({ path: target }) : PgClient.layer({ ...pgOptions, maxConnections: 2 })

const State = Annotation.Root({ n: Annotation<number>(), log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

const params = (n: number) => Array.from({ length: n }, (_, i) => (kind === "pg" ? `$${i + 1}` : "?")).join(", ")
/** The outside world dedups by key: the first run of a key applies it, every run is recorded. */
const applySql = `INSERT INTO e2e_effects (key, root, node, instance, attempt) VALUES (${params(5)}) ON CONFLICT (key) DO NOTHING`
const runSql = `INSERT INTO e2e_runs (key, attempt) VALUES (${params(2)}) ON CONFLICT DO NOTHING`
let ledger: SqlClient.SqlClient | undefined

/** Applies a step's side effect under its idempotency key, retried over lost connections. */
const apply = (ctx: Workflow.StepContext, node: string, attempt: string) =>
  Effect.suspend(() =>
    Effect.andThen(
      ledger!.unsafe(runSql, [ctx.idempotencyKey, attempt]),
      ledger!.unsafe(applySql, [ctx.idempotencyKey, ctx.rootExecutionId, node, ctx.instanceId, attempt])
    )
  ).pipe(
    // On the step's own Clock: a Schedule there works like anywhere else.
    Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 50 })
  )

let attempts = 0
const effect = (node: string) =>
  Workflow.effectStep((s: typeof State.State, ctx: Workflow.StepContext) =>
    Effect.gen(function*() {
      say(`step ${node} ${s.n} started`)
      // A step that takes a while: the window in which a process is killed mid-step.
      yield* Effect.sleep(node === "work" ? "400 millis" : "20 millis")
      if (!ctx.leaseHeld()) return yield* Effect.die(new Error("lease lost mid-step"))
      yield* apply(ctx, node, `${instanceId}-${process.pid}-${++attempts}`)
      return { log: [`${node}@${ctx.instanceId}`] }
    })
  )

const job = Workflow.make({
  name: "e2e-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("fetch", effect("fetch"))
    .addNode("work", effect("work"))
    .addNode("approve", Workflow.step((_s: typeof State.State) => ({ log: [`approve:${String(interrupt({ q: "ok?" }))}`] })))
    .addNode("store", effect("store"))
    .addEdge(START, "fetch")
    .addEdge("fetch", "work")
    .addEdge("work", "approve")
    .addEdge("approve", "store")
    .addEdge("store", END)
})

/** Retries what a lost connection failed; a call that finds its thread already recorded is done (the sweep has it). */
const persist = <A, E extends { readonly _tag: string }, R>(label: string, call: Effect.Effect<A, E, R>) =>
  call.pipe(
    Effect.tapError((e) => Effect.sync(() => say(`${label} retry after ${e._tag}`))),
    Effect.retry({ while: (e) => e._tag === "StoreError", schedule: Schedule.spaced("200 millis"), times: 100 }),
    Effect.tap((out) => Effect.sync(() => say(`${label} ${(out as { _tag?: string })._tag ?? "ok"}`))),
    Effect.catch((e) => Effect.sync(() => say(`${label} ${e._tag}`))),
    // A defect is never expected: said on stderr, which the test prints when an execution is missing.
    Effect.tapCause((cause) => Cause.hasDies(cause) ? Effect.sync(() => console.error(`${label} died: ${Cause.pretty(cause)}`)) : Effect.void)
  )

const main = Effect.gen(function*() {
  const context = yield* Layer.build(
    Baton.layer({ workflows: [job], instanceId, lease: "2 seconds", sweepInterval: "500 millis" }).pipe(Layer.provideMerge(stores))
  )
  const baton = Context.get(context, Baton.Baton)
  ledger = Context.get(yield* Layer.build(ledgerClient), SqlClient.SqlClient)
  const stop = yield* Deferred.make<void>()
  process.on("SIGTERM", () => Deferred.doneUnsafe(stop, Effect.void))
  createInterface({ input: process.stdin }).on("line", (line) => {
    const [command, pauseId] = line.trim().split(" ")
    if (command !== "resume" || pauseId === undefined) return
    Effect.runFork(persist(`resume ${pauseId}`, baton.resume({ pauseId, decision: `yes@${instanceId}` })))
  })
  say("ready")
  for (let n = 0; n < count; n++) {
    yield* Effect.forkScoped(persist(`execution ${n}`, baton.execute(job, { n, log: [] }, { threadId: `t-${instanceId}-${n}` })))
  }
  yield* Deferred.await(stop)
  say("closing")
  yield* baton.close({ timeout: "5 seconds" })
  say("closed")
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
