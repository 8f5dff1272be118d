/**
 * effect's `CircuitBreakerStore` (module `effect/persistence/CircuitBreaker`)
 * over any `SqlClient`, so `CircuitBreaker.layer` opens and closes a circuit
 * for every instance of the fleet on the SQLite or Postgres database baton
 * already uses — written once, for both dialects.
 *
 * - One JSON entry per key, changed under the key's row lock
 *   (`internal/lockedState.ts`) with the transitions of effect's memory store
 *   (`internal/breakerSteps.ts`); time is the caller's `Clock`.
 * - As in effect's Redis store, the HalfOpen probe holds a lease of
 *   `probeLease` (default 10 s), renewed every third of it by a fiber in the
 *   admission's scope while the call runs; if its process dies the lease
 *   lapses and another caller takes over as the probe.
 * - `idleTimeToLive` (default 1 hour): an idle entry counts as a new Closed
 *   one (backoff count 0), as in effect's stores.
 * - Failures are effect's `CircuitBreakerError` with reason
 *   `CircuitBreakerStoreError`.
 *
 * Tables come from migration 6 of `SqlMigrations`.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Layer } from "effect"
import {
  type Admission,
  CircuitBreakerError,
  CircuitBreakerStore,
  CircuitBreakerStoreError,
  CircuitHalfOpen,
  CircuitOpen,
  type State,
  type Transition
} from "effect/persistence/CircuitBreaker"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { BatonConfigError, type StoreError } from "../../src/stores/Errors.ts"
import * as Options from "../../src/stores/internal/options.ts"
import * as Steps from "./internal/breakerSteps.ts"
import * as LockedState from "./internal/lockedState.ts"
import { sqlErrorDetail } from "./internal/rows.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

/**
 * Options of the SQL circuit breaker store.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqlCircuitBreakerStoreOptions extends SqlTables.SqlStoreOptions {
  /** How long a HalfOpen probe holds the circuit without renewing: a lease, 1 second to 24 hours (default 10 seconds). */
  readonly probeLease?: Duration.Input | undefined
  /** An entry idle this long starts again as Closed: 1 second to 366 days (default 1 hour). */
  readonly idleTimeToLive?: Duration.Input | undefined
}

const kind = "breaker"

const failed = (operation: string) => (error: SqlError) =>
  new CircuitBreakerError({
    reason: new CircuitBreakerStoreError({ message: `CircuitBreakerStore.${operation} failed: ${sqlErrorDetail(error)}`, cause: error })
  })


const toState = (key: string, e: Steps.Entry | undefined, now: number): State => {
  if (e === undefined || e.state === "Closed") return { _tag: "Closed", key }
  if (e.state === "Open") {
    return { _tag: "Open", key, retryAfter: Duration.millis(Math.max(0, e.openUntil - now)), consecutiveOpenings: e.consecutiveOpenings }
  }
  return { _tag: "HalfOpen", key, probing: Steps.probing(e, now), consecutiveOpenings: e.consecutiveOpenings }
}

/**
 * The store over the `SqlClient` in context (tables must exist: see `layer`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlCircuitBreakerStoreOptions = {}): Effect.Effect<CircuitBreakerStore["Service"], BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const states = LockedState.make(sql, (yield* SqlTables.make(options)).limiterStates)
    // the probe's lease, checked as every lease (1 s to 24 h), with its own default
    const leaseMillis = yield* Options.setting("probeLease", options.probeLease, Options.leaseLength, 10_000)
    const idleMillis = yield* Options.setting("idleTimeToLive", options.idleTimeToLive, Options.idleTimeToLive, 60 * 60 * 1000)
    const timing = Effect.map(Clock.currentTimeMillis, (now): Steps.Timing => ({ now, leaseMillis, idleMillis }))

    // stops once the lease is gone: a renewal never wins it back
    const renewWhileRunning = (key: string, generation: number): Effect.Effect<void> =>
      Effect.sleep(Duration.millis(leaseMillis / 3)).pipe(
        Effect.andThen(timing),
        Effect.flatMap((t) => states.update<Steps.Entry, boolean>(kind, key, (e) => Steps.renew(e, generation, t))),
        Effect.catch(() => Effect.succeed(true)),
        Effect.flatMap((held) => held ? renewWhileRunning(key, generation) : Effect.void)
      )

    return CircuitBreakerStore.of({
      admit: (key) =>
        Effect.gen(function*() {
          const t = yield* timing
          const admitted = yield* states.update<Steps.Entry, Steps.Admitted>(kind, key, (e) => Steps.admit(e, t)).pipe(
            Effect.mapError(failed("admit"))
          )
          if (admitted._tag === "Open") {
            return yield* new CircuitBreakerError({ reason: new CircuitOpen({ key, retryAfter: Duration.millis(Math.max(0, admitted.remainingMillis)) }) })
          }
          if (admitted._tag === "HalfOpen") return yield* new CircuitBreakerError({ reason: new CircuitHalfOpen({ key }) })
          if (admitted.probe) yield* Effect.forkScoped(Effect.interruptible(renewWhileRunning(key, admitted.generation)))
          return {
            generation: admitted.generation,
            probe: admitted.probe,
            consecutiveOpenings: admitted.consecutiveOpenings,
            transition: admitted.moved ? { key, from: "Open", to: "HalfOpen" } : undefined
          } satisfies Admission
        }),
      record: ({ generation, key, openFor, outcome, tripPolicy }) =>
        Effect.flatMap(timing, (t) => {
          const openForMillis = Math.max(0, Duration.toMillis(openFor))
          return states.update<Steps.Entry, Steps.Recorded>(kind, key, (e) => Steps.record(e, { generation, outcome, tripPolicy, openForMillis }, t)).pipe(
            Effect.mapError(failed("record")),
            Effect.map((r): Transition | undefined =>
              r._tag === "Opened"
                ? { key, from: r.from, to: "Open", retryAfter: openFor, consecutiveOpenings: r.consecutiveOpenings }
                : r._tag === "Closed"
                ? { key, from: "HalfOpen", to: "Closed" }
                : undefined
            )
          )
        }),
      state: (key) =>
        Effect.flatMap(timing, (t) =>
          states.read<Steps.Entry>(kind, key).pipe(
            Effect.mapError(failed("state")),
            Effect.map((e) => toState(key, Steps.live(e, t), t.now))
          ))
    })
  })

/**
 * `CircuitBreakerStore` on the `SqlClient` in context; migrates the schema
 * first (SQLite, or any client whose tables `SqlMigrations` may create; on
 * Postgres use `PgLimiters.layer`, which migrates under the advisory lock).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlCircuitBreakerStoreOptions = {}): Layer.Layer<CircuitBreakerStore, StoreError | BatonConfigError, SqlClient.SqlClient> =>
  Layer.effect(CircuitBreakerStore, Effect.andThen(SqlMigrations.migrate(options), make(options)))
