/**
 * One instance of the demo app: a baton instance over the shared stores
 * (`--sqlite PATH`, or `--pg URL --schema S`), with BatonHttp on its own port
 * (`--port N`, 0 for any free one), run by `BatonProcess.runMain` (SIGTERM
 * closes it gracefully). Prints `ready <instanceId> <port>` once it serves.
 *
 * The workflow, "order": reserve (an Effect step of `reserveMillis`, on the
 * Clock) → approve (a pause: a person decides) → ship (an Effect step).
 *
 * Short leases so the demo shows a takeover within seconds: a 3 s lease
 * renewed every second, a sweep every second.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Duration, Effect, Layer, Schema } from "effect"
import { HttpServer } from "effect/http"
import { PgStores } from "baton/pg"
import { SqliteStores } from "baton/sqlite"
import { BatonHttp, BatonProcess } from "baton/http"
import { Baton, Workflow } from "baton"

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}

const Order = Annotation.Root({
  item: Annotation<string>(),
  reserveMillis: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

export const order = Workflow.make({
  name: "order",
  version: "1",
  input: Schema.Struct({ item: Schema.String, reserveMillis: Schema.Number }),
  decision: Schema.Literals(["approve", "reject"]),
  graph: new StateGraph(Order)
    .addNode("reserve", Workflow.effectStep((s: typeof Order.State, ctx) =>
      Effect.as(Effect.sleep(Duration.millis(s.reserveMillis)), { log: [`reserved ${s.item} on ${ctx.instanceId}`] })))
    .addNode("approve", Workflow.step(async (s: typeof Order.State, ctx) => {
      const decision = interrupt({ question: `ship ${s.item}?` }) as string
      return { log: [`${decision} on ${ctx.instanceId}`] }
    }))
    .addNode("ship", Workflow.effectStep((s: typeof Order.State, ctx) =>
      Effect.as(Effect.sleep(Duration.millis(300)), { log: [`shipped ${s.item} on ${ctx.instanceId}`] })))
    .addEdge(START, "reserve")
    .addEdge("reserve", "approve")
    .addEdge("approve", "ship")
    .addEdge("ship", END)
})

const instanceId = arg("instance") ?? `demo-${process.pid}`
const pg = arg("pg")
const stores = pg !== undefined
  ? PgStores.layer({ url: pg, schema: arg("schema"), maxConnections: 4 })
  : SqliteStores.layer({ path: arg("sqlite") ?? "demo.sqlite", wakeups: true })

/**
 * The app's tenant hook: the demo's caller names its tenant in a header (a real app verifies a token). A
 * browser's request (the dashboard) names none: the demo, serving 127.0.0.1 only, lets it in as tenant "demo" —
 * a demo's shortcut; a real app checks a session or a token here.
 */
const authorize: BatonHttp.Authorize = (request) => {
  const tenantId = request.headers["x-tenant"]
  return Effect.succeed(typeof tenantId === "string" ? { tenantId } : { tenantId: "demo" })
}

const ready = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  yield* Effect.sync(() => console.log(`ready ${instanceId} ${BatonHttp.port(server)}`))
}))

const app = ready.pipe(
  Layer.provideMerge(BatonHttp.layerServer({ workflows: [order], authorize, port: Number(arg("port") ?? 0), dashboard: true })),
  Layer.provideMerge(Baton.layer({ workflows: [order], instanceId, liveOutput: true, lease: "3 seconds", renewEvery: "1 second", sweepInterval: "1 second" })),
  Layer.provide(stores)
)

BatonProcess.runMain(app, { timeout: Duration.millis(Number(arg("grace-ms") ?? 5000)) })
