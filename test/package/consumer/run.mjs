// A user's app in plain JavaScript: baton from its tarball, SQLite stores, one
// workflow that pauses for a human and is resumed; the same over baton/http
// (a real server on an ephemeral 127.0.0.1 port); and a baton/testing Harness
// on the TestClock (an instance killed mid-step, the other recovering its
// execution). Prints the results as JSON.
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Baton, Workflow } from "baton"
import { BatonHttp } from "baton/http"
import { MemoryStores } from "baton/memory"
import { SqliteStores } from "baton/sqlite"
import { Harness } from "baton/testing"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

// The other entry point loads too (its runtime imports all resolve).
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
  const baton = yield* Baton.Baton
  const started = yield* baton.execute(expense, { amount: 120, log: [] })
  if (started._tag !== "Paused") return yield* Effect.die(new Error(`expected a pause, got ${started._tag}`))
  const done = yield* baton.resume({ pauseId: started.pauses[0].pauseId, decision: "approved" })
  if (done._tag !== "Finished") return yield* Effect.die(new Error(`expected the end, got ${done._tag}`))
  return { node: process.version, paused: started.pauses[0].payload, output: done.output }
}).pipe(
  Effect.provide(Baton.layer({ workflows: [expense], instanceId: "js" })),
  Effect.provide(SqliteStores.layer({ path: join(dir, "baton.sqlite") }))
)

// baton/http: the app's authorize hook (here an async function; a plain value or an Effect do too)
// maps the x-tenant header to the caller; no header, 401.
const authorize = async (request) =>
  typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined

const call = (port, method, path, body, headers = { "x-tenant": "acme" }) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: await response.json() }
  })

const overHttp = Effect.gen(function*() {
  const port = BatonHttp.port(yield* HttpServer.HttpServer)
  const baton = yield* Baton.Baton
  const livez = yield* call(port, "GET", "/livez")
  const refused = yield* call(port, "POST", "/executions", { workflow: "expense", input: { amount: 7, log: [] } }, {})
  const started = yield* call(port, "POST", "/executions", { workflow: "expense", input: { amount: 7, log: [] } })
  // The app's own side waits for the execution to rest at its pause (no polling over HTTP).
  yield* baton.await(started.body.executionId, { tenantId: "acme" })
  const status = yield* call(port, "GET", `/executions/${started.body.executionId}`)
  const pauses = yield* call(port, "GET", `/threads/${started.body.threadId}/pauses`)
  const resumed = yield* call(port, "POST", `/pauses/${pauses.body.pauses[0].pauseId}/resume`, { decision: "approved" })
  return {
    livez: [livez.status, livez.body.status],
    refused: refused.status,
    started: started.status,
    status: [status.status, status.body.status, status.body.tenantId],
    resumed: [resumed.status, resumed.body._tag, resumed.body.output?.log]
  }
}).pipe(
  Effect.provide(BatonHttp.layerServer({ workflows: [expense], authorize, port: 0 }).pipe(
    Layer.provideMerge(Baton.layer({ workflows: [expense], instanceId: "js-http" })),
    Layer.provide(MemoryStores.layer)
  ))
)

// baton/testing: two instances over memory stores on the TestClock; the one moving a 45 s step dies,
// the other recovers the execution once the lease expires and finishes it.
const slow = Workflow.make({
  name: "slow",
  version: "1",
  graph: new StateGraph(State)
    .addNode("wait", Workflow.effectStep(() => Effect.as(Effect.sleep("45 seconds"), { log: ["waited"] }))) // sleeps on the harness TestClock (advanced below)
    .addEdge(START, "wait")
    .addEdge("wait", END)
})

const onHarness = Effect.gen(function*() {
  const h = yield* Harness.make({ instances: 2, baton: { workflows: [slow] } })
  const handle = yield* h.baton(0).start(slow, { amount: 0, log: [] })
  yield* h.settle
  yield* h.kill(0)
  yield* h.advance("31 seconds")
  const during = yield* h.baton(1).status(handle.executionId)
  yield* h.advance("45 seconds")
  const done = yield* h.baton(1).await(handle)
  return { recoveredBy: during.holder?.instanceId, tag: done._tag, log: done.output.log }
}).pipe(Effect.scoped, Effect.provide(MemoryStores.layer), Effect.provide(TestClock.layer()))

try {
  const all = Effect.all({ sqlite: program, http: overHttp, harness: onHarness })
  const { sqlite, http, harness } = await Effect.runPromise(all)
  console.log(JSON.stringify({ ...sqlite, http, harness }))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
