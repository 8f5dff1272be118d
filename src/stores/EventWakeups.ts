/**
 * Wake-ups on appended events within one process: a reader following a
 * thread (`Baton.stream`) is woken at once when a holder of the same process
 * appended to it, instead of at its next poll. Backends that can tell other
 * processes (Postgres NOTIFY, see `PgEventWakeups`) feed the same hub; the
 * reader's poll on the Clock stays the fallback.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"

/**
 * What the hub offers: tell it an append, or wait for the next one.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventWakeupsShape {
  /** Wakes every reader of the thread waiting now. */
  readonly appended: (tenantId: string, threadId: string) => void
  /** Resolves at the next append to the thread (interruptible). */
  readonly next: (tenantId: string, threadId: string) => Effect.Effect<void>
}

/**
 * A new hub for one process.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeHub = (): EventWakeupsShape => {
  const waiters = new Map<string, Set<() => void>>()
  return {
    appended: (tenantId, threadId) => {
      const k = JSON.stringify([tenantId, threadId])
      const set = waiters.get(k)
      if (set === undefined) return
      waiters.delete(k)
      for (const wake of set) wake()
    },
    next: (tenantId, threadId) =>
      Effect.callback<void>((resume) => {
        const k = JSON.stringify([tenantId, threadId])
        const wake = () => resume(Effect.void)
        let set = waiters.get(k)
        if (set === undefined) waiters.set(k, set = new Set())
        set.add(wake)
        return Effect.sync(() => {
          const now = waiters.get(k)
          now?.delete(wake)
          if (now?.size === 0) waiters.delete(k)
        })
      })
  }
}

/**
 * The process-wide hub (the default), shared by every instance built in this process.
 *
 * @category utils
 * @since 0.1.0
 */
export const EventWakeups = Context.Reference<EventWakeupsShape>("baton/EventWakeups", { defaultValue: makeHub })
