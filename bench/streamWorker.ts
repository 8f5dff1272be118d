/**
 * One instance, as its own process, for `npm run bench:stream`: over a
 * Postgres schema, with or without NOTIFY wake-ups. Commands on stdin:
 *
 *   run <threadId> <steps>   run a chain of <steps> steps (5 ms each) on that thread
 *   follow <threadId>        follow the thread's stream until the execution ends
 *
 * Output lines (t: wall-clock ms since the epoch, fractional): `<id> ready`,
 * `<id> stepend <threadId> <node> <t>` as a step's body returns,
 * `<id> ev <threadId> <node> <t>` as an update of that step is read,
 * `<id> end <threadId> <t>` when a followed stream ends.
 *
 * Usage: node bench/streamWorker.ts <schema> <instance id> <notify|poll>
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, Stream } from "effect"
import { createInterface } from "node:readline"
import { PgStores } from "../layers/pg/index.ts"
import * as Baton from "../src/runtime/Baton.ts"
import * as Workflow from "../src/runtime/Workflow.ts"

const [schema, instanceId, mode] = process.argv.slice(2)
if (schema === undefined || instanceId === undefined || (mode !== "notify" && mode !== "poll")) {
  throw new Error("usage: streamWorker.ts <schema> <instance id> <notify|poll>")
}
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const now = () => performance.timeOrigin + performance.now()
const say = (line: string) => process.stdout.write(`${instanceId} ${line}\n`)
const stores = PgStores.layer({ url, schema, wakeups: mode === "notify", applicationName: `bench-stream-${instanceId}` })

const State = Annotation.Root({ n: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) })

const chain = (steps: number) => {
  let g: any = new StateGraph(State)
  for (let i = 0; i < steps; i++) {
    g = g.addNode(`s${i}`, async (_s: unknown, config: { configurable?: Record<string, unknown> }) => {
      await new Promise((resolve) => setTimeout(resolve, 5)) // the step's work (a real process: real time)
      say(`stepend ${String(config.configurable?.thread_id)} s${i} ${now()}`)
      return { n: 1 }
    })
  }
  g = g.addEdge(START, "s0")
  for (let i = 1; i < steps; i++) g = g.addEdge(`s${i - 1}`, `s${i}`)
  return Workflow.make({ name: `chain-${steps}`, version: "1", graph: g.addEdge(`s${steps - 1}`, END) })
}
const chains = new Map([20].map((n) => [n, chain(n)]))

const main = Effect.gen(function*() {
  const context = yield* Layer.build(Baton.layer({ workflows: [...chains.values()], instanceId, liveOutput: true }).pipe(Layer.provide(stores)))
  const baton = Context.get(context, Baton.Baton)
  say("ready")
  const lines = createInterface({ input: process.stdin })
  yield* Effect.callback<never>(() => {
    lines.on("line", (line) => {
      const [command, thread, steps] = line.trim().split(" ")
      if (command === "run" && thread !== undefined) {
        Effect.runFork(Effect.ignore(baton.execute(chains.get(Number(steps))!, { n: 0 }, { threadId: thread })))
      }
      if (command === "follow" && thread !== undefined) {
        Effect.runFork(baton.stream(thread, { until: "end" }).pipe(
          Stream.runForEach((e) =>
            Effect.sync(() => {
              if (e.mode === "updates") say(`ev ${thread} ${Object.keys(e.data as object).join(",")} ${now()}`)
            })
          ),
          Effect.andThen(Effect.sync(() => say(`end ${thread} ${now()}`))),
          Effect.ignore
        ))
      }
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
