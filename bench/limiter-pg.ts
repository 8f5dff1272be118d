/**
 * What a database-backed rate limiter costs: effect's `RateLimiter` over our
 * Postgres `RateLimiterStore` against the same `RateLimiter` over effect's own
 * Redis store (`RateLimiter.layerStoreRedis`, node-redis through
 * `@effect/platform-node`'s `NodeRedis`) on the local Redis.
 *
 * 8 consumers (each with its own connection: 8 Postgres pools of one
 * connection, 8 Redis clients) consume one token at a time from ONE key —
 * a fixed window whose limit is never reached, so every call is one
 * store round trip that counts. Rounds alternate ours / Redis.
 *
 *   npm run bench:limiter:pg   (BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                               BENCH_REDIS_URL, default redis://127.0.0.1:6379;
 *                               BENCH_CONSUMERS=8 BENCH_ROUNDS=5 BENCH_SECONDS=3)
 *
 * Prints each side's consumes per second, then `ratio: ours/redis` last.
 */
import { NodeRedis } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import * as RateLimiter from "effect/persistence/RateLimiter"
import * as SqlRateLimiterStore from "../layers/sql/SqlRateLimiterStore.ts"
import { freshSchema, runInSchema, storesPerConnection } from "./pgSchema.ts"

const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379"
const consumers = Number(process.env.BENCH_CONSUMERS ?? 8)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const seconds = Number(process.env.BENCH_SECONDS ?? 3)
const schema = freshSchema("bench_limiter")
const run = Math.random().toString(36).slice(2, 8)

/** `consumers` limiters, each over its own connection. */
type Side = ReadonlyArray<RateLimiter.RateLimiter>

const ours = Effect.gen(function*() {
  const stores = yield* storesPerConnection(consumers, schema, SqlRateLimiterStore.make())
  return (yield* Effect.forEach(stores, (store) => Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, store))) as Side
})

const redis = Effect.gen(function*() {
  const limiters: Array<RateLimiter.RateLimiter> = []
  for (let i = 0; i < consumers; i++) {
    const ctx = yield* Layer.build(RateLimiter.layerStoreRedis({ prefix: `bench:${run}:` }).pipe(Layer.provide(NodeRedis.layer({ url: redisUrl }))))
    limiters.push(yield* Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, Context.get(ctx, RateLimiter.RateLimiterStore)))
  }
  return limiters as Side
})

/** Every consumer consumes from one key for `seconds`; answers consumes per second. */
const round = (side: Side, key: string, forSeconds = seconds) =>
  Effect.gen(function*() {
    let count = 0
    const until = Date.now() + forSeconds * 1000
    const started = performance.now()
    yield* Effect.all(side.map((limiter) =>
      Effect.gen(function*() {
        while (Date.now() < until) {
          yield* limiter.consume({ key, limit: 1_000_000_000, window: "1 hour" })
          count++
        }
      })), { concurrency: "unbounded" })
    return count / ((performance.now() - started) / 1000)
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const main = Effect.gen(function*() {
  const sides = { ours: yield* ours, redis: yield* redis }
  console.log(`limiter bench: ${consumers} consumers on one key (fixed window), ${rounds} alternating rounds of ${seconds} s`)
  const rates = { ours: [] as Array<number>, redis: [] as Array<number> }
  // warm-up (not counted): connections, prepared statements, the JIT
  yield* round(sides.ours, "warm-up", 1)
  yield* round(sides.redis, "warm-up", 1)
  for (let r = 0; r < rounds; r++) {
    for (const name of ["ours", "redis"] as const) {
      const rate = yield* round(sides[name], `round-${r}`)
      rates[name].push(rate)
      console.log(`round ${r + 1} ${name === "ours" ? "ours (Postgres)" : "effect Redis   "}: ${rate.toFixed(0)} consumes/s`)
    }
  }
  const o = median(rates.ours)
  const d = median(rates.redis)
  console.log(`ours (Postgres RateLimiterStore): ${o.toFixed(0)} ops/s (median)`)
  console.log(`effect Redis RateLimiterStore: ${d.toFixed(0)} ops/s (median)`)
  console.log(`ratio: ${(o / d).toFixed(2)}`)
})

await runInSchema(schema, main)
