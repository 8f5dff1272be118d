/**
 * Model answers recorded on Postgres by two instances (each with its own
 * pool: paused on A, answered on B), then replayed from that record on a
 * scratch runtime in memory.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { MemoryStores } from "../../layers/memory/index.ts"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import * as Evaluation from "../../src/runtime/evaluation/Evaluation.ts"
import { makeModel, summarize } from "../runtime/evaluation/fixtures.ts"
import { errorTag } from "../runtime/fixtures.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("evaluation")
const stores = () => PgStores.layer({ url, schema, maxConnections: 2 })

describe("evaluation on Postgres", () => {
  it.effect("answers recorded by two instances replay: unchanged matches, changed shows the diff, another tenant cannot", () =>
    Effect.gen(function*() {
      const model = makeModel()
      const wf = summarize(model)
      const on = (instanceId: string) => Baton.layer({ workflows: [wf], instanceId }).pipe(Layer.provide(stores()))
      const a = Context.get(yield* Layer.build(on("A")), Baton.Baton)
      const b = Context.get(yield* Layer.build(on("B")), Baton.Baton)
      const paused = yield* a.execute(wf, { topic: "tides" }, { tenantId: "acme" })
      if (paused._tag !== "Paused") return assert.fail("expected a pause")
      const done = yield* b.resume({ tenantId: "acme", pauseId: paused.pauses[0]!.pauseId, decision: "yes" })
      assert.strictEqual(done._tag, "Finished")
      assert.strictEqual(model.calls, 2)
      const read = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.scoped(Effect.provide(effect, stores())) as Effect.Effect<A, E>
      const options = { executionId: paused.executionId, tenantId: "acme", scratch: MemoryStores.layer }
      const same = yield* read(Evaluation.replay(summarize(model), options))
      assert.isTrue(same.passed, same.diff.join("\n"))
      assert.deepStrictEqual([same.answered, same.unused], [2, 0])
      const changed = yield* read(Evaluation.replay(summarize(model, { post: (t) => t.toUpperCase() }), options))
      assert.deepStrictEqual(changed.diff, [
        `$.summary: expected "answer 2 to finish answer 1 to draft tides (yes)", got "ANSWER 2 TO FINISH ANSWER 1 TO DRAFT TIDES (YES)"`
      ])
      assert.strictEqual(model.calls, 2, "no model call in the replays")
      const other = yield* read(Effect.exit(Evaluation.replay(wf, { ...options, tenantId: "globex" })))
      assert.isTrue(Exit.isFailure(other))
      assert.strictEqual(errorTag(other), "ExecutionNotRecordedError")
    }).pipe(Effect.scoped), 60_000)
})
