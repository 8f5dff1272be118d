/**
 * Children launched anywhere over Postgres, two "processes" (each its own
 * pool and its own wake-up hub, as two machines would have) whose polls are
 * an hour: only NOTIFY can wake the other process. The parent's process has
 * one step slot, held by the launching step when the children are queued, so
 * the other process claims them — woken by the launch's NOTIFY — and the
 * parent's process learns that its parent continued by the NOTIFY of that
 * release. Bounded by a timeout that fails the test; nothing sleeps.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import * as Baton from "../../src/runtime/Baton.ts"
import { LeaseWakeups, makeHub } from "../../src/stores/LeaseWakeups.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "../runtime/children/childFixtures.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("child_notify")

describe("children over Postgres NOTIFY", () => {
  it.live("a launch wakes the other process at once: it claims the children, and the parent continues", () =>
    Effect.gen(function*() {
      const log = makeChildLog()
      const child = childWorkflow(log, "0 millis")
      const parent = parentWorkflow(child, "any")
      const process = (instanceId: string, maxConcurrentSteps?: number) =>
        Effect.map(
          Layer.build(
            Baton.layer({ workflows: [parent], instanceId, maxConcurrentSteps, waitPoll: "1 hour", sweepInterval: "1 hour" }).pipe(
              Layer.provideMerge(PgStores.layer({ url, schema, maxConnections: 4 })),
              Layer.provide(Layer.succeed(LeaseWakeups, makeHub()))
            )
          ),
          (ctx) => Context.get(ctx, Baton.Baton)
        )
      const a = yield* process("a", 1)
      yield* process("b")
      const out = yield* a.execute(parent, { count: 3 }).pipe(
        Effect.timeoutOrElse({ duration: "20 seconds", orElse: () => Effect.die(new Error("the children were not run within 20 s: no NOTIFY woke the other process")) })
      )
      assert.strictEqual(out._tag, "Finished")
      assert.deepStrictEqual((out as { output: { results: Array<number> } }).output.results, [0, 2, 4])
      assert.deepStrictEqual([...new Set(log.runs.map((r) => r.instanceId))], ["b"], "the other process ran the children")
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
