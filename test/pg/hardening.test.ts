/**
 * #18 item 1 on Postgres: a step whose error text Postgres cannot keep (a NUL
 * byte, a lone surrogate, a huge message) still ends its execution Failed —
 * the text is made storable before it is written — so no sweep ever re-runs
 * the failing step.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { Baton } from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { maxErrorTextLength } from "../../src/stores/internal/storable.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("hardening")

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One step that throws `message`, counting its runs. */
const throwing = (name: string, message: string, runs: { count: number }) =>
  Workflow.make({
    name,
    version: "1",
    graph: new StateGraph(State)
      .addNode("boom", Workflow.step(async () => {
        runs.count++
        throw new Error(message)
      }))
      .addEdge(START, "boom")
      .addEdge("boom", END)
  })

describe("error text Postgres cannot keep", () => {
  it.live("a step error with a NUL byte, a lone surrogate or 100k characters ends the execution Failed; the step ran once", () =>
    Effect.gen(function*() {
      const cases = [
        { name: "nul", message: "bad\u0000byte", stored: (e: string) => e.includes("bad\\u0000byte") },
        { name: "surrogate", message: "half \ud800 pair", stored: (e: string) => e.includes("half \\ud800 pair") },
        { name: "huge", message: "x".repeat(100_000), stored: (e: string) => e.length <= maxErrorTextLength && e.endsWith("characters cut]") }
      ]
      const runs = cases.map(() => ({ count: 0 }))
      const workflows = cases.map((c, i) => throwing(c.name, c.message, runs[i]!))
      const context = yield* Layer.build(
        Baton.layer({ workflows, instanceId: "pg-hardening", sweepInterval: "200 millis", lease: "1 second", renewEvery: "300 millis" }).pipe(
          Layer.provideMerge(PgStores.layer({ url, schema, maxConnections: 4 }))
        )
      )
      const baton = Context.get(context, Baton)
      const records = Context.get(context, RecordStore)
      for (const [i, c] of cases.entries()) {
        const exit = yield* Effect.exit(baton.execute(workflows[i]!, { log: [] }))
        assert.isTrue(Exit.isFailure(exit), c.name)
        const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined
        assert.strictEqual((failure as { _tag?: string })?._tag, "ExecutionFailedError", c.name)
        const executionId = (failure as { executionId: string }).executionId
        const record = Option.getOrThrow(yield* records.getRecord("default", executionId))
        assert.strictEqual(record.status, "Failed", `${c.name}: the status write was kept`)
        assert.isTrue(c.stored(record.error ?? ""), `${c.name}: stored as ${JSON.stringify(record.error?.slice(0, 80))}`)
      }
      // Several sweeps later (real time: Postgres), no failing step ran again.
      yield* Effect.sleep("1500 millis")
      assert.deepStrictEqual(runs.map((r) => r.count), [1, 1, 1])
    }).pipe(Effect.scoped))
})
