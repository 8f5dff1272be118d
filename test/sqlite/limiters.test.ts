/**
 * The limiter store suite against the SQLite `RateLimiterStore` and
 * `CircuitBreakerStore`: two connections on one file (busy timeout 0 — one
 * process), racing.
 */
import { SqliteLimiters } from "../../layers/sqlite/index.ts"
import { limiterStoresSuite } from "../../src/testing/index.ts"
import { tempDb } from "./tmp.ts"

const path = tempDb("limiters")
limiterStoresSuite({
  name: "sqlite, two connections on one file",
  layer: SqliteLimiters.layer({ path, busyTimeout: 0 }),
  second: SqliteLimiters.layer({ path, busyTimeout: 0 })
})
