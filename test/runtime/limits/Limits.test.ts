/**
 * Fleet-wide provider limits on the multi-instance harness (TestClock, three
 * instances over one set of stores): concurrency slots shared by every
 * instance, a killed holder's slot coming back after its lease, a 429's
 * cooldown honoured by all, and a circuit breaker opening on failures and
 * half-opening after its open time on every instance.
 *
 * Each call runs in a fiber of its instance, with that instance's services
 * (its gated stores and clock), as an Effect step would.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, Layer, Schema } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag } from "../fixtures.ts"
import { limitBackends } from "./limitBackends.ts"

/** A provider's answer "429 Too Many Requests" with its Retry-After. */
class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", { retryAfterSeconds: Schema.Number }) {}
class ProviderDown extends Schema.TaggedError<ProviderDown>()("ProviderDown", {}) {}

const backends = limitBackends

/** What the provider saw: each call's start as `instance@second`, and the most calls at once. */
const makeTrace = () => {
  const trace = {
    starts: [] as Array<string>,
    running: 0,
    most: 0,
    /** A provider call made by instance `i` that works `seconds` on the Clock, then answers `result`. */
    call: <A, E>(i: number, seconds: number, result: Effect.Effect<A, E> = Effect.void as Effect.Effect<any, E>) =>
      Effect.gen(function*() {
        trace.starts.push(`${i}@${(yield* Clock.currentTimeMillis) / 1000}`)
        trace.running++
        trace.most = Math.max(trace.most, trace.running)
        if (seconds > 0) yield* Effect.sleep(Duration.seconds(seconds))
        return yield* result
      }).pipe(Effect.ensuring(Effect.sync(() => trace.running--)))
  }
  return trace
}

/** Runs `effect` on instance `i` with its services, in a fiber of that instance. */
const on = <A, E>(h: Harness.Harness, i: number, effect: Effect.Effect<A, E, any>) =>
  h.run(i, () => Effect.provide(effect, h.instance(i).instance.services) as Effect.Effect<A, E>)

const guarded = (h: Harness.Harness, i: number, provider: Provider.Provider) =>
<A, E>(call: Effect.Effect<A, E>) => on(h, i, Provider.guard(provider, { holder: h.instance(i).instanceId })(call))

const readinessOn = (h: Harness.Harness, i: number, provider: Provider.Provider) =>
  Effect.flatMap(on(h, i, Provider.readiness([provider])), Fiber.join)

const harness = (n: number) => Harness.make({ instances: n, baton: { workflows: [] } })

