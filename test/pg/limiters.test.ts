/**
 * The limiter store suite against the Postgres `RateLimiterStore` and
 * `CircuitBreakerStore`: two pools on one schema, racing.
 */
import { PgLimiters, PgStores } from "../../layers/pg/index.ts"
import { Conformance } from "../../src/testing/index.ts"
import { testSchema, url } from "./db.ts"

const schema = testSchema("limiters")
Conformance.limiterStoresSuite({
  name: "postgres, two pools on one schema",
  layer: PgLimiters.layer({ url, schema, maxConnections: 4 }),
  second: PgLimiters.layer({ url, schema, maxConnections: 4 })
})

// The bundle provides both stores on its pool, migrated once (under the advisory lock) with the other stores.
const bundleSchema = testSchema("limbundle")
Conformance.limiterStoresSuite({
  name: "postgres, through the PgStores bundle (two builds on one schema)",
  layer: PgStores.layer({ url, schema: bundleSchema, maxConnections: 4, wakeups: false }),
  second: PgStores.layer({ url, schema: bundleSchema, maxConnections: 4, wakeups: false })
})
