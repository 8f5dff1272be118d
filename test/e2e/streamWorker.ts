/**
 * One instance, as its own process, for the live-output test with real
 * processes: the default lease (30 s), over a shared SQLite file or Postgres
 * schema. Its job runs `one`, `two`, `long` (a minute where it was started:
 * the window to kill in; 10 ms once taken elsewhere) and `done`; each step
 * streams a custom event `{ step }` first. Commands on stdin:
 *
 *   execute <threadId>                   start an execution on that thread
 *   follow <threadId> <lastEventId> <tag> follow the thread's stream after that id until the execution ends
 *
 * Output lines (t: wall-clock milliseconds since the epoch, fractional):
 * `<id> ready`, `<id> run <node> <threadId> <t>`,
 * `<id> ev <tag> <eventId> <mode> <what> <instanceId> <t>` per streamed event (what: the nodes of an update,
 * the log of a state joined by ">", the step of a custom event, the status), `<id> end <tag> <t>`.
 *
 * Usage: node test/e2e/streamWorker.ts <sqlite|pg> <path|schema> <instance id>
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, Stream } from "effect"
import { createInterface } from "node:readline"
import { PgStores } from "../../layers/pg/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import type { StreamEvent } from "../../src/stores/EventStore.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"

const [kind, target, instanceId] = process.argv.slice(2)
if ((kind !== "sqlite" && kind !== "pg") || target === undefined || instanceId === undefined) {
  throw new Error("usage: streamWorker.ts <sqlite|pg> <path|schema> <instance id>")
}
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const now = () => performance.timeOrigin + performance.now()
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)

const stores = kind === "sqlite"
  ? SqliteStores.layer({ path: target, wakeups: true })
  : PgStores.layer({ url, schema: target, applicationName: `stream-${target}-${instanceId}` })

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

/** The threads this process started: their `long` step runs long here. */
const started = new Set<string>()

const step = (node: string) => async (_s: typeof State.State, config: { writer?: (chunk: unknown) => void; configurable?: Record<string, unknown> }) => {
  const threadId = String(config.configurable?.thread_id)
  say(`run ${node} ${threadId} ${now()}`)
  config.writer?.({ step: node })
  if (node === "long") await new Promise((resolve) => setTimeout(resolve, started.has(threadId) ? 60_000 : 10)) // a real process: real time
  return { log: [node] }
}

const job = Workflow.make({
  name: "stream-job",
  version: "1",
  graph: new StateGraph(State)
    .addNode("one", step("one"))
    .addNode("two", step("two"))
    .addNode("long", step("long"))
    .addNode("done", step("done"))
    .addEdge(START, "one")
    .addEdge("one", "two")
    .addEdge("two", "long")
    .addEdge("long", "done")
    .addEdge("done", END)
})

const what = (e: StreamEvent): string => {
  const data = e.data as any
  switch (e.mode) {
    case "updates":
      return Object.keys(data).join(",")
    case "values":
      return (data.log ?? []).join(">") || "-"
    case "custom":
      return String(data.step)
    case "status":
      return String(data.status)
    default:
      return "-"
  }
}

const main = Effect.gen(function*() {
  const context = yield* Layer.build(Baton.layer({ workflows: [job], instanceId, liveOutput: true }).pipe(Layer.provide(stores)))
  const baton = Context.get(context, Baton.Baton)
  say("ready")
  const execute = (thread: string) => {
    started.add(thread)
    return Effect.forkDetach(Effect.ignore(baton.execute(job, { log: [] }, { threadId: thread })))
  }
  const follow = (thread: string, after: number, tag: string) =>
    Effect.forkDetach(
      baton.stream(thread, { lastEventId: after, until: "end" }).pipe(
        Stream.runForEach((e) => Effect.sync(() => say(`ev ${tag} ${e.id} ${e.mode} ${what(e)} ${e.instanceId} ${now()}`))),
        Effect.matchEffect({
          onSuccess: () => Effect.sync(() => say(`end ${tag} ${now()}`)),
          onFailure: (e) => Effect.sync(() => say(`failed ${tag} ${e._tag} ${now()}`))
        })
      )
    )
  const lines = createInterface({ input: process.stdin })
  yield* Effect.callback<never>(() => {
    lines.on("line", (line) => {
      const [command, a, b, c] = line.trim().split(" ")
      if (command === "execute" && a !== undefined) Effect.runFork(execute(a))
      if (command === "follow" && a !== undefined && b !== undefined && c !== undefined) Effect.runFork(follow(a, Number(b), c))
    })
  })
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
