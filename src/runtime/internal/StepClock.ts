/**
 * The Clock a step body or an undo runs with: the instance's Clock, with its
 * sleeps wrapped (to count parked bodies, to stop at a close deadline).
 * Every method delegates to the instance's Clock: spreading it would drop
 * the live Clock's prototype methods, and anything that reads the time (a
 * span, an SQL query, `Clock.currentTimeNanos`) would fail.
 *
 * @since 0.1.0
 */
import type { Clock, Duration, Effect } from "effect"

/**
 * `clock` with `sleep` in place of its own.
 *
 * @category constructors
 * @since 0.1.0
 */
export const withSleep = (clock: Clock.Clock, sleep: (duration: Duration.Duration) => Effect.Effect<void>): Clock.Clock => ({
  currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe(),
  currentTimeMillis: clock.currentTimeMillis,
  currentTimeNanosUnsafe: () => clock.currentTimeNanosUnsafe(),
  currentTimeNanos: clock.currentTimeNanos,
  monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: clock.monotonicTimeNanos,
  sleep
})
