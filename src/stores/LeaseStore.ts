/**
 * One lease per execution tree, keyed by (tenantId, rootExecutionId).
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { ExecutionId, InstanceId, TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"
import type { Lease } from "./Lease.ts"

export type { Lease } from "./Lease.ts"

/**
 * Semantics every implementation keeps (the conformance suite checks them):
 * - every operation is atomic across instances: of N concurrent `acquire`s of
 *   a free lease exactly one returns `Some`;
 * - a lease is free when it was never taken, was released, or `expiresAt <= now`;
 * - `acquire` of a free lease makes the caller the holder with `epoch` one more
 *   than the tree's previous epoch (epochs never go back, even after release);
 *   `acquire` by the current holder of a live lease extends it, same epoch;
 *   `acquire` of a lease another holder keeps alive returns `None`;
 * - `renew` is true only while the lease is live and still (holder, epoch);
 *   it moves `expiresAt` to `now + ttl`;
 * - `release` frees the lease only for the same (holder, epoch);
 * - `now` and `ttl` are epoch milliseconds from the caller's Clock: a store
 *   never reads its own clock.
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseStoreShape {
  readonly acquire: (
    tenantId: TenantId,
    rootExecutionId: ExecutionId,
    holder: InstanceId,
    ttlMillis: number,
    now: number
  ) => Effect.Effect<Option.Option<Lease>, StoreError | InvalidInputError>
  readonly renew: (lease: Lease, ttlMillis: number, now: number) => Effect.Effect<boolean, StoreError | InvalidInputError>
  readonly release: (lease: Lease) => Effect.Effect<boolean, StoreError | InvalidInputError>
  /** The tree's holder as stored (it may have expired); `None` when never taken or released. */
  readonly get: (tenantId: TenantId, rootExecutionId: ExecutionId) => Effect.Effect<Option.Option<Lease>, StoreError | InvalidInputError>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The service of the leases of execution trees; see `LeaseStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class LeaseStore extends Context.Service<LeaseStore, LeaseStoreShape>()("baton/LeaseStore") {
  /** Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend. */
  static make(impl: LeaseStoreShape): LeaseStoreShape {
    return {
      acquire: (tenantId, root, holder, ttl, now) =>
        V.checked([
          V.nonEmpty("LeaseStore.acquire", "tenantId", tenantId),
          V.nonEmpty("LeaseStore.acquire", "rootExecutionId", root),
          V.nonEmpty("LeaseStore.acquire", "holder", holder),
          V.positiveMillis("LeaseStore.acquire", "ttlMillis", ttl),
          V.time("LeaseStore.acquire", "now", now)
        ], () => impl.acquire(tenantId, root, holder, ttl, now)),
      renew: (lease, ttl, now) =>
        V.checked([
          ...checkLease("LeaseStore.renew", lease),
          V.positiveMillis("LeaseStore.renew", "ttlMillis", ttl),
          V.time("LeaseStore.renew", "now", now)
        ], () => impl.renew(lease, ttl, now)),
      release: (lease) => V.checked(checkLease("LeaseStore.release", lease), () => impl.release(lease)),
      get: (tenantId, root) =>
        V.checked([
          V.nonEmpty("LeaseStore.get", "tenantId", tenantId),
          V.nonEmpty("LeaseStore.get", "rootExecutionId", root)
        ], () => impl.get(tenantId, root)),
      ping: impl.ping
    }
  }
}

/**
 * Checks of a lease passed back to a store (renew, release, fenced writes).
 *
 * @category utils
 * @since 0.1.0
 */
export const checkLease = (operation: string, lease: Lease) => [
  V.nonEmpty(operation, "lease.tenantId", lease?.tenantId),
  V.nonEmpty(operation, "lease.rootExecutionId", lease?.rootExecutionId),
  V.nonEmpty(operation, "lease.holder", lease?.holder),
  V.wholeAtLeast(operation, "lease.epoch", lease?.epoch, 1)
]
