/**
 * Wake-ups on lease releases within one process: a call waiting for a tree's
 * lease, or a sweep, is woken at once when an instance of the same process
 * releases it, instead of at its next poll. Backends that can tell other
 * processes (Postgres NOTIFY) feed the same hub.
 *
 * A release says whether the tree ended under that lease (finished or
 * failed). An "any release" waiter may leave such releases out
 * (`NextOptions.skipEnded`): an ended tree leaves nothing for a sweep or a
 * claim loop to pick up — only a step slot it freed, which matters to them
 * only while they are short of slots — and waking them on every finished
 * execution made each one cost a sweep look.
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
  /** Tells every waiter of the tree, and every "any release" waiter (but those that skip an ended tree's release). */
  readonly released: (tenantId: string, rootExecutionId: string, options?: ReleaseOptions) => void
  /** Resolves at the next release of the tree (or of any tree when `rootExecutionId` is undefined). */
  readonly next: (tenantId: string | undefined, rootExecutionId: string | undefined, options?: NextOptions) => Effect.Effect<void>
}

/**
 * How an "any release" waiter waits.
 *
 * @category models
 * @since 0.1.0
 */
export interface NextOptions {
  /** Asked at each release of a tree that ended: true leaves the waiter waiting. Default: woken by every release. */
  readonly skipEnded?: (() => boolean) | undefined
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
  interface Waiter {
    readonly wake: () => void
    readonly skipEnded: (() => boolean) | undefined
  }
  const waiters = new Map<string, Set<Waiter>>()
  const wake = (k: string, ended: boolean) => {
    const set = waiters.get(k)
    if (set === undefined) return
    // The waiters of now (one woken may wait again at once: that wait is for the next release).
    for (const w of [...set]) {
      if (ended && w.skipEnded?.() === true) continue
      set.delete(w)
      w.wake()
    }
    if (set.size === 0 && waiters.get(k) === set) waiters.delete(k)
  }
  return {
    released: (tenantId, root, options) => {
      const ended = options?.ended === true
      wake(JSON.stringify([tenantId, root]), ended)
      wake(anyKey, ended)
    },
    next: (tenantId, root, options) =>
      Effect.callback<void>((resume) => {
        const k = tenantId === undefined || root === undefined ? anyKey : JSON.stringify([tenantId, root])
        const f: Waiter = { wake: () => resume(Effect.void), skipEnded: options?.skipEnded }
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
