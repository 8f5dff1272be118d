/**
 * The Redis stores in an app: Baton over `RedisStores.withSqlite` (Redis for
 * leases, tree keys, checkpoints and rate limits; SQLite for the rest) runs a
 * workflow that pauses on one instance and is resumed on another, and its
 * checkpoints are in Redis.
 */
import { assert, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer } from "effect"
import * as RedisStores from "../../examples/redis-store/RedisStores.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { cleanUp, connection, runPrefix, url } from "./redis.ts"

const prefix = runPrefix("runtime")
const path = tempDb("redis-runtime")

/** One step that asks a human, then says who answered it where. */
const Ask = Annotation.Root({ question: Annotation<string>(), answer: Annotation<string>() })
const ask = Workflow.make<typeof Ask.State>({
  name: "ask",
  version: "1",
  graph: new StateGraph(Ask).addNode(
    "ask",
    Workflow.step(async (s: typeof Ask.State, ctx) => ({ answer: `${interrupt({ q: s.question }) as string} on ${ctx.instanceId}` }))
  ).addEdge(START, "ask").addEdge("ask", END)
})

const instance = (instanceId: string) =>
  Baton.layer({ workflows: [ask], instanceId }).pipe(Layer.provide(RedisStores.withSqlite({ url, path, prefix })))

it.layer(Layer.merge(connection(), cleanUp(prefix)), { excludeTestServices: true })("Baton on Redis + SQLite", (it) => {
  it.effect("a pause on instance A is resumed on instance B; the checkpoints are in Redis", () =>
    Effect.gen(function*() {
      const a = Context.get(yield* Layer.build(instance("A")), Baton.Baton)
      const b = Context.get(yield* Layer.build(instance("B")), Baton.Baton)
      const started = yield* a.execute(ask, { question: "pay 120?", answer: "" })
      if (started._tag !== "Paused") return assert.fail(`expected a pause, got ${started._tag}`)
      assert.deepStrictEqual(started.pauses[0]!.payload, { q: "pay 120?" })
      const done = yield* b.resume({ pauseId: started.pauses[0]!.pauseId, decision: "approved" })
      if (done._tag !== "Finished") return assert.fail(`expected the end, got ${done._tag}`)
      assert.strictEqual((done.output as typeof Ask.State).answer, "approved on B")

      const checkpointKeys = yield* RedisStores.scanKeys(`${prefix}*:cp`)
      assert.isAbove(checkpointKeys.length, 0, "the workflow's checkpoints should be in Redis")
    }))
})
