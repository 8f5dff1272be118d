/**
 * Conformance suite for implementations of effect's `RateLimiterStore` and
 * `CircuitBreakerStore` (module `effect/persistence`): same inputs, same
 * answers as effect's own memory stores, plus races between two instances.
 *
 * Every script runs step by step on effect's memory store and on the store
 * under test at the same TestClock time, through effect's `RateLimiter` and
 * `CircuitBreaker` — what an application sees — and the two answer lists
 * must be equal. Durations are compared in milliseconds.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Cause, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Schedule } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as RateLimiter from "effect/persistence/RateLimiter"
import { TestClock } from "effect/testing"
import { race, type SuiteOptions } from "./Suite.ts"
import { defineSuite } from "./SuiteDefinition.ts"

/** Both stores as one instance sees them. */
export interface LimiterStores {
  readonly rate: RateLimiter.RateLimiterStore["Service"]
  readonly breaker: CircuitBreaker.CircuitBreakerStore["Service"]
}

type Services = RateLimiter.RateLimiterStore | CircuitBreaker.CircuitBreakerStore

/** A value with every Duration replaced by its milliseconds, for deep comparison. */
const plain = (u: unknown): unknown => {
  if (Duration.isDuration(u)) return { millis: Duration.toMillis(u) }
  if (Array.isArray(u)) return u.map(plain)
  if (u !== null && typeof u === "object") return Object.fromEntries(Object.entries(u).map(([k, v]) => [k, plain(v)]))
  return u
}

/** An exit as data: the value, or the failure's reason with its fields. */
const answer = <A, E>(exit: Exit.Exit<A, E>): unknown => {
  if (Exit.isSuccess(exit)) return { ok: plain(exit.value) }
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isNone(error)) return { defect: Cause.pretty(exit.cause) }
  const e = error.value as { readonly _tag?: string; readonly reason?: Record<string, unknown> }
  const r = e.reason ?? {}
  return {
    error: e._tag,
    reason: r._tag,
    retryAfter: plain(r.retryAfter),
    limit: r.limit,
    remaining: r.remaining,
    key: r.key
  }
}

/** One step of a script: wait `after` ms, then run `op` against a subject. */
interface Step<S> {
  readonly after?: number | undefined
  readonly op: (subject: S) => Effect.Effect<unknown, unknown>
}

/** Runs `steps` on `reference` and `tested` at the same clock times; answers both lists. */
const compare = <S>(reference: S, tested: S, steps: ReadonlyArray<Step<S>>) =>
  Effect.gen(function*() {
    const expected: Array<unknown> = []
    const actual: Array<unknown> = []
    for (const step of steps) {
      if (step.after !== undefined) yield* TestClock.adjust(step.after)
      expected.push(answer(yield* Effect.exit(step.op(reference))))
      actual.push(answer(yield* Effect.exit(step.op(tested))))
    }
    assert.deepStrictEqual(actual, expected)
    return actual
  })

const limiterOver = (store: RateLimiter.RateLimiterStore["Service"]) =>
  Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, store)

const memoryRate = Effect.map(Layer.build(RateLimiter.layerStoreMemory), (ctx) => Context.get(ctx, RateLimiter.RateLimiterStore))
const memoryBreaker = Effect.map(Layer.build(CircuitBreaker.layerStoreMemory()), (ctx) => Context.get(ctx, CircuitBreaker.CircuitBreakerStore))

const breakerOver = (
  store: CircuitBreaker.CircuitBreakerStore["Service"],
  options: Parameters<typeof CircuitBreaker.make>[0]
) => Effect.provideService(CircuitBreaker.make(options), CircuitBreaker.CircuitBreakerStore, store)

type Consume = Parameters<RateLimiter.RateLimiter["consume"]>[0]

const boom = Effect.fail("boom" as const)

/**
 * Registers the limiter store conformance tests (call it at the top level of a
 * vitest file). `layer` (and `second`, another connection to the same state)
 * provide both stores.
 */
