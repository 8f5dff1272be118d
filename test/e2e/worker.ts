/**
 * One instance of a small app, as its own process, for the multi-process
 * test: it starts `count` executions of a three-step job over a shared SQLite
 * file and keeps running (its recovery sweep continues other processes'
 * orphans) until SIGTERM, which closes it gracefully.
 *
 * Usage: node test/e2e/worker.ts <sqlite path> <instance id> <count>
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Deferred, Effect, Layer } from "effect"
import { DatabaseSync } from "node:sqlite"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Baton } from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [path, instanceId, countArg] = process.argv.slice(2)
if (path === undefined || instanceId === undefined) throw new Error("usage: worker.ts <path> <instance id> <count>")
const count = Number(countArg ?? 0)

// The outside world: a side-effect ledger keyed by idempotency key, in the same file.
const ledger = new DatabaseSync(path)
ledger.exec("PRAGMA busy_timeout = 5000")
ledger.exec(
  "CREATE TABLE IF NOT EXISTS e2e_effects (key TEXT PRIMARY KEY, root TEXT NOT NULL, node TEXT NOT NULL, instance TEXT NOT NULL, applied INTEGER NOT NULL)"
)
const apply = ledger.prepare(
  "INSERT INTO e2e_effects (key, root, node, instance, applied) VALUES (?, ?, ?, ?, 1) ON CONFLICT (key) DO UPDATE SET applied = applied + 1"
)
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const State = Annotation.Root({ n: Annotation<number>(), log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

const effect = (node: string) =>
  Workflow.effectStep((s: typeof State.State, ctx: Workflow.StepContext) =>
    Effect.gen(function*() {
      say(`step ${node} ${s.n} started`)
      // A step that takes a while: the window in which a process is killed mid-step.
      yield* Effect.sleep(node === "work" ? "400 millis" : "20 millis")
      if (!ctx.leaseHeld()) return yield* Effect.die(new Error("lease lost mid-step"))
      apply.run(ctx.idempotencyKey, ctx.rootExecutionId, node, ctx.instanceId)
      return { log: [`${node}@${ctx.instanceId}`] }
    })
  )

const job = Workflow.make({
  name: "e2e-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("fetch", effect("fetch"))
    .addNode("work", effect("work"))
    .addNode("store", effect("store"))
    .addEdge(START, "fetch")
    .addEdge("fetch", "work")
    .addEdge("work", "store")
    .addEdge("store", END)
})

const main = Effect.gen(function*() {
  const context = yield* Layer.build(
    Baton.layer({ workflows: [job], instanceId, lease: "2 seconds", sweepInterval: "500 millis" }).pipe(
      Layer.provide(SqliteStores.layer({ path }))
    )
  )
  const baton = Context.get(context, Baton)
  const stop = yield* Deferred.make<void>()
  process.on("SIGTERM", () => Deferred.doneUnsafe(stop, Effect.void))
  say("ready")
  for (let n = 0; n < count; n++) {
    yield* Effect.forkScoped(baton.execute(job, { n, log: [] }).pipe(
      Effect.tap((out) => Effect.sync(() => say(`execution ${n} ${out._tag}`))),
      Effect.catch((e) => Effect.sync(() => say(`execution ${n} ${e._tag}`)))
    ))
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
