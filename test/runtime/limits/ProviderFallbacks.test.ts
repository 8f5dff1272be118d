/**
 * Provider fallbacks on the multi-instance harness (TestClock, memory and
 * SQLite stores): the call moves to the next model when one's circuit is
 * open or it is rate-limited, another instance passes over a model under
 * cooldown without calling it, a call with every model unavailable is put
 * off on the Clock (never failing meanwhile) until the first is due back,
 * and fails with ProvidersUnavailableError past `maxDeferral`. Any other
 * error is the call's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Exit, Fiber, Layer, Schema } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import { MemoryLimiters } from "../../../layers/memory/index.ts"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import * as ProviderFallbacks from "../../../src/runtime/limits/ProviderFallbacks.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag, memoryStores } from "../fixtures.ts"
import { limitBackends } from "./limitBackends.ts"

/** A model's answer "429 Too Many Requests" with its Retry-After. */
class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", { retryAfterSeconds: Schema.Number }) {}
class ModelDown extends Schema.TaggedError<ModelDown>()("ModelDown", {}) {}

const retryAfter = (e: unknown) => (e instanceof RateLimited ? Duration.seconds(e.retryAfterSeconds) : undefined)

const backends = limitBackends

/** Which model each call reached, as `key@second`, and what each model answers next. */
const makeModels = () => {
  const calls: Array<string> = []
  const answers = new Map<string, Array<Effect.Effect<string, RateLimited | ModelDown>>>()
  const call = (model: Provider.Provider) =>
    Effect.gen(function*() {
      calls.push(`${model.key}@${(yield* Clock.currentTimeMillis) / 1000}`)
      const next = answers.get(model.key)?.shift()
      return yield* (next ?? Effect.succeed(`answer of ${model.key}`))
    })
  const answer = (key: string, ...next: Array<Effect.Effect<string, RateLimited | ModelDown>>) => answers.set(key, next)
  return { calls, call, answer }
}

const on = <A, E>(h: Harness.Harness, i: number, effect: Effect.Effect<A, E, any>) =>
  h.run(i, () => Effect.provide(effect, h.instance(i).instance.services) as Effect.Effect<A, E>)

const harness = (n: number) => Harness.make({ instances: n, baton: { workflows: [] } })

const fallbackProvider = Provider.make({
  key: "primary",
  breaker: { tripPolicy: CircuitBreaker.consecutive(2), openDuration: "30 seconds" },
  retryAfter,
  fallbacks: [
    { key: "second", retryAfter },
    { key: "third", retryAfter }
  ]
})

