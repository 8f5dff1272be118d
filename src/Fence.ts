/**
 * What a lease holder hands to a checkpoint saver so that its writes are
 * fenced: written only while its lease is still the current one.
 *
 * It travels in LangGraph's `config.configurable` under {@link fenceKey};
 * LangGraph passes that object to every saver call of the pass, subgraphs
 * included.
 *
 * @since 0.1.0
 */
import type { LeaseLostError } from "./Errors.ts"
import type { Lease } from "./Lease.ts"

/** The `configurable` key of the pass's fence. */
export const fenceKey = "__baton_fence"
/** The `configurable` key of the pass's tenant (checkpoints are tagged with it; "default" when absent). */
export const tenantKey = "baton_tenant_id"

export interface Fence {
  /** The lease the writes are made under. */
  readonly lease: Lease
  /** How far a fenced write pushes the lease (it counts as a renewal). */
  readonly ttlMillis: number
  /** The holder's Clock, epoch milliseconds. */
  readonly now: () => number
  /**
   * Local fencing: an error when the pass must not write any more (its lease
   * was lost, or its confirmed time ran out), else undefined. Checked before
   * every write; a saver that gets an error writes nothing and throws it.
   */
  readonly refusal: () => LeaseLostError | undefined
  /** The store confirmed the lease in a fenced write read at `readAt`; it now runs to `expiresAt`. */
  readonly confirmed: (readAt: number, expiresAt: number) => void
  /** The store refused a fenced write: the lease is gone. The holder aborts its pass. */
  readonly lost: (error: LeaseLostError) => void
  /**
   * For savers that cannot fence in the store: renew the lease now (resolves
   * when confirmed, rejects with `LeaseLostError`). The write follows the
   * renewal — the documented window of one round trip.
   */
  readonly renewBeforeWrite: () => Promise<void>
}

/** What a fenced store checks and moves in the write's own transaction. */
export interface FenceCheck {
  readonly lease: Lease
  readonly ttlMillis: number
  readonly now: number
}
