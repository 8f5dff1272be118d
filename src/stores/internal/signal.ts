/**
 * A wake-up signal inside one process: `next` resolves at the next
 * `notify`, for every fiber waiting then (the runtime's pass ends and claim
 * loop, the memory backend's liveness table).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"

/**
 * A wake-up signal.
 *
 * @category models
 * @since 0.1.0
 */
export interface Signal {
  /** Resolves at the next `notify` (interruptible). */
  readonly next: Effect.Effect<void>
  /** Wakes every fiber waiting in `next` now. */
  readonly notify: () => void
}

/**
 * A new signal with nobody waiting.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (): Signal => {
  const waiters = new Set<() => void>()
  return {
    next: Effect.callback<void>((resume) => {
      const f = () => resume(Effect.void)
      waiters.add(f)
      return Effect.sync(() => waiters.delete(f))
    }),
    notify: () => {
      // Cleared before waking: a woken waiter may wait again at once (inline), and must not be cleared with the rest.
      const woken = [...waiters]
      waiters.clear()
      for (const f of woken) f()
    }
  }
}
