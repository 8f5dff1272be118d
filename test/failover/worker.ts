/**
 * One instance of a small app, as its own process, for the failover test: a
 * job of fetch → fan (two children, placement "any", so either instance may
 * run them) → approve (a pause) → store, over `PgStores` on the multi-host
 * URL of a primary and a standby. Every step's side effect goes to a ledger
 * in the same database, keyed by idempotency key (a key applied twice is
 * kept once, as an outside system that dedups by it would), and every run of
 * a step is recorded. Calls are retried on a `StoreError` with their
 * `requestKey`, as a caller should; each failure is printed with its kind.
 * A probe reads `list` every 100 ms and prints when it starts and stops
 * failing. Every line ends with the wall time in ms.
 *
 * stdin: `start <n> <prefix>` starts n executions (threads <prefix>-0 …);
 *        `resume <pauseId>` answers a pause here.
 *
 * Usage: node test/failover/worker.ts <url> <instance id>
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Context, Deferred, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { createInterface } from "node:readline"
import { PgClient, PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [url, instanceId] = process.argv.slice(2)
if (url === undefined || instanceId === undefined) throw new Error("usage: worker.ts <url> <instance id>")
const now = () => (performance.timeOrigin + performance.now()).toFixed(0)
const say = (line: string) => process.stdout.write(`${instanceId} ${line} ${now()}\n`)

let ledger: SqlClient.SqlClient | undefined
let attempts = 0
const apply = (ctx: Workflow.StepContext, node: string) => {
  const attempt = `${instanceId}-${process.pid}-${++attempts}`
  return Effect.suspend(() =>
    Effect.andThen(
      ledger!.unsafe("INSERT INTO fo_runs (key, attempt) VALUES ($1, $2) ON CONFLICT DO NOTHING", [ctx.idempotencyKey, attempt]),
      ledger!.unsafe("INSERT INTO fo_effects (key, root, node, instance) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING", [
        ctx.idempotencyKey,
        ctx.rootExecutionId,
        node,
        ctx.instanceId
      ])
    )
  ).pipe(Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 300 }))
}

const effect = <S>(node: string, after: (s: S) => Partial<S> = () => ({})) =>
  Workflow.effectStep((s: S, ctx: Workflow.StepContext) =>
    Effect.gen(function*() {
      say(`step ${node} ${ctx.rootExecutionId}`)
      yield* Effect.sleep(node === "work" ? "300 millis" : "20 millis")
      yield* apply(ctx, node)
      return after(s)
    })
  )

const ChildState = Annotation.Root({ n: Annotation<number>(), doubled: Annotation<number>() })
const child = Workflow.make({
  name: "fo-child",
  version: "1",
  graph: new StateGraph(ChildState).addNode("work", effect<{ n: number; doubled: number }>("work", (s) => ({ doubled: s.n * 2 })))
    .addEdge(START, "work").addEdge("work", END)
})

const State = Annotation.Root({ n: Annotation<number>(), results: Annotation<Array<number>>(), decision: Annotation<string>() })
const job = Workflow.make({
  name: "fo-job",
  version: "1",
  children: [child],
  graph: new StateGraph(State)
    .addNode("fetch", effect("fetch"))
    .addNode("fan", Workflow.step(async (s: typeof State.State, ctx) => {
      const outs = await ctx.launch(child, [{ n: s.n }, { n: s.n + 100 }], { placement: "any" })
      return { results: outs.map((o) => (o as { doubled: number }).doubled) }
    }))
    .addNode("approve", Workflow.step((_s: typeof State.State) => ({ decision: String(interrupt({ q: "ok?" })) })))
    .addNode("store", effect("store"))
    .addEdge(START, "fetch")
    .addEdge("fetch", "fan")
    .addEdge("fan", "approve")
    .addEdge("approve", "store")
    .addEdge("store", END)
})

/** A call retried with its request key while it fails with a StoreError; each failure said with its kind. */
const persist = <A extends { readonly _tag: string }, E extends { readonly _tag: string }, R>(label: string, call: Effect.Effect<A, E, R>) =>
  call.pipe(
    Effect.tapError((e) => Effect.sync(() => say(`fail ${label} ${e._tag} ${(e as any).kind ?? "-"} ${(e as any).isRetryable ?? "-"}`))),
    Effect.retry({ while: (e) => e._tag === "StoreError", schedule: Schedule.spaced("250 millis"), times: 400 }),
    Effect.tap((out) => Effect.sync(() => say(`${out._tag} ${label}`))),
    Effect.catch((e) => Effect.sync(() => say(`gave-up ${label} ${e._tag}`)))
  )

const main = Effect.gen(function*() {
  const stores = PgStores.layer({ url, maxConnections: 4, connectTimeout: "2 seconds" })
  const context = yield* Layer.build(
    Baton.layer({ workflows: [job, child], instanceId, lease: "5 seconds", sweepInterval: "1 second", waitPoll: "200 millis" }).pipe(
      Layer.provideMerge(stores)
    )
  )
  const baton = Context.get(context, Baton.Baton)
  ledger = Context.get(yield* Layer.build(PgClient.layer({ url, maxConnections: 2, connectTimeout: "2 seconds" })), SqlClient.SqlClient)
  const stop = yield* Deferred.make<void>()
  process.on("SIGTERM", () => Deferred.doneUnsafe(stop, Effect.void))
  createInterface({ input: process.stdin }).on("line", (line) => {
    const [command, a, b] = line.trim().split(" ")
    if (command === "resume" && a !== undefined) {
      Effect.runFork(persist(`resume ${a}`, baton.resume({ pauseId: a, decision: `yes@${instanceId}`, requestKey: `resume-${a}` })))
    }
    if (command === "start" && a !== undefined && b !== undefined) {
      for (let n = 0; n < Number(a); n++) {
        const threadId = `${b}-${n}`
        Effect.runFork(persist(`execute ${threadId}`, baton.execute(job, { n, results: [], decision: "" }, { threadId, requestKey: `exec-${threadId}` })))
      }
    }
  })
  // The probe: one read every 100 ms; said when it starts and stops failing.
  let failing = false
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(
    baton.list({ limit: 1 }).pipe(
      Effect.tap(() => Effect.sync(() => failing && (failing = false, say("probe ok")))),
      Effect.catch((e) =>
        Effect.sync(() => {
          if (!failing) say(`probe fail ${e._tag} ${(e as any).kind ?? "-"} ${(e as any).isRetryable ?? "-"}`)
          failing = true
        })
      )
    ),
    Effect.sleep("100 millis")
  )))
  say("ready")
  yield* Deferred.await(stop)
  yield* baton.close({ timeout: "3 seconds" })
  say("closed")
})

Effect.runPromise(Effect.scoped(main)).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
