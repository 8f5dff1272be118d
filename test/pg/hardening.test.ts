/**
 * On Postgres: a step whose error text Postgres cannot keep (a NUL
 * byte, a lone surrogate, a huge message) still ends its execution Failed —
 * the text is made storable before it is written — so no sweep ever re-runs
 * the failing step. The baton runs on the TestClock: the sweeps after the
 * failures are driven by moving it 100 ms per turn of the event loop until
 * the next look read its page (its reads are real Postgres I/O); no real
 * time is waited for.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Exit, Layer, Option, Queue } from "effect"
import { TestClock } from "effect/testing"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
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

const stores = PgStores.layer({ url, schema, maxConnections: 4 })

/** The stores, with a RecordStore that offers to `looks` once each sweep look's page of Running records was read. */
const countingLooks = (looks: Queue.Queue<void>) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Layer.Success<typeof stores>>()
    const records = Context.get(context, RecordStore)
    return Context.add(context, RecordStore, {
      ...records,
      findByStatus: (status, limit, after) =>
        records.findByStatus(status, limit, after).pipe(Effect.tap(() => (status === "Running" ? Queue.offer(looks, undefined) : Effect.void)))
    })
  })).pipe(Layer.provide(stores))

/** Moves the TestClock 100 ms per turn of the event loop until the sweep's next look has read its page. */
const nextLook = (looks: Queue.Queue<void>) =>
  Effect.raceFirst(
    Queue.take(looks),
    Effect.forever(Effect.andThen(TestClock.adjust("100 millis"), Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))))
  )

describe("error text Postgres cannot keep", () => {
  it.effect("a step error with a NUL byte, a lone surrogate or 100k characters ends the execution Failed; the step ran once", () =>
    Effect.gen(function*() {
      const cases = [
        { name: "nul", message: "bad\u0000byte", stored: (e: string) => e.includes("bad\\u0000byte") },
        { name: "surrogate", message: "half \ud800 pair", stored: (e: string) => e.includes("half \\ud800 pair") },
        { name: "huge", message: "x".repeat(100_000), stored: (e: string) => e.length <= maxErrorTextLength && e.endsWith("characters cut]") }
      ]
      const runs = cases.map(() => ({ count: 0 }))
      const workflows = cases.map((c, i) => throwing(c.name, c.message, runs[i]!))
      const looks = yield* Queue.unbounded<void>()
      const context = yield* Layer.build(
        Baton.layer({ workflows, instanceId: "pg-hardening", sweepInterval: "200 millis", lease: "1 second", renewEvery: "300 millis" }).pipe(
          Layer.provideMerge(countingLooks(looks))
        )
      )
      const baton = Context.get(context, Baton.Baton)
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
      // Five looks later (a record left Running, its lease released by the failed pass, would be recovered at
      // the first), no failing step ran again.
      yield* Queue.clear(looks)
      const failedAt = yield* Clock.currentTimeMillis
      for (let i = 0; i < 5; i++) yield* nextLook(looks)
      assert.isAtLeast((yield* Clock.currentTimeMillis) - failedAt, 5 * 200, "five sweep intervals (200 ms) went by on the TestClock")
      assert.deepStrictEqual(runs.map((r) => r.count), [1, 1, 1])
    }).pipe(Effect.scoped))
})
