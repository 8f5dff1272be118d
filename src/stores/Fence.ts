/**
 * What a lease holder hands to a checkpoint saver so that its writes are
 * fenced: written only while its lease is still the current one.
 *
 * It travels in LangGraph's `config.configurable` under {@link fenceKey};
 * LangGraph passes that object to every saver call of the pass, subgraphs
 * included.
 *
 * A fenced write always *checks* the lease in its own transaction (still
 * (holder, epoch), live at `now`) and *renews* it — pushes `expiresAt` to
 * `now + ttlMillis` — only when a renewal is due: when the stored expiry is
 * earlier than `now + ttlMillis - renewMillis`. So a holder that writes often
 * rewrites its lease row at most about once per renewal period, and each
 * write tells the holder the expiry the store holds after it.
 *
 * @since 0.1.0
 */
import type { LeaseLostError } from "./Errors.ts"
import type { Lease } from "./Lease.ts"

/**
 * The `configurable` key of the pass's fence.
 *
 * @category utils
 * @since 0.1.0
 */
export const fenceKey = "__baton_fence"
/**
 * The `configurable` key of the pass's tenant (checkpoints are tagged with it; "default" when absent).
 *
 * @category utils
 * @since 0.1.0
 */
export const tenantConfigKey = "baton_tenant_id"

/**
 * The lease a pass writes under and how its fenced writes renew it and report back.
 *
 * @category models
 * @since 0.1.0
 */
export interface Fence {
  /** The lease the writes are made under. */
  readonly lease: Lease
  /** How far a fenced write that renews pushes the lease: to `now + ttlMillis`. */
  readonly ttlMillis: number
  /**
   * The holder's renewal period (≥ 0, below `ttlMillis`): a fenced write renews
   * only when the stored expiry is earlier than `now + ttlMillis - renewMillis`,
   * i.e. when no renewal landed in the last `renewMillis`. 0 renews on every write.
   */
  readonly renewMillis: number
  /** The holder's Clock, epoch milliseconds. */
  readonly now: () => number
  /**
   * Local fencing: an error when the pass must not write any more (its lease
   * was lost, or its confirmed time ran out), else undefined. Checked before
   * every write; a saver that gets an error writes nothing and throws it.
   */
  readonly refusal: () => LeaseLostError | undefined
  /**
   * A fenced write landed: the store found the lease current and live at
   * `readAt` (the `now` of the write) and holds it until `expiresAt` after the
   * write. With `renewed` the write pushed it (`expiresAt` = `readAt +
   * ttlMillis`) and counts as a confirmed renewal read at `readAt`; without,
   * `expiresAt` is what an earlier acquire/renew of this holder set, confirmed
   * again by the store.
   */
  readonly confirmed: (readAt: number, expiresAt: number, renewed: boolean) => void
  /**
   * A write of the pass went to the store and is under way until `write`
   * settles. The holder keeps its lease until its writes under way settled
   * (bounded by its confirmed time): released before, its own release would
   * refuse them, and the step they record — finished under the lease, its
   * side effects made — would run again on the next holder. Optional: a
   * fence without it does not wait.
   */
  readonly writing?: ((write: Promise<unknown>) => void) | undefined
  /** The store refused a fenced write: the lease is gone. The holder aborts its pass. */
  readonly lost: (error: LeaseLostError) => void
  /**
   * For savers that cannot fence in the store: renew the lease now (resolves
   * when confirmed; rejects with `LeaseLostError` when refused, with `StoreError`
   * when the store failed — the pass then stops, the execution stays Running). The write follows the
   * renewal — the documented window of one round trip.
   */
  readonly renewBeforeWrite: () => Promise<void>
}

/**
 * What a fenced store checks, and may move, in the write's own transaction:
 * the lease row must still be (`lease.holder`, `lease.epoch`) with
 * `expiresAt > now`; when its `expiresAt < now + ttlMillis - renewMillis` it
 * is pushed to `now + ttlMillis`.
 *
 * @category models
 * @since 0.1.0
 */
export interface FenceCheck {
  readonly lease: Lease
  readonly ttlMillis: number
  readonly renewMillis: number
  readonly now: number
}

/**
 * What a fenced write that landed found: the lease's expiry as stored after it, and whether the write pushed it.
 *
 * @category models
 * @since 0.1.0
 */
export interface FencedWrite {
  readonly expiresAt: number
  readonly renewed: boolean
}

/**
 * The stored expiry below which a fenced write renews: `now + ttlMillis - renewMillis`.
 *
 * @category utils
 * @since 0.1.0
 */
export const renewalDueBefore = (check: FenceCheck): number => check.now + check.ttlMillis - check.renewMillis
