/**
 * Spend budgets raced from several instances, each with its own store
 * connection: concurrent spenders stop exactly at the limit. Shared by the
 * memory / SQLite and Postgres test files.
 */
import { assert, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import * as Budget from "../../../src/runtime/limits/Budget.ts"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import { LedgerStore } from "../../../src/stores/LedgerStore.ts"
import { RateLimitStore } from "../../../src/stores/RateLimitStore.ts"

let next = 0
const fresh = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++next}`

/**
 * Builds `layers` (one per instance) in one memo map and answers their
 * contexts: distinct Layer values get connections of their own, one value
 * given twice (the memory stores) is one shared state.
 */
const instances = <I>(layers: ReadonlyArray<Layer.Layer<I, unknown>>) =>
  Effect.gen(function*() {
    const memoMap = yield* Layer.makeMemoMap
    const scope = yield* Effect.scope
    return yield* Effect.forEach(layers, (l) => Layer.buildWithMemoMap(l, memoMap, scope))
  })

/** Spends `amount` from instance fiber `i` until refused; answers how many spends went through. */
const spendUntilRefused = (ledger: Context.Context<LedgerStore>, budget: Budget.Budget, amount: number) =>
  Effect.gen(function*() {
    let n = 0
    while (true) {
      const exit = yield* Effect.exit(Effect.provide(Budget.spend([budget], amount), ledger))
      if (Exit.isFailure(exit)) {
        const error = exit.cause.reasons.find((r) => r._tag === "Fail")
        assert.strictEqual((error as { error: { _tag: string } } | undefined)?.error._tag, "BudgetExceededError")
        return n
      }
      n++
      yield* Effect.yieldNow
    }
  })

/** Registers the budget races over `layers` (one Layer per instance, each its own connection). */
export const budgetRaces = (name: string, layers: ReadonlyArray<Layer.Layer<LedgerStore | RateLimitStore, unknown>>) => {
  it.effect(`${name}: ${layers.length} instances spending 1 at a time stop exactly at a limit of 25`, () =>
    Effect.gen(function*() {
      const ctxs = yield* instances(layers)
      const budget: Budget.Budget = { tenantId: fresh("t"), scope: "tenant", scopeId: fresh("tenant"), limit: 25 }
      const counts = yield* Effect.all(ctxs.map((c) => spendUntilRefused(c, budget, 1)), { concurrency: "unbounded" })
      assert.strictEqual(counts.reduce((a, b) => a + b, 0), 25)
      assert.strictEqual(yield* Effect.provide(Budget.spent(budget), ctxs[0]), 25)
    }), 60_000)

  it.effect(`${name}: spends of 2 against a lifetime limit of 25 stop at 24; the refusal names the scope`, () =>
    Effect.gen(function*() {
      const ctxs = yield* instances(layers)
      const budget: Budget.Budget = { tenantId: fresh("t"), scope: "application", scopeId: fresh("app"), limit: 25, window: "lifetime" }
      const counts = yield* Effect.all(ctxs.map((c) => spendUntilRefused(c, budget, 2)), { concurrency: "unbounded" })
      assert.strictEqual(counts.reduce((a, b) => a + b, 0), 12)
      const refused = yield* Effect.flip(Effect.provide(Budget.spend([budget], 2), ctxs[1]))
      assert.strictEqual(refused._tag, "BudgetExceededError")
      if (refused._tag === "BudgetExceededError") {
        assert.deepStrictEqual([refused.scope, refused.scopeId, refused.limit, refused.total], ["application", budget.scopeId, 25, 24])
        assert.include(refused.message, `application budget of ${budget.scopeId}`)
      }
    }), 60_000)

  it.effect(`${name}: guarded calls with a cost of 1 against an execution budget of 10 → exactly 10 calls run`, () =>
    Effect.gen(function*() {
      const ctxs = yield* instances(layers)
      const budget: Budget.Budget = { tenantId: fresh("t"), scope: "execution", scopeId: fresh("exec"), limit: 10 }
      const provider = yield* Provider.make({ key: fresh("llm") })
      let calls = 0
      const call = Effect.sync(() => calls++)
      const exits = yield* Effect.all(
        Array.from({ length: 24 }, (_, k) =>
          Effect.exit(Effect.provide(
            Provider.guard(provider, { holder: `instance-${k % ctxs.length}`, budgets: [budget], cost: 1 })(call),
            ctxs[k % ctxs.length]
          ) as Effect.Effect<number, unknown>)),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 10)
      assert.strictEqual(calls, 10)
      assert.strictEqual(yield* Effect.provide(Budget.spent(budget), ctxs[2 % ctxs.length]), 10)
    }), 60_000)
}
