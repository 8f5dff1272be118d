/**
 * The tables of the `RateLimiterStore` and `CircuitBreakerStore` on SQL
 * (migration 6), named under the same prefix as every other baton table.
 */
import type { SqlTables } from "../SqlTables.ts"

export interface LimiterTables {
  /** Fixed-window counters: (limiter_key, count, expires_at). */
  readonly windows: string
  /** Token buckets, adaptive states and breakers: (kind, limiter_key, state JSON). */
  readonly states: string
}

export const of = (t: SqlTables): LimiterTables => ({
  windows: `${t.prefix}limiter_windows`,
  states: `${t.prefix}limiter_states`
})
