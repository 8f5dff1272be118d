/**
 * Wake-ups on lease releases within one process: a call waiting for a tree's
 * lease, or a sweep, is woken at once when an instance of the same process
 * releases it, instead of at its next poll. Backends that can tell other
 * processes (Postgres NOTIFY) feed the same hub.
 *
 * A release of a tree that ended (finished or failed under that lease) wakes
 * only the tree's own waiters: an ended tree leaves nothing for a sweep or a
 * claim loop (the "any release" waiters) to pick up, and waking them on
 * every finished execution made each one cost a sweep look.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"

/**
 * What the wake-ups hub offers: tell it a release, or wait for the next one.
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseWakeupsShape {
  /**
   * Tells every waiter of the tree, and every "any release" waiter — unless
   * `ended`: the tree ended under the released lease, so only its own waiters
   * are woken.
   */
  readonly released: (tenantId: string, rootExecutionId: string, options?: ReleaseOptions) => void
  /** Resolves at the next release of the tree (or of any tree when `rootExecutionId` is undefined). */
  readonly next: (tenantId: string | undefined, rootExecutionId: string | undefined) => Effect.Effect<void>
}

/**
 * What a release tells besides the tree.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReleaseOptions {
  /** The tree ended (its record left Running for good) under the released lease. */
  readonly ended?: boolean | undefined
}

const anyKey = "*"

/**
 * A new wake-ups hub for one process.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeHub = (): LeaseWakeupsShape => {
  const waiters = new Map<string, Set<() => void>>()
  const wake = (k: string) => {
    const set = waiters.get(k)
    if (set === undefined) return
    waiters.delete(k)
    for (const f of set) f()
  }
  return {
    released: (tenantId, root, options) => {
      wake(JSON.stringify([tenantId, root]))
      if (options?.ended !== true) wake(anyKey)
    },
    next: (tenantId, root) =>
      Effect.callback<void>((resume) => {
        const k = tenantId === undefined || root === undefined ? anyKey : JSON.stringify([tenantId, root])
        const f = () => resume(Effect.void)
        let set = waiters.get(k)
        if (set === undefined) waiters.set(k, set = new Set())
        set.add(f)
        return Effect.sync(() => {
          waiters.get(k)?.delete(f)
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
export const LeaseWakeups = Context.Reference<LeaseWakeupsShape>("baton/LeaseWakeups", { defaultValue: makeHub })
