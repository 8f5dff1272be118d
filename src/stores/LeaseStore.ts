/**
 * One lease per execution tree, keyed by (tenantId, rootExecutionId).
 *
 * @since 0.1.0
 */
import { Array as Arr, Context, Effect, Option } from "effect"
import { InvalidInputError, type StoreError } from "./Errors.ts"
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
  /**
   * `get` of many trees at once (the recovery sweep reads a page's leases
   * with it): the held leases among `roots`, as stored, in any order; a tree
   * never taken or released is absent. At most `maxGetMany` roots a call.
   */
  readonly getMany: (roots: ReadonlyArray<LeaseKey>) => Effect.Effect<ReadonlyArray<Lease>, StoreError | InvalidInputError>
  /**
   * Optional: takes a lease from a holder known to be gone (see
   * `InstanceLiveness`) before it expires. Only while the stored lease is
   * still `current` (same holder and epoch, held): the caller becomes the
   * holder with epoch + 1 and `expiresAt = now + ttl`, whatever the stored
   * expiry; otherwise `None` and nothing changes. Every later write under
   * `current` is refused by its epoch. A store without it keeps lease expiry
   * as the only way a tree changes hands.
   */
  readonly takeOver?: ((
    current: Lease,
    holder: InstanceId,
    ttlMillis: number,
    now: number
  ) => Effect.Effect<Option.Option<Lease>, StoreError | InvalidInputError>) | undefined
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * A tree's lease key.
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseKey {
  readonly tenantId: TenantId
  readonly rootExecutionId: ExecutionId
}

/**
 * The most roots one `getMany` takes.
 *
 * @category utils
 * @since 0.1.0
 */
export const maxGetMany = 1000

/**
 * The held leases among any number of `roots`: `getMany` in calls of at most
 * `maxGetMany` roots each, one after the other.
 *
 * @category utils
 * @since 0.1.0
 */
export const getManyChunked = (
  leases: LeaseStoreShape,
  roots: ReadonlyArray<LeaseKey>
): Effect.Effect<ReadonlyArray<Lease>, StoreError | InvalidInputError> =>
  Effect.map(Effect.forEach(Arr.chunksOf(roots, maxGetMany), (chunk) => leases.getMany(chunk)), (found) => found.flat())

/**
 * What a backend implements: the shape, `getMany` optional (without it, `make` reads the roots one `get` each).
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseStoreBackend extends Omit<LeaseStoreShape, "getMany"> {
  readonly getMany?: LeaseStoreShape["getMany"] | undefined
}

/**
 * The service of the leases of execution trees; see `LeaseStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class LeaseStore extends Context.Service<LeaseStore, LeaseStoreShape>()("baton/LeaseStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: LeaseStoreBackend): LeaseStoreShape => {
  const getMany = impl.getMany ?? ((roots: ReadonlyArray<LeaseKey>) =>
    Effect.map(
      Effect.forEach(roots, (r) => impl.get(r.tenantId, r.rootExecutionId)),
      (found) => found.flatMap((o) => (Option.isSome(o) ? [o.value] : []))
    ))
  const takeOver = impl.takeOver
  return {
    ...(takeOver === undefined ? {} : {
      takeOver: (current: Lease, holder: InstanceId, ttl: number, now: number) =>
        V.checked([
          ...V.lease("LeaseStore.takeOver", current),
          V.nonEmpty("LeaseStore.takeOver", "holder", holder),
          V.positiveMillis("LeaseStore.takeOver", "ttlMillis", ttl),
          V.time("LeaseStore.takeOver", "now", now)
        ], () => takeOver(current, holder, ttl, now))
    }),
    acquire: (tenantId, root, holder, ttl, now) =>
      V.checked([
        ...V.ids("LeaseStore.acquire", { tenantId, rootExecutionId: root, holder }),
        V.positiveMillis("LeaseStore.acquire", "ttlMillis", ttl),
        V.time("LeaseStore.acquire", "now", now)
      ], () => impl.acquire(tenantId, root, holder, ttl, now)),
    renew: (lease, ttl, now) =>
      V.checked([
        ...V.lease("LeaseStore.renew", lease),
        V.positiveMillis("LeaseStore.renew", "ttlMillis", ttl),
        V.time("LeaseStore.renew", "now", now)
      ], () => impl.renew(lease, ttl, now)),
    release: (lease) => V.checked(V.lease("LeaseStore.release", lease), () => impl.release(lease)),
    get: (tenantId, root) =>
      V.checked(V.ids("LeaseStore.get", { tenantId, rootExecutionId: root }), () => impl.get(tenantId, root)),
    getMany: (roots) =>
      V.checked([
        Array.isArray(roots) && roots.length <= maxGetMany ? Effect.void : Effect.fail(
          new InvalidInputError({
            operation: "LeaseStore.getMany",
            field: "roots",
            reason: `must be an array of at most ${maxGetMany} roots; read more in several calls`
          })
        ),
        ...(Array.isArray(roots) ? roots : []).flatMap((r) => [
          V.nonEmpty("LeaseStore.getMany", "roots[].tenantId", r?.tenantId),
          V.nonEmpty("LeaseStore.getMany", "roots[].rootExecutionId", r?.rootExecutionId)
        ])
      ], () => roots.length === 0 ? Effect.succeed([]) : getMany(roots)),
    ping: impl.ping
  }
}

