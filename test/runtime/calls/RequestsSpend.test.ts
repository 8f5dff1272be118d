/**
 * Spend if recorded: a history snapshot
 * carries the execution's spend from the `LedgerStore` — its lifetime
 * counter and each UTC day it lasted — and null when nothing was spent.
 * Also the `requestRetention` option: checked at build, read from config.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import * as BatonConfig from "../../../src/runtime/BatonConfig.ts"
import * as Budget from "../../../src/runtime/limits/Budget.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { ExecutionHistoryStore } from "../../../src/stores/ExecutionHistoryStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { backends } from "../fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** Spends 7 today and 3 for its lifetime, works 2 minutes (past midnight), spends 5 more; spends nothing with `{ log: ["free"] }`. */
const spender = Workflow.make({
  name: "spender",
  version: "1",
  graph: new StateGraph(State)
    .addNode("spend", Workflow.effectStep((s, ctx) =>
      Effect.gen(function*() {
        if ((s as typeof State.State).log.includes("free")) return { log: ["nothing spent"] }
        const key = { tenantId: ctx.tenantId, scope: "execution", scopeId: ctx.executionId } as const
        yield* Budget.record([key], 7)
        yield* Budget.record([{ ...key, window: "lifetime" }], 3)
        yield* Effect.sleep(Duration.minutes(2)) // the Harness's TestClock
        yield* Budget.record([key], 5)
        // Another execution's spend is not this one's.
        yield* Budget.record([{ ...key, scopeId: "someone-else" }], 100)
        return { log: ["spent"] }
      }).pipe(Effect.orDie)
    ))
    .addEdge(START, "spend")
    .addEdge("spend", END)
})

for (const backend of backends) {
  describe(`spend in history snapshots on ${backend.name}`, () => {
    it.effect("the snapshot keeps the execution's lifetime and per-day spend and their total; null when nothing was spent", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 11, 1, 23, 59))
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [spender] } })
        const running = yield* h.run(0, (b) => b.execute(spender, { log: [] }))
        yield* h.advance("2 minutes")
        const out = yield* Fiber.join(running)
        const free = yield* Fiber.join(yield* h.run(0, (b) => b.execute(spender, { log: ["free"] })))
        const history = yield* ExecutionHistoryStore
        const snapshot = Option.getOrThrow(yield* history.get(out.tenantId, out.executionId))
        assert.deepStrictEqual(snapshot.spend, { total: 15, lifetime: 3, days: { "2026-12-01": 7, "2026-12-02": 5 } })
        assert.isNull(Option.getOrThrow(yield* history.get(free.tenantId, free.executionId)).spend)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))))
  })
}

describe("requestRetention", () => {
  const refused = (options: BatonConfig.BatonConfigOptions) =>
    Effect.map(Effect.exit(BatonConfig.make(options)), (exit) => {
      assert.isTrue(Exit.isFailure(exit), `${JSON.stringify(options)} is refused`)
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined
      return [error?._tag, error?.field]
    })

  it.effect("defaults to 24 hours, is checked at build (≥ 1 s, ≤ 366 days, a duration) and read from BATON_REQUEST_RETENTION", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* BatonConfig.make({})).requestRetentionMillis, 24 * 60 * 60 * 1000)
      assert.strictEqual((yield* BatonConfig.make({ requestRetention: "2 hours" })).requestRetentionMillis, 2 * 60 * 60 * 1000)
      for (const requestRetention of ["0 seconds", "500 millis", "400 days", Number.NaN, "forever"] as const) {
        assert.deepStrictEqual(yield* refused({ requestRetention: requestRetention as Duration.Input }), ["BatonConfigError", "requestRetention"])
      }
      const fromEnv = yield* Effect.service(BatonConfig.BatonConfig).pipe(
        Effect.provide(BatonConfig.layerConfig()),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ BATON_REQUEST_RETENTION: "90 minutes" })))
      )
      assert.strictEqual(fromEnv.requestRetentionMillis, 90 * 60 * 1000)
      const bad = yield* Effect.exit(Effect.service(BatonConfig.BatonConfig).pipe(
        Effect.provide(BatonConfig.layerConfig()),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ BATON_REQUEST_RETENTION: "100" })))
      ))
      assert.include(Exit.isFailure(bad) ? String(Option.getOrUndefined(Exit.findErrorOption(bad))?.message) : "", "BATON_REQUEST_RETENTION")
    }))
})
