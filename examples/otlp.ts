/**
 * Exporting baton's traces and metrics over OTLP (any OpenTelemetry
 * collector: Jaeger, Tempo, Honeycomb, Grafana Alloy…), with effect's own
 * exporter — no OpenTelemetry SDK needed.
 *
 * The exporter Layer is provided *under* the Baton Layer, so the instance is
 * built with its tracer and metric registry: every pass (`baton.pass`), step
 * (`baton.step`, parented under its pass — also the Effect steps), lease take
 * (`baton.lease.acquire`) and sweep (`baton.sweep`) is a span with its
 * tenant, thread, execution, root, workflow, node, instance and epoch; the
 * metrics of `BatonMetrics` are pushed every 10 s. Store calls are untraced.
 *
 * Run: `npm run example:otlp -- http://127.0.0.1:4318` (a collector's OTLP
 * HTTP endpoint), then send SIGTERM (Ctrl-C) to stop it gracefully. Without
 * a collector the exporter logs its failed exports and the app runs on.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Cause, Effect, Layer, Schedule } from "effect"
import { FetchHttpClient } from "effect/http"
import { Otlp } from "effect/observability"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqliteStores } from "baton/sqlite"
import { BatonProcess } from "baton/http"
import { Baton, Workflow } from "baton"

const collector = process.argv[2] ?? "http://127.0.0.1:4318"

const State = Annotation.Root({ n: Annotation<number>() })
const count = Workflow.make({
  name: "count",
  version: "1",
  graph: new StateGraph(State)
    .addNode("double", Workflow.effectStep((s: typeof State.State) => Effect.succeed({ n: s.n * 2 }).pipe(Effect.withSpan("double the number"))))
    .addEdge(START, "double")
    .addEdge("double", END)
})

/** Traces, metrics and logs to the collector, as JSON over HTTP. */
const Observability = Otlp.layerJson({
  baseUrl: collector,
  resource: { serviceName: "baton-example", serviceVersion: "0.1.0" },
  metricsExportInterval: "10 seconds"
}).pipe(Layer.provide(FetchHttpClient.layer))

/** The app: an execution every second, forever (until SIGTERM). */
const App = Layer.effectDiscard(Effect.gen(function*() {
  const baton = yield* Baton.Baton
  yield* Effect.forkScoped(
    baton.execute(count, { n: 21 }).pipe(
      Effect.tap((out) => Effect.sync(() => console.log(`ran: ${out._tag} ${JSON.stringify(out._tag === "Finished" ? out.output : null)}`))),
      Effect.catchCause((cause) => Effect.sync(() => console.error(`failed: ${Cause.pretty(cause)}`))),
      Effect.repeat(Schedule.spaced("1 second"))
    )
  )
}))

const path = join(mkdtempSync(join(tmpdir(), "baton-otlp-")), "baton.sqlite")

BatonProcess.runMain(
  App.pipe(
    Layer.provideMerge(Baton.layer({ workflows: [count] })),
    Layer.provide(SqliteStores.layer({ path })),
    Layer.provide(Observability)
  )
)
