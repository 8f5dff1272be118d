/**
 * One instance, as its own process, for `npm run bench:timers`: sleepers
 * over a Postgres schema. With a count it starts that many trees, each
 * sleeping until an instant a few seconds ahead (spread 50 ms apart), and
 * prints `<id> started`; every process prints `<id> woke <root> <late>` when
 * the step after a sleep runs here (`late`: milliseconds of real time after
 * the sleep's instant).
 *
 * Usage: node test/e2e/timersWorker.ts <database url> <schema> <instance id> [count]
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Effect, Layer } from "effect"
import { createInterface } from "node:readline"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [url, schema, instanceId, countArg] = process.argv.slice(2)
if (url === undefined || schema === undefined || instanceId === undefined) {
  throw new Error("usage: timersWorker.ts <database url> <schema> <instance id> [count]")
}
const count = Number(countArg ?? 0)
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const State = Annotation.Root({ at: Annotation<number>() })
const sleeper = Workflow.make({
  name: "timers-bench-sleeper",
  version: "1",
  graph: new StateGraph(State)
    .addNode("nap", Workflow.sleepNode<{ at: number }>({ until: (s) => s.at }))
    .addNode("woke", Workflow.step(async (s: { at: number }, ctx) => (say(`woke ${ctx.rootExecutionId} ${Date.now() - s.at}`), {})))
    .addEdge(START, "nap").addEdge("nap", "woke").addEdge("woke", END)
})

const program = Effect.gen(function*() {
  const baton = yield* Baton.Baton
  say("ready")
  if (count > 0) {
    const first = yield* Effect.promise(() =>
      new Promise<number>((resolve) => createInterface({ input: process.stdin }).on("line", (l) => l.startsWith("go ") && resolve(Number(l.slice(3)))))
    )
    yield* Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => baton.start(sleeper, { at: first + i * 50 }), {
      concurrency: 4,
      discard: true
    })
    say("started")
  }
  return yield* Effect.never
}).pipe(
  Effect.provide(Baton.layer({ workflows: [sleeper], instanceId }).pipe(Layer.provide(PgStores.layer({ url, schema, maxConnections: 4 }))))
)

Effect.runPromise(program).catch((e) => {
  process.stderr.write(String(e))
  process.exit(1)
})
