/**
 * One process of the request-key process test: a baton instance over a
 * SQLite file that runs `execute` with a request key and says what it sees.
 * Its `work` step says `working <key>` and then waits (on the live Clock)
 * until the process is killed — or returns at once when `--finish` is given.
 *
 * Usage: node test/sqlite/requestsWorker.ts <path> <instance id> <request key> [--finish]
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Duration, Effect, Layer } from "effect"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [path, instanceId, requestKey, mode] = process.argv.slice(2)
if (path === undefined || instanceId === undefined || requestKey === undefined) {
  throw new Error("usage: requestsWorker.ts <path> <instance id> <request key> [--finish]")
}
const say = (line: string) => process.stdout.write(`${line}\n`)

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

export const job = Workflow.make({
  name: "keyed-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("work", Workflow.effectStep((_s, ctx) =>
      Effect.gen(function*() {
        say(`working ${ctx.executionId} ${ctx.idempotencyKey}`)
        if (mode !== "--finish") yield* Effect.sleep(Duration.minutes(10)) // real time, not the TestClock: a real process the test SIGKILLs mid-step
        return { log: [`worked@${ctx.instanceId}`] }
      })
    ))
    .addEdge(START, "work")
    .addEdge("work", END)
})

const main = Effect.gen(function*() {
  const baton = yield* Baton.Baton
  const handle = yield* baton.start(job, { log: [] }, { requestKey })
  say(`started ${handle.executionId} ${handle.threadId}`)
  const out = yield* baton.execute(job, { log: [] }, { requestKey })
  say(`output ${out.executionId} ${out._tag} ${out._tag === "Finished" ? JSON.stringify(out.output) : ""}`)
}).pipe(
  Effect.provide(Baton.layer({ workflows: [job], instanceId, lease: "2 seconds", sweepInterval: "1 second" }).pipe(
    Layer.provide(SqliteStores.layer({ path, wakeups: true }))
  ))
)

Effect.runPromise(main).then(
  () => process.exit(0),
  (e) => {
    say(`failed ${String(e)}`)
    process.exit(1)
  }
)
