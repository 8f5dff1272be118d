/**
 * A provider with `adaptive` learns its real rate from its 429s, fleet-wide,
 * through effect's adaptive limiter over the stores bundle (memory, SQLite):
 * a 429 cools every instance down; then the calls that pass until the next
 * 429 are counted (learning); after it, calls from every instance are spaced
 * to that many per learned window — where the Retry-After cooldown alone
 * would let them all through at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, Layer, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { SqliteStores } from "../../../layers/sqlite/index.ts"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag, memoryStores } from "../fixtures.ts"

class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", { retryAfterSeconds: Schema.Number }) {}

const sqliteBundle = Layer.unwrap(
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-limits-adaptive-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => SqliteStores.layer({ path: Path.join(dir, "stores.sqlite"), busyTimeout: 0 })))
)

const backends = [
  { name: "memory", stores: memoryStores },
  { name: "sqlite", stores: sqliteBundle }
] as const

const retryAfter = (e: unknown): Duration.Duration | undefined => (e instanceof RateLimited ? Duration.seconds(e.retryAfterSeconds) : undefined)

for (const backend of backends) {
  describe(`adaptive provider limits on ${backend.name}, three instances`, () => {
    const run = (adaptive: boolean) =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [] } })
        const provider = yield* Provider.make({
          key: adaptive ? "llm-adaptive" : "llm-plain",
          retryAfter,
          ...(adaptive ? { adaptive: { limit: 100, window: "1 minute" } } : {})
        })
        const starts: Array<number> = []
        const call = <A, E>(i: number, answer: Effect.Effect<A, E>) =>
          h.run(i, () =>
            Effect.provide(
              Provider.guard(provider, { holder: h.instance(i).instanceId })(
                Effect.andThen(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => starts.push(now / 1000))), answer)
              ),
              h.instance(i).instance.services
            ) as Effect.Effect<A, unknown>
          )
        // t = 0: a 429, retry after 10 s
        assert.strictEqual(errorTag(yield* Fiber.await(yield* call(0, Effect.fail(new RateLimited({ retryAfterSeconds: 10 }))))), "RateLimited")
        // learning from t = 10: three calls pass, the fourth is a 429 (retry after 20 s)
        const learning = [yield* call(0, Effect.void), yield* call(1, Effect.void), yield* call(2, Effect.void)]
        yield* h.advance("10 seconds")
        for (const f of learning) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
        assert.strictEqual(errorTag(yield* Fiber.await(yield* call(1, Effect.fail(new RateLimited({ retryAfterSeconds: 20 }))))), "RateLimited")
        // six calls from three instances
        starts.length = 0
        const six = []
        for (let k = 0; k < 6; k++) six.push(yield* call(k % 3, Effect.void))
        yield* h.advance("60 seconds")
        for (const f of six) assert.strictEqual(errorTag(yield* Fiber.await(f)), "Success")
        return [...starts].sort((a, b) => a - b)
      })

    it.effect("learned: 3 calls passed between two 429s, so six calls go 3 at 30 s and 3 a learned window (20 s) later", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run(true), [30, 30, 30, 50, 50, 50])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)

    it.effect("without adaptive the same 429s only pause: all six go at 30 s", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* run(false), [30, 30, 30, 30, 30, 30])
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)
  })
}

describe("Provider.make with adaptive", () => {
  it.effect("adaptive without retryAfter, or with a bad limit, fails with BatonConfigError naming the field", () =>
    Effect.gen(function*() {
      const field = (p: Provider.Provider) => Effect.map(Effect.flip(Provider.make(p)), (e) => e.field)
      assert.strictEqual(yield* field({ key: "a", adaptive: { limit: 10, window: "1 minute" } }), "provider a: adaptive")
      assert.strictEqual(yield* field({ key: "a", retryAfter, adaptive: { limit: 0, window: "1 minute" } }), "provider a: adaptive.limit")
      assert.strictEqual(yield* field({ key: "a", retryAfter, adaptive: { limit: 1, window: "0 seconds" } }), "provider a: adaptive.window")
    }))
})
