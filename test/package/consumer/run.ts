// The same app in TypeScript, typechecked with tsc against baton's .d.ts files.
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Baton, type ExecutionOutput, Workflow } from "baton"
import type { MemoryStores } from "baton/memory"
import type { PgStores } from "baton/pg"
import { SqliteStores } from "baton/sqlite"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The other backends' declarations are checked too (baton/testing needs vitest, an optional peer: not here). */
export type OtherBackends = [typeof MemoryStores.layer, typeof PgStores.layer]

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

const expectTag = <T extends ExecutionOutput["_tag"]>(out: ExecutionOutput, tag: T) =>
  out._tag === tag
    ? Effect.succeed(out as Extract<ExecutionOutput, { _tag: T }>)
    : Effect.die(new Error(`expected ${tag}, got ${out._tag}`))

const dir = mkdtempSync(join(tmpdir(), "baton-consumer-ts-"))
const program = Effect.gen(function*() {
  const baton = yield* Baton
  const started = yield* expectTag(yield* baton.execute(expense, { amount: 120, log: [] }), "Paused")
  const pause = started.pauses[0]!
  const done = yield* expectTag(yield* baton.resume({ pauseId: pause.pauseId, decision: "approved" }), "Finished")
  return { node: process.version, paused: pause.payload, output: done.output }
}).pipe(
  Effect.provide(Baton.layer({ workflows: [expense], instanceId: "ts" })),
  Effect.provide(SqliteStores.layer({ path: join(dir, "baton.sqlite") }))
)

Effect.runPromise(program).then(
  (result) => console.log(JSON.stringify(result)),
  (error: unknown) => {
    console.error(error)
    process.exitCode = 1
  }
).finally(() => rmSync(dir, { recursive: true, force: true }))
