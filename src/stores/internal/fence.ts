/**
 * Why a fenced write was refused, told the same way by every backend: from
 * the lease row as the write's transaction found it.
 */
import { LeaseLostError } from "../Errors.ts"
import type { Lease } from "../Lease.ts"

/** A lease row as stored: `holder` null once released. */
export interface LeaseRowView {
  readonly holder: string | null
  readonly epoch: number
  readonly expiresAt: number
}

/** Whether `row` is still `lease` and live at `now`: what a fenced write checks. */
export const holds = (row: LeaseRowView | undefined, lease: Lease, now: number): boolean =>
  row !== undefined && row.holder === lease.holder && row.epoch === lease.epoch && row.expiresAt > now

/** The refusal of a fenced `what` by `lease` at `now`, given the lease row found (the row does not hold, see {@link holds}). */
export const refused = (what: string, row: LeaseRowView | undefined, lease: Lease, now: number): LeaseLostError => {
  const reason = row === undefined
    ? "no lease exists for this tree"
    : row.holder === null
    ? `the lease was released (epoch ${row.epoch})`
    : row.holder !== lease.holder || row.epoch !== lease.epoch
    ? `the lease passed to ${row.holder} (epoch ${row.epoch})`
    : `the lease expired at ${row.expiresAt}, before this write at ${now}`
  return new LeaseLostError({
    tenantId: lease.tenantId,
    rootExecutionId: lease.rootExecutionId,
    holder: lease.holder,
    epoch: lease.epoch,
    reason: `a fenced ${what} was refused: ${reason}`
  })
}
