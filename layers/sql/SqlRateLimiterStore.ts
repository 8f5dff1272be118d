/**
 * effect's `RateLimiterStore` (module `effect/persistence/RateLimiter`) over
 * any `SqlClient`, so `RateLimiter.layer` counts fleet-wide on the SQLite or
 * Postgres database baton already uses — written once, for both dialects.
 *
 * - Time is the caller's `Clock` (as effect's memory store), never the
 *   database's: tests move it with `TestClock`, and every instance must run
 *   on clocks that agree (the same assumption as baton's leases).
 * - `fixedWindow` is one upsert on a counter row: atomic per key on both
 *   dialects without an explicit transaction. On Postgres its commit does not
 *   wait for the WAL flush (`synchronous_commit = off` for that statement's
 *   transaction only): a hot key's row lock is then held for a round trip,
 *   not a disk flush. The cost: a crash of the Postgres server itself may
 *   forget the last fraction of a second of counts (never corrupt them) —
 *   as Redis's default `appendfsync everysec` does.
 * - `tokenBucket`, `adaptiveConsume` and `adaptiveFeedback` read-modify-write
 *   a JSON state under the key's row lock (`internal/lockedState.ts`), with
 *   the transitions of effect's memory store (`internal/rateLimiterSteps.ts`).
 * - Failures are effect's `RateLimiterError` with reason `RateLimitStoreError`.
 *
 * Tables come from migration 6 of `SqlMigrations`.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Layer } from "effect"
import { RateLimiterError, RateLimiterStore, RateLimitStoreError } from "effect/persistence/RateLimiter"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import * as LockedState from "./internal/lockedState.ts"
import * as Steps from "./internal/rateLimiterSteps.ts"
import { num, sqlErrorDetail } from "./internal/rows.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const failed = (operation: string) => (error: SqlError) =>
  new RateLimiterError({
    reason: new RateLimitStoreError({ message: `RateLimiterStore.${operation} failed: ${sqlErrorDetail(error)}`, cause: error })
  })

/**
 * The store over the `SqlClient` in context (tables must exist: see `layer`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RateLimiterStore["Service"], BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* SqlTables.make(options)
    const windows = sql(t.limiterWindows)
    const states = LockedState.make(sql, t.limiterStates)
    const real = (n: number) => sql`CAST(${n} AS DOUBLE PRECISION)`

    const fixedWindow: RateLimiterStore["Service"]["fixedWindow"] = (o) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const step = Duration.toMillis(o.refillRate) * o.tokens
        // effect's memory store treats a limit of 0 like no limit
        const cap = o.limit ? o.limit : Number.MAX_VALUE
        const fresh = o.tokens > cap
        const expired = sql`cur.expires_at <= ${real(now)}`
        const base = sql`CASE WHEN ${expired} THEN 0 ELSE cur.count END`
        const baseExpiry = sql`CASE WHEN ${expired} THEN ${real(now)} ELSE cur.expires_at END`
        const over = sql`${base} + ${real(o.tokens)} > ${real(cap)}`
        const values = [o.key, real(fresh ? 0 : o.tokens), real(o.tokens), real(fresh ? now : now + step)] as const
        const insert = sql.onDialectOrElse({
          // a counter's commit need not wait for the WAL flush (see the module doc)
          pg: () =>
            sql`INSERT INTO ${windows} AS cur (limiter_key, count, attempted, expires_at)
                SELECT ${values[0]}, ${values[1]}, ${values[2]}, ${values[3]}
                FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed`,
          orElse: () =>
            sql`INSERT INTO ${windows} AS cur (limiter_key, count, attempted, expires_at)
                VALUES (${values[0]}, ${values[1]}, ${values[2]}, ${values[3]})`
        })
        return sql`${insert}
            ON CONFLICT (limiter_key) DO UPDATE SET
              count = CASE WHEN ${over} THEN ${base} ELSE ${base} + ${real(o.tokens)} END,
              attempted = ${base} + ${real(o.tokens)},
              expires_at = CASE WHEN ${over} THEN ${baseExpiry} ELSE ${baseExpiry} + ${real(step)} END
            RETURNING attempted, expires_at`.pipe(
          Effect.map((rows) => [num(rows[0].attempted), num(rows[0].expires_at) - now] as const),
          Effect.mapError(failed("fixedWindow"))
        )
      })

    return RateLimiterStore.of({
      fixedWindow,
      tokenBucket: (o) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          states.update<Steps.Bucket, readonly [number, number]>("bucket", o.key, (b) => Steps.tokenBucket(b, o, now)).pipe(
            Effect.mapError(failed("tokenBucket"))
          )),
      adaptiveConsume: (o) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          states.update<Steps.Adaptive, Steps.AdaptiveConsumed>("adaptive", o.key, (s) => Steps.adaptiveConsume(s, o, now)).pipe(
            Effect.map(Steps.toConsumeResult),
            Effect.mapError(failed("adaptiveConsume"))
          )),
      adaptiveFeedback: (o) =>
        o.status !== 429 || o.retryAfter === undefined
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (now) =>
            states.update<Steps.Adaptive, void>("adaptive", o.key, (s) => Steps.adaptiveFeedback(s, o, now)).pipe(
              Effect.mapError(failed("adaptiveFeedback"))
            ))
    })
  })

/**
 * `RateLimiterStore` on the `SqlClient` in context; migrates the schema first
 * (SQLite, or any client whose tables `SqlMigrations` may create; on Postgres
 * use `PgLimiters.layer`, which migrates under the advisory lock).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<RateLimiterStore, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  Layer.effect(RateLimiterStore, Effect.andThen(SqlMigrations.migrate(options), make(options)))