export const limiterStoresSuite = (options: SuiteOptions<Services> & { readonly racers?: number | undefined }): void => {
  const { ids, racers, register } = defineSuite(options, {
    contract: "LimiterStores",
    title: "RateLimiterStore and CircuitBreakerStore conformance",
    pick: (ctx): LimiterStores => ({
      rate: Context.get(ctx, RateLimiter.RateLimiterStore),
      breaker: Context.get(ctx, CircuitBreaker.CircuitBreakerStore)
    }),
    racers: Math.max(options.racers ?? 8, 2)
  })

  const consumeSteps = (key: string, o: Omit<Consume, "key">, times: number, after?: number): Array<Step<RateLimiter.RateLimiter>> =>
    Array.from({ length: times }, (_, i) => ({ after: i === 0 ? after : undefined, op: (l) => l.consume({ ...o, key }) }))

  register((test) => {
    test("fixed window answers as effect's memory store (fail and delay, whole and fractional refill)", function*(stores) {
      const reference = yield* limiterOver(yield* memoryRate)
      const tested = yield* limiterOver(stores.first.rate)
      const a = ids("fixed")
      const b = ids("fixed")
      const c = ids("fixed")
      const fail = { limit: 5, window: "10 seconds" } as const
      const answers = yield* compare(reference, tested, [
        ...consumeSteps(a, fail, 6),
        ...consumeSteps(a, fail, 1, 4_000),
        ...consumeSteps(a, fail, 2, 6_000),
        ...consumeSteps(a, { ...fail, tokens: 3 }, 2),
        ...consumeSteps(a, { ...fail, tokens: 6 }, 1),
        ...consumeSteps(b, { limit: 2, window: "1 second", onExceeded: "delay" }, 5),
        ...consumeSteps(b, { limit: 2, window: "1 second", onExceeded: "delay" }, 2, 1_200),
        ...consumeSteps(c, { limit: 3, window: "1 second", onExceeded: "delay" }, 7),
        ...consumeSteps(c, { limit: 3, window: "1 second", onExceeded: "delay", tokens: 0.5 }, 3, 500),
        ...consumeSteps(c, { limit: 3, window: "1 second" }, 2, 5_000)
      ])
      const admitted = answers.slice(0, 6).filter((x) => (x as { ok?: unknown }).ok !== undefined).length
      assert.strictEqual(admitted, 5, "a window of limit 5 admits 5")
    })

    test("token bucket answers as effect's memory store (fail and delay, refill, fractional tokens)", function*(stores) {
      const reference = yield* limiterOver(yield* memoryRate)
      const tested = yield* limiterOver(stores.second.rate)
      const a = ids("bucket")
      const b = ids("bucket")
      const fail = { limit: 4, window: "4 seconds", algorithm: "token-bucket" } as const
      const delay = { limit: 2, window: "1 second", algorithm: "token-bucket", onExceeded: "delay" } as const
      yield* compare(reference, tested, [
        ...consumeSteps(a, fail, 5),
        ...consumeSteps(a, fail, 2, 1_500),
        ...consumeSteps(a, fail, 1, 10_000),
        ...consumeSteps(a, { ...fail, tokens: 0.5 }, 3, 250),
        ...consumeSteps(b, delay, 5),
        ...consumeSteps(b, delay, 2, 300),
        ...consumeSteps(b, delay, 1, 5_000)
      ])
    })

    test("adaptive consume and 429 feedback answer as effect's memory store (cooldown, learning, learned)", function*(stores) {
      const reference = yield* memoryRate
      const key = ids("adaptive")
      const consume = (tokens = 1): Step<RateLimiter.RateLimiterStore["Service"]> => ({
        op: (s) => s.adaptiveConsume({ key, tokens, fallbackLimit: 10, fallbackWindow: Duration.seconds(10) })
      })
      const feedback = (epoch: number, retryAfter: number | undefined, status = 429, tokens = 1): Step<RateLimiter.RateLimiterStore["Service"]> => ({
        op: (s) => s.adaptiveFeedback({ key, epoch, tokens, status, retryAfter: retryAfter === undefined ? undefined : Duration.millis(retryAfter) })
      })
      const wait = (ms: number): Step<RateLimiter.RateLimiterStore["Service"]> => ({ after: ms, op: () => Effect.void })
      yield* compare(reference, stores.first.rate, [
        consume(),
        feedback(0, 2_000, 200),
        feedback(0, undefined),
        consume(),
        feedback(0, 2_000),
        consume(),
        feedback(0, 3_000),
        consume(),
        wait(3_000),
        consume(),
        consume(),
        consume(2),
        feedback(0, 1_000),
        wait(500),
        consume(),
        feedback(1, 1_000),
        consume(),
        consume(),
        consume(),
        consume(),
        wait(2_000),
        consume(),
        feedback(2, 4_000),
        consume(),
        wait(100_000),
        consume()
      ])
    })

    test("circuit breaker answers as effect's memory store (consecutive policy: open, probe, close, reopen)", function*(stores) {
      const policy = { tripPolicy: CircuitBreaker.consecutive(3), openDuration: "5 seconds" } as const
      const reference = yield* breakerOver(yield* memoryBreaker, policy)
      const tested = yield* breakerOver(stores.second.breaker, policy)
      const key = ids("breaker")
      const ok: Step<CircuitBreaker.CircuitBreaker> = { op: (b) => b.execute(Effect.succeed("ok"), { key }) }
      const ko: Step<CircuitBreaker.CircuitBreaker> = { op: (b) => b.execute(boom, { key }) }
      const state: Step<CircuitBreaker.CircuitBreaker> = { op: (b) => b.state(key) }
      const later = (ms: number, step: Step<CircuitBreaker.CircuitBreaker>) => ({ ...step, after: ms })
      const answers = yield* compare(reference, tested, [
        state,
        ko,
        ok,
        ko,
        ko,
        state,
        ko,
        state,
        ok,
        later(2_000, ok),
        later(3_000, state),
        ko,
        state,
        later(5_000, ok),
        state,
        ko,
        ko,
        ko,
        state,
        later(5_000, state),
        ok,
        later(10_000, state),
        ok
      ])
      assert.deepStrictEqual((answers[7] as { ok: { _tag: string } }).ok._tag, "Open", "three failures in a row open the circuit")
    })

    test("circuit breaker answers as effect's memory store (rate policy, classify, retry-after hint, ignored probe)", function*(stores) {
      const policy = {
        tripPolicy: CircuitBreaker.rate({ threshold: 0.5, size: 4, minimumCalls: 4 }),
        openDuration: Schedule.exponential("1 second")
      } as const
      const reference = yield* breakerOver(yield* memoryBreaker, policy)
      const tested = yield* breakerOver(stores.first.breaker, policy)
      const key = ids("breaker")
      const classify = (exit: Exit.Exit<string, string>) =>
        Exit.isSuccess(exit)
          ? exit.value === "skip" ? CircuitBreaker.ignored : CircuitBreaker.success
          : CircuitBreaker.failure({ retryAfter: "3 seconds" })
      const run = (outcome: "ok" | "ko" | "skip", after?: number): Step<CircuitBreaker.CircuitBreaker> => ({
        after,
        op: (b) => b.execute(outcome === "ko" ? boom : Effect.succeed(outcome), { key, classify })
      })
      const state = (after?: number): Step<CircuitBreaker.CircuitBreaker> => ({ after, op: (b) => b.state(key) })
      yield* compare(reference, tested, [
        run("ok"),
        run("ko"),
        run("skip"),
        run("ok"),
        run("ko"),
        state(),
        run("ok", 1_000),
        state(2_000),
        run("skip"),
        state(),
        run("ko"),
        state(),
        run("ok", 3_000),
        run("ko", 10_000),
        run("ko"),
        run("ko"),
        run("ok"),
        state()
      ])
    })

    test("a running probe holds the HalfOpen circuit: other calls fail CircuitHalfOpen until it records", function*(stores) {
      const policy = { tripPolicy: CircuitBreaker.consecutive(1), openDuration: "1 second" } as const
      const probeThenCall = (first: CircuitBreaker.CircuitBreaker, other: CircuitBreaker.CircuitBreaker, key: string) =>
        Effect.gen(function*() {
          yield* Effect.exit(first.execute(boom, { key }))
          yield* TestClock.adjust(1_000)
          const started = yield* Deferred.make<void>()
          const finish = yield* Deferred.make<void>()
          const probe = yield* Effect.forkChild(first.execute(Effect.andThen(Deferred.succeed(started, undefined), Deferred.await(finish)), { key }))
          yield* Deferred.await(started)
          const during = answer(yield* Effect.exit(other.execute(Effect.succeed(1), { key })))
          const stateDuring = answer(yield* Effect.exit(other.state(key)))
          yield* Deferred.succeed(finish, undefined)
          yield* Fiber.join(probe)
          const after = answer(yield* Effect.exit(other.execute(Effect.succeed(2), { key })))
          return [during, stateDuring, after]
        })
      const key = ids("probe")
      const memory = yield* breakerOver(yield* memoryBreaker, policy)
      const expected = yield* probeThenCall(memory, memory, key)
      const actual = yield* probeThenCall(yield* breakerOver(stores.first.breaker, policy), yield* breakerOver(stores.second.breaker, policy), key)
      assert.deepStrictEqual(actual, expected)
      assert.strictEqual((expected[0] as { reason: string }).reason, "CircuitHalfOpen")
    })

    test(`${racers} consumers on two instances: a fixed window of limit 5 admits exactly 5, again in the next window`, function*(stores) {
      const limiters = [yield* limiterOver(stores.first.rate), yield* limiterOver(stores.second.rate)]
      const key = ids("race")
      for (const round of [0, 1, 2]) {
        if (round > 0) yield* TestClock.adjust(10_000)
        const exits = yield* race(racers, (i) => limiters[i % 2].consume({ key, limit: 5, window: "10 seconds" }))
        const admitted = exits.filter(Exit.isSuccess).map((e) => e.value.remaining).sort()
        assert.deepStrictEqual(admitted, [0, 1, 2, 3, 4], `round ${round}: exactly 5 admitted, each with its own count`)
        for (const exit of exits) {
          if (Exit.isFailure(exit)) assert.strictEqual((answer(exit) as { reason: string }).reason, "RateLimitExceeded")
        }
      }
    })

    test(`${racers} consumers on two instances: a token bucket of 5 admits exactly 5; delayed consumers queue in order`, function*(stores) {
      const limiters = [yield* limiterOver(stores.first.rate), yield* limiterOver(stores.second.rate)]
      const key = ids("race")
      const exits = yield* race(racers, (i) => limiters[i % 2].consume({ key, limit: 5, window: "5 seconds", algorithm: "token-bucket" }))
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 5)
      const delayKey = ids("race")
      const delayed = yield* race(racers, (i) =>
        limiters[i % 2].consume({ key: delayKey, limit: 2, window: "2 seconds", algorithm: "token-bucket", onExceeded: "delay" }))
      const delays = delayed.map((e) => Duration.toMillis(Exit.isSuccess(e) ? e.value.delay : Duration.infinity)).sort((x, y) => x - y)
      assert.deepStrictEqual(delays, Array.from({ length: racers }, (_, i) => Math.max(0, i - 1) * 1_000))
    })

    test(`${racers} callers on two instances after the open time: exactly one becomes the probe`, function*(stores) {
      const key = ids("race")
      const first = yield* stores.first.breaker.admit(key)
      yield* stores.first.breaker.record({ key, generation: first.generation, outcome: "Failure", tripPolicy: CircuitBreaker.consecutive(1), openFor: Duration.seconds(1) })
      yield* TestClock.adjust(1_000)
      const exits = yield* race(racers, (i) => Effect.scoped((i % 2 === 0 ? stores.first : stores.second).breaker.admit(key)))
      const admitted = exits.filter(Exit.isSuccess).map((e) => e.value)
      assert.strictEqual(admitted.length, 1, "one probe")
      assert.isTrue(admitted[0].probe)
      for (const exit of exits) {
        if (Exit.isFailure(exit)) assert.strictEqual((answer(exit) as { reason: string }).reason, "CircuitHalfOpen")
      }
    })
  })
}
