/**
 * The fenced-write check of the memory stores: the lease store's and the
 * checkpoint store's fenced writes both go through it.
 */
import { LeaseLostError } from "../../../src/stores/Errors.ts"
import { type FenceCheck, type FencedWrite, renewalDueBefore } from "../../../src/stores/Fence.ts"
import * as Rows from "./rows.ts"

/**
 * The fenced-write check, shared with the in-memory checkpoint store: the
 * lease must still be (holder, epoch) and live at `now`; when a renewal is
 * due (its expiry is earlier than `now + ttl - renewMillis`) it is pushed to
 * `now + ttl`, else left as it is. Answers the expiry held after the check;
 * throws `LeaseLostError` otherwise. Synchronous, so the write that follows
 * in the same tick is atomic with it.
 */
export const checkFence = (rows: Rows.MemoryRows, fence: FenceCheck): FencedWrite => {
  const { lease } = fence
  const row = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
  const reason = row === undefined || row.holder === null
    ? "the lease was released"
    : row.holder !== lease.holder || row.epoch !== lease.epoch
    ? `instance ${row.holder} holds it now with epoch ${row.epoch}`
    : row.expiresAt <= fence.now
    ? "the lease expired"
    : undefined
  if (reason !== undefined) {
    throw new LeaseLostError({ ...lease, reason: `fenced write refused: ${reason}` })
  }
  if (row!.expiresAt >= renewalDueBefore(fence)) return { expiresAt: row!.expiresAt, renewed: false }
  row!.expiresAt = fence.now + fence.ttlMillis
  return { expiresAt: row!.expiresAt, renewed: true }
}
