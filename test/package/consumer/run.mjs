// A user's app in plain JavaScript: baton from its tarball, SQLite stores, one
// workflow that pauses for a human and is resumed. Prints the result as JSON.
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Baton, Workflow } from "baton"
import { SqliteStores } from "baton/sqlite"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

// The other entry points load too (their runtime imports all resolve).
await import("baton/memory")
await import("baton/pg")

const State = Annotation.Root({
  amount: Annotation(),
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const expense = Workflow.make({
  name: "expense",
  version: "1",
  graph: new StateGraph(State)
    .addNode("approve", Workflow.step(async (s) => ({ log: [`${interrupt({ pay: s.amount })} ${s.amount}`] })))
    .addNode("send", Workflow.step(async (s) => ({ log: [`sent ${s.amount}`] })))
    .addEdge(START, "approve")
    .addEdge("approve", "send")
    .addEdge("send", END)
})

const dir = mkdtempSync(join(tmpdir(), "baton-consumer-js-"))
const program = Effect.gen(function*() {
  const baton = yield* Baton
  const started = yield* baton.execute(expense, { amount: 120, log: [] })
  if (started._tag !== "Paused") return yield* Effect.die(new Error(`expected a pause, got ${started._tag}`))
  const done = yield* baton.resume({ pauseId: started.pauses[0].pauseId, decision: "approved" })
  if (done._tag !== "Finished") return yield* Effect.die(new Error(`expected the end, got ${done._tag}`))
  return { node: process.version, paused: started.pauses[0].payload, output: done.output }
}).pipe(
  Effect.provide(Baton.layer({ workflows: [expense], instanceId: "js" })),
  Effect.provide(SqliteStores.layer({ path: join(dir, "baton.sqlite") }))
)

try {
  console.log(JSON.stringify(await Effect.runPromise(program)))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
