/**
 * The limiter store suite against the SQLite `RateLimiterStore` and
 * `CircuitBreakerStore`: two connections on one file (busy timeout 0 — one
 * process), racing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Layer, Option, Scope } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import { TestClock } from "effect/testing"
import * as RateLimiter from "effect/persistence/RateLimiter"
import { SqliteLimiters, SqliteStores } from "../../layers/sqlite/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { tempDb } from "./tmp.ts"

const path = tempDb("limiters")
Conformance.limiterStoresSuite({
  name: "sqlite, two connections on one file",
  layer: SqliteLimiters.layer({ path, busyTimeout: 0 }),
  second: SqliteLimiters.layer({ path, busyTimeout: 0 })
})

// The bundle provides both stores on its own connection, migrated once with the other stores.
const bundlePath = tempDb("bundle")
Conformance.limiterStoresSuite({
  name: "sqlite, through the SqliteStores bundle (two builds on one file)",
  layer: SqliteStores.layer({ path: bundlePath, busyTimeout: 0 }),
  second: SqliteStores.layer({ path: bundlePath, busyTimeout: 0 })
})

describe("effect's RateLimiter and CircuitBreaker on the SqliteStores bundle, no other Layer", () => {
  const path = tempDb("bundle-services")
  const instance = () => Layer.mergeAll(RateLimiter.layer, CircuitBreaker.layer({ tripPolicy: CircuitBreaker.consecutive(2), openDuration: "10 seconds" })).pipe(
    Layer.provideMerge(SqliteStores.layer({ path, busyTimeout: 0 }))
  )
  it.effect("two instances' limiters share one window and one circuit", () =>
    Effect.gen(function*() {
      const one = yield* Layer.build(instance())
      const two = yield* Layer.build(instance())
      const consume = (ctx: Context.Context<RateLimiter.RateLimiter>) =>
        Effect.exit(Context.get(ctx, RateLimiter.RateLimiter).consume({ key: "calls", limit: 5, window: "1 minute" }))
      const exits = yield* Effect.all(Array.from({ length: 8 }, (_, i) => consume(i % 2 === 0 ? one : two)), { concurrency: "unbounded" })
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 5, "a window of 5 admits exactly 5 of 8 across both")
      const call = (ctx: Context.Context<CircuitBreaker.CircuitBreaker>, ok: boolean) =>
        Effect.exit(Context.get(ctx, CircuitBreaker.CircuitBreaker).execute(ok ? Effect.void : Effect.fail("boom"), { key: "provider" }))
      yield* call(one, false)
      yield* call(two, false)
      const seen = yield* call(one, true)
      assert.isTrue(Exit.isFailure(seen), "two failures, one on each instance, opened the shared circuit")
      yield* TestClock.adjust("10 seconds")
      assert.isTrue(Exit.isSuccess(yield* call(two, true)), "after the open duration the probe goes through")
    }))
})

describe("the SQL circuit breaker's probe lease (two connections)", () => {
  const probePath = tempDb("probe")
  const one = SqliteLimiters.layer({ path: probePath, busyTimeout: 0, probeLease: "3 seconds" })
  const two = SqliteLimiters.layer({ path: probePath, busyTimeout: 0, probeLease: "3 seconds" })
  const tripped = (store: CircuitBreaker.CircuitBreakerStore["Service"], key: string) =>
    Effect.gen(function*() {
      const first = yield* Effect.scoped(store.admit(key))
      yield* store.record({ key, generation: first.generation, outcome: "Failure", tripPolicy: CircuitBreaker.consecutive(1), openFor: Duration.seconds(1) })
      yield* TestClock.adjust(1_000)
    })
  const reason = <A>(exit: Exit.Exit<A, CircuitBreaker.CircuitBreakerError>) =>
    Exit.isFailure(exit) ? Option.match(Cause.findErrorOption(exit.cause), { onNone: () => "Defect", onSome: (e) => e.reason._tag }) : "Success"

  it.effect("a live probe holds the circuit past its lease (renewed); a dead one frees it after the lease and its late outcome is discarded", () =>
    Effect.gen(function*() {
      const ctx1 = yield* Layer.build(one)
      const ctx2 = yield* Layer.build(two)
      const s1 = Context.get(ctx1, CircuitBreaker.CircuitBreakerStore)
      const s2 = Context.get(ctx2, CircuitBreaker.CircuitBreakerStore)

      yield* tripped(s1, "live")
      const liveScope = yield* Scope.make()
      const live = yield* Effect.provideService(s1.admit("live"), Scope.Scope, liveScope)
      assert.isTrue(live.probe)
      for (let s = 0; s < 10; s++) {
        yield* TestClock.adjust(1_000)
        yield* Effect.yieldNow
      }
      assert.strictEqual(reason(yield* Effect.exit(Effect.scoped(s2.admit("live")))), "CircuitHalfOpen", "still probing after 10 s: renewed")
      yield* Scope.close(liveScope, Exit.void)

      yield* tripped(s1, "dead")
      const deadScope = yield* Scope.make()
      const dead = yield* Effect.provideService(s1.admit("dead"), Scope.Scope, deadScope)
      yield* Scope.close(deadScope, Exit.void) // its process died: no more renewals, no outcome
      yield* TestClock.adjust(2_000)
      assert.strictEqual(reason(yield* Effect.exit(Effect.scoped(s2.admit("dead")))), "CircuitHalfOpen", "the lease still runs")
      yield* TestClock.adjust(1_000)
      const takeover = yield* Effect.scoped(s2.admit("dead"))
      assert.isTrue(takeover.probe, "another caller takes over as the probe")
      assert.notStrictEqual(takeover.generation, dead.generation)
      const late = yield* s1.record({ key: "dead", generation: dead.generation, outcome: "Success", tripPolicy: CircuitBreaker.consecutive(1), openFor: Duration.seconds(1) })
      assert.isUndefined(late, "the dead probe's outcome is fenced off")
      const closed = yield* s2.record({ key: "dead", generation: takeover.generation, outcome: "Success", tripPolicy: CircuitBreaker.consecutive(1), openFor: Duration.seconds(1) })
      assert.deepStrictEqual(closed, { key: "dead", from: "HalfOpen", to: "Closed" })
    }))
})
