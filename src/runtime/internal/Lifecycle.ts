/**
 * Where one instance is in its life: started, sweeping, stopping, closed.
 * Owned by the calls that move it (`close`, the Layer's scope) and the
 * recovery sweep (its last look); read by liveness and every call that must
 * refuse work once a close began.
 *
 * @since 0.1.0
 */
import { Deferred, Effect } from "effect"

/**
 * The instance's life.
 *
 * @category models
 * @since 0.1.0
 */
export interface LifecycleShape {
  /** When the instance started (liveness counts a first sweep that never ends from here). */
  readonly startedAt: number
  /** When the recovery sweep last finished a look. */
  readonly lastSweepEndedAt: () => number | undefined
  readonly sweepEnded: (at: number) => void
  /** Whether a graceful close began (or the Layer's scope closed). */
  readonly stopping: () => boolean
  /** Whether the scope the runtime was built in closed: the instance is gone for good. */
  readonly closed: () => boolean
  /** A graceful close begins: new calls are refused from now on. */
  readonly stop: () => void
  /** The Layer's scope closed. */
  readonly close: () => void
  /** Completed when a graceful close reaches its deadline: nothing waits for step bodies after it. */
  readonly closeDeadline: Deferred.Deferred<void>
}

/**
 * An instance that started at `startedAt`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (startedAt: number): Effect.Effect<LifecycleShape> =>
  Effect.map(Deferred.make<void>(), (closeDeadline) => {
    let lastSweepEndedAt: number | undefined
    let stopping = false
    let closed = false
    return {
      startedAt,
      lastSweepEndedAt: () => lastSweepEndedAt,
      sweepEnded: (at) => {
        lastSweepEndedAt = at
      },
      stopping: () => stopping,
      closed: () => closed,
      stop: () => {
        stopping = true
      },
      close: () => {
        stopping = true
        closed = true
      },
      closeDeadline
    }
  })