for (const backend of backends) {
  describe(`provider fallbacks on ${backend.name}`, () => {
    it.effect("an open circuit sends the call to the next model at once; the open model is not called", () =>
      Effect.gen(function*() {
        const h = yield* harness(2)
        const provider = yield* fallbackProvider
        const m = makeModels()
        m.answer("primary", Effect.fail(new ModelDown()), Effect.fail(new ModelDown()))
        const guarded = (i: number) => on(h, i, ProviderFallbacks.guard(provider, { holder: h.instance(i).instanceId })(m.call))
        // two failures of the primary are the call's own (no fallback for them) and open its circuit
        for (const i of [0, 1]) assert.strictEqual(errorTag(yield* Fiber.await(yield* guarded(i))), "ModelDown")
        assert.deepStrictEqual(m.calls, ["primary@0", "primary@0"])
        const exit = yield* Fiber.await(yield* guarded(1))
        assert.deepStrictEqual(exit, Exit.succeed("answer of second"))
        assert.deepStrictEqual(m.calls.slice(2), ["second@0"], "the open primary was passed over without a call")
        yield* h.advance("30 seconds")
        assert.deepStrictEqual(yield* Fiber.await(yield* guarded(0)), Exit.succeed("answer of primary"), "after its open time the primary takes calls again")
      }).pipe(Effect.provide(backend.stores)))

    it.effect("a 429 moves the same call on to the next model, and every instance passes over the cooling model until its Retry-After ends", () =>
      Effect.gen(function*() {
        const h = yield* harness(3)
        const provider = yield* fallbackProvider
        const m = makeModels()
        m.answer("primary", Effect.fail(new RateLimited({ retryAfterSeconds: 20 })))
        const guarded = (i: number) => on(h, i, ProviderFallbacks.guard(provider, { holder: h.instance(i).instanceId })(m.call))
        assert.deepStrictEqual(yield* Fiber.await(yield* guarded(0)), Exit.succeed("answer of second"))
        for (const i of [1, 2]) assert.deepStrictEqual(yield* Fiber.await(yield* guarded(i)), Exit.succeed("answer of second"))
        assert.deepStrictEqual(m.calls, ["primary@0", "second@0", "second@0", "second@0"], "the cooling primary got no second call")
        yield* h.advance("20 seconds")
        assert.deepStrictEqual(yield* Fiber.await(yield* guarded(2)), Exit.succeed("answer of primary"))
      }).pipe(Effect.provide(backend.stores)))

    it.effect("with every model unavailable the call is put off on the Clock, without failing, until the first is due back", () =>
      Effect.gen(function*() {
        const h = yield* harness(2)
        const provider = yield* fallbackProvider
        const m = makeModels()
        m.answer("primary", Effect.fail(new RateLimited({ retryAfterSeconds: 40 })))
        m.answer("second", Effect.fail(new RateLimited({ retryAfterSeconds: 15 })))
        m.answer("third", Effect.fail(new RateLimited({ retryAfterSeconds: 60 })))
        const fiber = yield* on(h, 1, ProviderFallbacks.guard(provider, { holder: h.instance(1).instanceId })(m.call))
        yield* h.settle
        assert.deepStrictEqual(m.calls, ["primary@0", "second@0", "third@0"])
        yield* h.advance("14 seconds")
        assert.isUndefined(fiber.pollUnsafe(), "still put off, not failed, before the first model is due back")
        assert.strictEqual(m.calls.length, 3, "no model called while all are cooling")
        yield* h.advance("1 second")
        assert.deepStrictEqual(yield* Fiber.await(fiber), Exit.succeed("answer of second"))
        assert.deepStrictEqual(m.calls.slice(3), ["second@15"], "the cooling primary was passed over, the second called when due")
      }).pipe(Effect.provide(backend.stores)))

    it.effect("put off past maxDeferral, the call fails with ProvidersUnavailableError naming each model and why", () =>
      Effect.gen(function*() {
        const h = yield* harness(1)
        const provider = yield* fallbackProvider
        const m = makeModels()
        for (const key of ["primary", "second", "third"]) m.answer(key, Effect.fail(new RateLimited({ retryAfterSeconds: 120 })))
        const fiber = yield* on(h, 0, ProviderFallbacks.guard(provider, { holder: h.instance(0).instanceId, maxDeferral: "1 minute" })(m.call))
        yield* h.settle
        const exit = yield* Fiber.await(fiber)
        assert.strictEqual(errorTag(exit), "ProvidersUnavailableError")
        const error = Exit.isFailure(exit) ? (exit.cause.reasons[0] as { error: ProviderFallbacks.ProvidersUnavailableError }).error : undefined
        assert.deepStrictEqual(error?.keys, ["primary", "second", "third"])
        assert.deepStrictEqual(error?.reasons, ["answered 429 (rate-limited)", "answered 429 (rate-limited)", "answered 429 (rate-limited)"])
        assert.strictEqual(error?.maxDeferralMillis, 60_000)
        assert.include(error?.message ?? "", "Retry later")
        assert.strictEqual(m.calls.length, 3)
      }).pipe(Effect.provide(backend.stores)))

    it.effect("any other failure is the call's own: no fallback is called for it", () =>
      Effect.gen(function*() {
        const h = yield* harness(1)
        const provider = yield* Provider.make({ key: "plain", fallbacks: [{ key: "spare" }] })
        const m = makeModels()
        m.answer("plain", Effect.fail(new ModelDown()))
        const exit = yield* Fiber.await(yield* on(h, 0, ProviderFallbacks.guard(provider, { holder: h.instance(0).instanceId })(m.call)))
        assert.strictEqual(errorTag(exit), "ModelDown")
        assert.deepStrictEqual(m.calls, ["plain@0"])
      }).pipe(Effect.provide(backend.stores)))
  })
}

describe("provider fallbacks: definitions", () => {
  it.effect("a fallback with fallbacks of its own, a repeated key, or a bad field fails with BatonConfigError naming it", () =>
    Effect.gen(function*() {
      const nested = yield* Effect.flip(Provider.make({ key: "a", fallbacks: [{ key: "b", fallbacks: [{ key: "c" }] }] }))
      assert.strictEqual(nested.field, "provider a: fallbacks[0].fallbacks")
      const repeated = yield* Effect.flip(Provider.make({ key: "a", fallbacks: [{ key: "b" }, { key: "a" }] }))
      assert.strictEqual(repeated.field, "provider a: fallbacks[1].key")
      const bad = yield* Effect.flip(Provider.make({ key: "a", fallbacks: [{ key: "b", windows: [{ limit: 0, window: "1 minute" }] }] }))
      assert.strictEqual(bad.field, "provider a: fallbacks[0]: provider b: windows[0].limit")
      const deferral = yield* Effect.flip(
        ProviderFallbacks.guard(yield* Provider.make({ key: "a" }), { holder: "i", maxDeferral: "-1 seconds" })(() => Effect.succeed(1))
      ).pipe(Effect.provide(Layer.merge(memoryStores, MemoryLimiters.layer())))
      assert.strictEqual(deferral._tag, "BatonConfigError")
      assert.strictEqual((deferral as { field?: string }).field, "maxDeferral")
    }))
})
