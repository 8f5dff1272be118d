/**
 * In-memory `LeaseStore`. Atomic because each operation runs synchronously.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as LeaseStore from "../../src/stores/LeaseStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

/**
 * The in-memory `LeaseStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  LeaseStore.make({
    acquire: (tenantId, rootExecutionId, holder, ttl, now) =>
      Effect.sync(() => {
        const k = Rows.key(tenantId, rootExecutionId)
        const row = rows.leases.get(k)
        if (row === undefined) {
          const fresh = { tenantId, rootExecutionId, holder, epoch: 1, expiresAt: now + ttl }
          rows.leases.set(k, fresh)
          return Option.some(Rows.toLease(fresh))
        }
        const live = row.holder !== null && row.expiresAt > now
        if (live && row.holder !== holder) return Option.none()
        if (!live) {
          row.epoch += 1
          row.holder = holder
        }
        row.expiresAt = now + ttl
        return Option.some(Rows.toLease(row))
      }),
    renew: (lease, ttl, now) =>
      Effect.sync(() => {
        const row = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (row === undefined || row.holder !== lease.holder || row.epoch !== lease.epoch || row.expiresAt <= now) return false
        // Never backward for one (holder, epoch): a fence checked against the stored expiry relies on it.
        row.expiresAt = Math.max(row.expiresAt, now + ttl)
        return true
      }),
    takeOver: (current, holder, ttl, now) =>
      Effect.sync(() => {
        const row = rows.leases.get(Rows.key(current.tenantId, current.rootExecutionId))
        if (row === undefined || row.holder === null || row.holder !== current.holder || row.epoch !== current.epoch) return Option.none()
        row.epoch += 1
        row.holder = holder
        row.expiresAt = now + ttl
        return Option.some(Rows.toLease(row))
      }),
    release: (lease) =>
      Effect.sync(() => {
        const row = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (row === undefined || row.holder !== lease.holder || row.epoch !== lease.epoch) return false
        row.holder = null
        row.expiresAt = 0
        return true
      }),
    get: (tenantId, rootExecutionId) =>
      Effect.sync(() => {
        const row = rows.leases.get(Rows.key(tenantId, rootExecutionId))
        return row === undefined || row.holder === null ? Option.none() : Option.some(Rows.toLease(row))
      }),
    getMany: (roots) =>
      Effect.sync(() =>
        roots.flatMap((r) => {
          const row = rows.leases.get(Rows.key(r.tenantId, r.rootExecutionId))
          return row === undefined || row.holder === null ? [] : [Rows.toLease(row)]
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
