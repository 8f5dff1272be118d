/**
 * Wake-ups on lease releases within one process: a call waiting for a tree's
 * lease, or a sweep, is woken at once when an instance of the same process
 * releases it, instead of at its next poll. Backends that can tell other
 * processes (Postgres NOTIFY) feed the same hub.
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
  /** Tells every waiter of the tree (and every "any release" waiter). */
  readonly released: (tenantId: string, rootExecutionId: string) => void
  /** Resolves at the next release of the tree (or of any tree when `rootExecutionId` is undefined). */
  readonly next: (tenantId: string | undefined, rootExecutionId: string | undefined) => Effect.Effect<void>
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
    released: (tenantId, root) => {
      wake(JSON.stringify([tenantId, root]))
      wake(anyKey)
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
