/**
 * The limiter store suite against the Postgres `RateLimiterStore` and
 * `CircuitBreakerStore`: two pools on one schema, racing.
 */
import { PgLimiters } from "../../layers/pg/index.ts"
import { limiterStoresSuite } from "../../src/testing/index.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("limiters")
limiterStoresSuite({
  name: "postgres, two pools on one schema",
  layer: PgLimiters.layer({ url, schema, maxConnections: 4 }),
  second: PgLimiters.layer({ url, schema, maxConnections: 4 })
})
