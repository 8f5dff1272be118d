/**
 * In-memory `LeaseStore`. Atomic because each operation runs synchronously.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { LeaseLostError } from "../../src/stores/Errors.ts"
import { type FenceCheck, type FencedWrite, renewalDueBefore } from "../../src/stores/Fence.ts"
import * as LeaseStore from "../../src/stores/LeaseStore.ts"
import * as MemoryState from "./MemoryState.ts"

/**
 * The fenced-write check, shared with the in-memory checkpoint store: the
 * lease must still be (holder, epoch) and live at `now`; when a renewal is
 * due (its expiry is earlier than `now + ttl - renewMillis`) it is pushed to
 * `now + ttl`, else left as it is. Answers the expiry held after the check;
 * throws `LeaseLostError` otherwise. Synchronous, so the write that follows
 * in the same tick is atomic with it.
 *
 * @category utils
 * @since 0.1.0
 */
export const checkFence = (rows: MemoryState.MemoryRows, fence: FenceCheck): FencedWrite => {
  const { lease } = fence
  const row = rows.leases.get(MemoryState.key(lease.tenantId, lease.rootExecutionId))
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

/**
 * The in-memory `LeaseStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = MemoryState.MemoryState.useSync((rows) =>
  LeaseStore.make({
    acquire: (tenantId, rootExecutionId, holder, ttl, now) =>
      Effect.sync(() => {
        const k = MemoryState.key(tenantId, rootExecutionId)
        const row = rows.leases.get(k)
        if (row === undefined) {
          const fresh = { tenantId, rootExecutionId, holder, epoch: 1, expiresAt: now + ttl }
          rows.leases.set(k, fresh)
          return Option.some(MemoryState.toLease(fresh))
        }
        const live = row.holder !== null && row.expiresAt > now
        if (live && row.holder !== holder) return Option.none()
        if (!live) {
          row.epoch += 1
          row.holder = holder
        }
        row.expiresAt = now + ttl
        return Option.some(MemoryState.toLease(row))
      }),
    renew: (lease, ttl, now) =>
      Effect.sync(() => {
        const row = rows.leases.get(MemoryState.key(lease.tenantId, lease.rootExecutionId))
        if (row === undefined || row.holder !== lease.holder || row.epoch !== lease.epoch || row.expiresAt <= now) return false
        // Never backward for one (holder, epoch): a fence checked against the stored expiry relies on it.
        row.expiresAt = Math.max(row.expiresAt, now + ttl)
        return true
      }),
    takeOver: (current, holder, ttl, now) =>
      Effect.sync(() => {
        const row = rows.leases.get(MemoryState.key(current.tenantId, current.rootExecutionId))
        if (row === undefined || row.holder === null || row.holder !== current.holder || row.epoch !== current.epoch) return Option.none()
        row.epoch += 1
        row.holder = holder
        row.expiresAt = now + ttl
        return Option.some(MemoryState.toLease(row))
      }),
    release: (lease) =>
      Effect.sync(() => {
        const row = rows.leases.get(MemoryState.key(lease.tenantId, lease.rootExecutionId))
        if (row === undefined || row.holder !== lease.holder || row.epoch !== lease.epoch) return false
        row.holder = null
        row.expiresAt = 0
        return true
      }),
    get: (tenantId, rootExecutionId) =>
      Effect.sync(() => {
        const row = rows.leases.get(MemoryState.key(tenantId, rootExecutionId))
        return row === undefined || row.holder === null ? Option.none() : Option.some(MemoryState.toLease(row))
      }),
    getMany: (roots) =>
      Effect.sync(() =>
        roots.flatMap((r) => {
          const row = rows.leases.get(MemoryState.key(r.tenantId, r.rootExecutionId))
          return row === undefined || row.holder === null ? [] : [MemoryState.toLease(row)]
        })
      ),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState` (shared rows); `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(LeaseStore.LeaseStore, make)
