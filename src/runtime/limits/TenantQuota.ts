/**
 * A fleet-wide cap on the execution trees a tenant runs at once. A permit is
 * a lease in `RateLimitStore` (the slots of key `tenant-quota/<tenant>`), held
 * by the instance running the tree, renewed while it runs, released when the
 * tree comes to rest, and reclaimed when its holder dies and stops renewing.
 *
 * Invariant: permits held never exceed the cap (each is a slot handed out by
 * one atomic store operation), and never leak (a permit nobody renews is
 * free again after its lease). Like every lease, it is not fenced against a
 * paused process: one frozen past its lease still runs its tree while
 * another instance may take the permit.
 *
 * `withPermit(tenantId, options)(run)`: over quota, `onFull: "wait"` (the
 * default) waits — in arrival order among this process's waiters, with no
 * deadline unless `timeout` is given — and `"fail"` fails at once with
 * `TenantQuotaExceededError`. Nothing is ever dropped silently.
 *
 * The runtime takes these permits itself when configured with `tenantQuota`
 * (see `BatonConfig`): each pass holds one of its tenant's permits while it
 * moves the tree. `withPermit` is for work of a tenant outside baton's runs.
 *
 * @since 0.1.0
 */
import { type Duration, Effect } from "effect"
import { type InvalidInputError, type StoreError } from "../../stores/Errors.ts"
import { TenantQuotaExceededError } from "../Errors.ts"
import type { InstanceId, TenantId } from "../../stores/Ids.ts"
import type { RateLimitStore } from "../../stores/RateLimitStore.ts"
import * as LeasedSlots from "../internal/lease/leasedSlots.ts"

export {
  /**
   * Over quota, and the call chose not to wait (or waited its `timeout`).
   *
   * @category errors
   * @since 0.1.0
   */
  TenantQuotaExceededError
} from "../Errors.ts"

/**
 * A tenant's quota as one call applies it.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuotaOptions {
  /** Trees of the tenant running at once, fleet-wide (a whole number ≥ 1). */
  readonly cap: number
  /** The instance that will run the tree (the permit's holder). */
  readonly holder: InstanceId
  /** A permit nobody renews is free again after this: 1 second to 24 hours, default 30 s (the runtime's one lease option). */
  readonly lease?: Duration.Input | undefined
  /** Over quota: `"wait"` (default) or `"fail"` at once. */
  readonly onFull?: "wait" | "fail" | undefined
  /** With `"wait"`: give up after this, 0 to Infinity (default: never). */
  readonly timeout?: Duration.Input | undefined
  /** How often a waiter looks again for permits freed elsewhere: at least 10 ms (default 1 s). */
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The store key of a tenant's permits.
 *
 * @category models
 * @since 0.1.0
 */
export const permitKey = (tenantId: TenantId): string => `tenant-quota/${tenantId}`

/**
 * Runs `run` (a tree's pass) holding one of the tenant's permits.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withPermit = (tenantId: TenantId, options: QuotaOptions) =>
<A, E, R>(run: Effect.Effect<A, E, R>): Effect.Effect<A, E | TenantQuotaExceededError | StoreError | InvalidInputError, R | RateLimitStore> =>
  Effect.flatMap(
    LeasedSlots.holdOptions(
      "TenantQuota.withPermit",
      options.onFull === "fail" ? { ...options, timeout: 0 } : options,
      { field: "cap", value: options.cap },
      Number.POSITIVE_INFINITY
    ),
    (o) => LeasedSlots.hold(permitKey(tenantId), o, run, (waitedMillis) => Effect.fail(new TenantQuotaExceededError({ tenantId, cap: options.cap, waitedMillis })))
  )