for (const backend of backends) {
  describe(`provider limits on ${backend.name}, three instances`, () => {
    it.effect("slots are shared: 2 slots, 7 calls from 3 instances → never more than 2 at once, every call runs", () =>
      Effect.gen(function*() {
        const h = yield* harness(3)
        const provider = yield* Provider.make({ key: "llm-slots", slots: { max: 2, lease: "30 seconds", timeout: "10 minutes" } })
        const t = makeTrace()
        const fibers = []
        for (let c = 0; c < 7; c++) fibers.push(yield* guarded(h, c % 3, provider)(t.call(c % 3, 10)))
        for (let s = 0; s < 8; s++) yield* h.advance("5 seconds")
        const exits = yield* Effect.forEach(fibers, Fiber.await)
        assert.deepStrictEqual(exits.map(errorTag), Array(7).fill("Success"))
        assert.strictEqual(t.most, 2, "at most 2 calls at once across the instances")
        assert.strictEqual(t.starts.length, 7)
        const seconds = t.starts.map((s) => Number(s.split("@")[1]))
        assert.deepStrictEqual(seconds.slice(0, 2), [0, 0], "two start at once")
        assert.isTrue(seconds.every((x, k) => k < 2 || x >= 10), `the others wait for a slot: ${t.starts}`)
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("a killed holder's slot comes back after its lease: no other call starts before, one starts then", () =>
      Effect.gen(function*() {
        const h = yield* harness(3)
        const provider = yield* Provider.make({ key: "llm-kill", slots: { max: 1, lease: "30 seconds", timeout: "10 minutes" } })
        const t = makeTrace()
        yield* guarded(h, 0, provider)(t.call(0, 1_000))
        yield* h.settle
        assert.deepStrictEqual(t.starts, ["0@0"])
        yield* h.kill(0)
        const waiting = [yield* guarded(h, 1, provider)(t.call(1, 5)), yield* guarded(h, 2, provider)(t.call(2, 5))]
        yield* h.advance("29 seconds")
        assert.deepStrictEqual(t.starts, ["0@0"], "the dead holder's lease still runs")
        yield* h.advance("2 seconds")
        assert.strictEqual(t.starts.length, 2, "one waiting call took the slot once the lease ran out")
        assert.strictEqual(Number(t.starts[1].split("@")[1]), 30)
        yield* h.advance("5 seconds")
        assert.strictEqual(t.starts.length, 3, "released in process: the other waiter starts at once")
        assert.strictEqual(Number(t.starts[2].split("@")[1]), 35)
        yield* h.advance("5 seconds")
        for (const f of waiting) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
        assert.strictEqual(t.most, 1, "one call at a time: the dead holder's call stopped with it, the others took turns")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("a wait for a slot ends with SlotTimeoutError after its timeout", () =>
      Effect.gen(function*() {
        const h = yield* harness(2)
        const provider = yield* Provider.make({ key: "llm-timeout", slots: { max: 1, timeout: "20 seconds" } })
        const t = makeTrace()
        yield* guarded(h, 0, provider)(t.call(0, 100))
        yield* h.settle
        const late = yield* guarded(h, 1, provider)(t.call(1, 1))
        yield* h.advance("21 seconds")
        const exit = yield* Fiber.await(late)
        assert.strictEqual(errorTag(exit), "SlotTimeoutError")
        assert.deepStrictEqual(t.starts, ["0@0"])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("a call waiting for a slot can be interrupted; it leaves the line and the next waiter gets the slot", () =>
      Effect.gen(function*() {
        const h = yield* harness(1)
        const provider = yield* Provider.make({ key: "llm-cancel", slots: { max: 1, timeout: "10 minutes" } })
        const t = makeTrace()
        yield* guarded(h, 0, provider)(t.call(0, 10))
        yield* h.settle
        const cancelled = yield* guarded(h, 0, provider)(t.call(0, 1))
        const next = yield* guarded(h, 0, provider)(t.call(0, 1))
        yield* h.advance("2 seconds")
        yield* Fiber.interrupt(cancelled)
        yield* h.advance("9 seconds")
        assert.strictEqual(errorTag(yield* Fiber.await(next)) ?? "interrupted", "Success")
        assert.deepStrictEqual(t.starts, ["0@0", "0@10"], "the waiter after the cancelled one took the slot when it came free")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("a 429 with Retry-After pauses the provider for every instance until it ends", () =>
      Effect.gen(function*() {
        const h = yield* harness(3)
        const provider = yield* Provider.make({
          key: "llm-429",
          retryAfter: (e) => e instanceof RateLimited ? Duration.seconds(e.retryAfterSeconds) : undefined
        })
        const t = makeTrace()
        const first = yield* guarded(h, 0, provider)(t.call(0, 1, Effect.fail(new RateLimited({ retryAfterSeconds: 20 }))))
        yield* h.advance("1 second")
        assert.strictEqual(errorTag(yield* Fiber.await(first)), "RateLimited")
        const later = [
          yield* guarded(h, 1, provider)(t.call(1, 0)),
          yield* guarded(h, 2, provider)(t.call(2, 0)),
          yield* guarded(h, 0, provider)(t.call(0, 0))
        ]
        yield* h.advance("19 seconds")
        assert.deepStrictEqual(t.starts, ["0@0"], "nobody calls during the cooldown")
        yield* h.advance("1 second")
        for (const f of later) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
        assert.deepStrictEqual(t.starts.slice(1).map((s) => s.split("@")[1]), ["21", "21", "21"], "all call once it ended")
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("a breaker opens on failures for every instance (readiness Degraded there), half-opens after its open time, closes on a good probe", () =>
      Effect.gen(function*() {
        const h = yield* harness(3)
        const provider = yield* Provider.make({
          key: "llm-breaker",
          breaker: { tripPolicy: CircuitBreaker.consecutive(3), openDuration: "10 seconds" }
        })
        const t = makeTrace()
        for (let k = 0; k < 3; k++) {
          const f = yield* guarded(h, k, provider)(t.call(k, 0, Effect.fail(new ProviderDown())))
          assert.strictEqual(errorTag(yield* Fiber.await(f)), "ProviderDown")
        }
        for (const i of [0, 1, 2]) {
          const exit = yield* Fiber.await(yield* guarded(h, i, provider)(t.call(i, 0)))
          assert.strictEqual(errorTag(exit), "CircuitBreakerError", `instance ${i} fails fast`)
          if (Exit.isFailure(exit)) assert.include(String(exit.cause), "Circuit open")
          const [component] = yield* readinessOn(h, i, provider)
          assert.strictEqual(component.name, "provider:llm-breaker")
          assert.strictEqual(component.status, "Degraded", `instance ${i}: ${component.message}`)
        }
        assert.strictEqual(t.starts.length, 3, "no call reached the provider while open")
        yield* h.advance("10 seconds")
        const probe = yield* guarded(h, 1, provider)(t.call(1, 5))
        yield* h.settle
        for (const i of [0, 2]) {
          const exit = yield* Fiber.await(yield* guarded(h, i, provider)(t.call(i, 0)))
          assert.strictEqual(errorTag(exit), "CircuitBreakerError")
          if (Exit.isFailure(exit)) assert.include(String(exit.cause), "Circuit half-open")
          const [component] = yield* readinessOn(h, i, provider)
          assert.strictEqual(component.status, "Degraded")
          assert.include(component.message, "half-open")
        }
        yield* h.advance("5 seconds")
        assert.strictEqual(errorTag(yield* Fiber.await(probe)), "Success")
        for (const i of [0, 1, 2]) {
          assert.strictEqual((yield* readinessOn(h, i, provider))[0].status, "Healthy")
          assert.strictEqual(errorTag(yield* Fiber.await(yield* guarded(h, i, provider)(t.call(i, 0)))), "Success")
        }
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)
  })
}

describe("Provider.make", () => {
  it.effect("a bad field fails with BatonConfigError naming it", () =>
    Effect.gen(function*() {
      const field = (definition: Provider.Provider) =>
        Effect.map(Effect.flip(Provider.make(definition)), (e) => [e._tag, e.field])
      assert.deepStrictEqual(yield* field({ key: "" }), ["BatonConfigError", "provider.key"])
      assert.deepStrictEqual(yield* field({ key: "p", slots: { max: 0 } }), ["BatonConfigError", "provider p: slots.max"])
      assert.deepStrictEqual(yield* field({ key: "p", slots: { max: 1, lease: "0 seconds" } }), ["BatonConfigError", "provider p: slots.lease"])
      assert.deepStrictEqual(yield* field({ key: "p", windows: [{ limit: 10, window: "1 minute" }, { limit: -1, window: "1 minute" }] }), [
        "BatonConfigError",
        "provider p: windows[1].limit"
      ])
      assert.deepStrictEqual(yield* field({ key: "p", windows: [{ limit: 1, window: "0 millis" }] }), ["BatonConfigError", "provider p: windows[0].window"])
      assert.deepStrictEqual(
        yield* field({ key: "p", breaker: { tripPolicy: CircuitBreaker.consecutive(1), openDuration: "-1 seconds" } }),
        ["BatonConfigError", "provider p: breaker.openDuration"]
      )
      const ok = yield* Provider.make({ key: "p", slots: { max: 2 }, windows: [{ limit: 1, window: "1 second" }] })
      assert.strictEqual(ok.key, "p")
    }))
})
