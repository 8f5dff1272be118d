// The same app in TypeScript, typechecked with tsc against baton's .d.ts files:
// SQLite stores, baton/http on an ephemeral 127.0.0.1 port, a baton/testing Harness.
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Baton, Workflow } from "baton"
import { BatonHttp } from "baton/http"
import { MemoryStores } from "baton/memory"
import type { PgStores } from "baton/pg"
import { SqlCheckpointStore, SqlLeaseStore } from "baton/sql"
import { SqliteClient, SqliteMigrations, SqliteStores } from "baton/sqlite"
import { Harness } from "baton/testing"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The Postgres backend's declarations are checked too. */
export type OtherBackends = [typeof PgStores.layer]

/** README's "a few stores on one connection": baton/sql's store Layers over one client, migrated once. */
export const someStores = (path: string) =>
  Layer.mergeAll(SqlLeaseStore.layer(), SqlCheckpointStore.layer()).pipe(
    Layer.provide(SqliteMigrations.layer()),
    Layer.provide(SqliteClient.layer({ path }))
  )

const State = Annotation.Root({
  amount: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const expense = Workflow.make<typeof State.State>({
  name: "expense",
  version: "1",
  graph: new StateGraph(State)
    .addNode("approve", Workflow.step(async (s: typeof State.State) => {
      const decision = interrupt({ pay: s.amount }) as string
      return { log: [`${decision} ${s.amount}`] }
    }))
    .addNode("send", Workflow.step(async (s: typeof State.State) => ({ log: [`sent ${s.amount}`] })))
    .addEdge(START, "approve")
    .addEdge("approve", "send")
    .addEdge("send", END)
})

const expectTag = <T extends Baton.ExecutionOutput["_tag"]>(out: Baton.ExecutionOutput, tag: T) =>
  out._tag === tag
    ? Effect.succeed(out as Extract<Baton.ExecutionOutput, { _tag: T }>)
    : Effect.die(new Error(`expected ${tag}, got ${out._tag}`))

const dir = mkdtempSync(join(tmpdir(), "baton-consumer-ts-"))
const program = Effect.gen(function*() {
  const baton = yield* Baton.Baton
  const started = yield* expectTag(yield* baton.execute(expense, { amount: 120, log: [] }), "Paused")
  const pause = started.pauses[0]!
  const done = yield* expectTag(yield* baton.resume({ pauseId: pause.pauseId, decision: "approved" }), "Finished")
  return { node: process.version, paused: pause.payload, output: done.output }
}).pipe(
  Effect.provide(Baton.layer({ workflows: [expense], instanceId: "ts" })),
  Effect.provide(SqliteStores.layer({ path: join(dir, "baton.sqlite") }))
)

/** The app's hook: the x-tenant header names the caller's tenant; without it the request is refused (401). */
const authorize: BatonHttp.Authorize = (request) =>
  Effect.succeed(typeof request.headers["x-tenant"] === "string" ? { tenantId: request.headers["x-tenant"] } : undefined)

interface Reply {
  readonly status: number
  readonly body: any
}

const call = (port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = { "x-tenant": "acme" }) =>
  Effect.promise(async (): Promise<Reply> => {
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
  yield* baton.await(started.body.executionId as string, { tenantId: "acme" })
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
    Layer.provideMerge(Baton.layer({ workflows: [expense], instanceId: "ts-http" })),
    Layer.provide(MemoryStores.layer)
  ))
)

/** A step of 45 s on the Clock: on the Harness, the TestClock's. */
const slow = Workflow.make<typeof State.State>({
  name: "slow",
  version: "1",
  graph: new StateGraph(State)
    .addNode("wait", Workflow.effectStep(() => Effect.as(Effect.sleep("45 seconds"), { log: ["waited"] }))) // sleeps on the harness TestClock (advanced below)
    .addEdge(START, "wait")
    .addEdge("wait", END)
})

/** Two instances on the TestClock: the one moving the step dies; the other recovers the execution and finishes it. */
const onHarness = Effect.gen(function*() {
  const h: Harness.Harness = yield* Harness.make({ instances: 2, baton: { workflows: [slow] } })
  const handle = yield* h.baton(0).start(slow, { amount: 0, log: [] })
  yield* h.settle
  yield* h.kill(0)
  yield* h.advance("31 seconds")
  const during = yield* h.baton(1).status(handle.executionId)
  yield* h.advance("45 seconds")
  const done = yield* expectTag(yield* h.baton(1).await(handle), "Finished")
  return { recoveredBy: during.holder?.instanceId, tag: done._tag, log: (done.output as typeof State.State).log }
}).pipe(Effect.scoped, Effect.provide(MemoryStores.layer), Effect.provide(TestClock.layer()))

Effect.runPromise(Effect.all({ sqlite: program, http: overHttp, harness: onHarness })).then(
  ({ sqlite, http, harness }) => console.log(JSON.stringify({ ...sqlite, http, harness })),
  (error: unknown) => {
    console.error(error)
    process.exitCode = 1
  }
).finally(() => rmSync(dir, { recursive: true, force: true }))
