/**
 * The runtime's tenant quota (`tenantQuota`, `onOverQuota`): a pass moves a
 * tree only while it holds one of its tenant's permits — a lease in
 * `RateLimitStore` (the slots of `TenantQuota.permitKey(tenant)`) held by the
 * pass's holder, with the tree lease's length, renewed with the tree lease
 * (right after each renewal of it the store confirmed), released when the
 * pass ends (the tree rests paused, finishes, fails, or
 * the pass loses its lease or stops), and reclaimed after its lease when the
 * holder dies.
 *
 * - `admitNew` (a new root, before it is recorded): with `onOverQuota:
 *   "fail"`, takes a permit at once or fails with `TenantQuotaExceededError`
 *   — nothing is recorded. The permit is held by the starting pass.
 * - `during` (the pass, from its start phase to its end): holds the permit
 *   `admitNew` took, or waits for one — in arrival order among this
 *   instance's waiters, woken at once by a release in this instance, else
 *   polling every `waitPoll` on the Clock. A waiting pass keeps its tree
 *   lease and its record Running: a crash leaves it to the recovery sweep,
 *   which waits again. A lost lease, a cancel or a close ends the wait.
 * - The permit is renewed right after each renewal of the tree lease the
 *   store confirmed (`renewWithLease`, called by the lease holder), so it
 *   lives as long as the lease. A renewal that finds it gone (the process
 *   paused past it: another pass may hold it now) stops the pass as a lost
 *   tree lease does; the tree goes on elsewhere, or here, under a new permit.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option, type Scope } from "effect"
import { BatonConfigError, type InvalidInputError, LeaseLostError, type StoreError } from "../../../stores/Errors.ts"
import { ExecutionCancelledError, ExecutionFailedError, InstanceStoppingError } from "../../Errors.ts"
import { RateLimitStore, type RateLimitStoreShape, type SlotLease } from "../../../stores/RateLimitStore.ts"
import { permitKey, TenantQuotaExceededError } from "../../limits/TenantQuota.ts"
import type { ActivePass, InstanceShape } from "../Instance.ts"
import * as LeasedSlots from "../lease/leasedSlots.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"

/** The permit lapsed (the process paused past it; another pass may hold it now): the pass stops as on a lost lease. */
const lapsed = (pass: ActivePass, holder: LeaseHolder) =>
  Effect.sync(() =>
    holder.abort(
      new LeaseLostError({
        tenantId: pass.tenantId,
        rootExecutionId: pass.rootExecutionId,
        holder: holder.lease.holder,
        epoch: holder.lease.epoch,
        reason: "its tenant quota permit lapsed (the process paused past the permit's lease); the tree goes on under a new permit"
      })
    )
  )

/** The renewal of each pass's permit, run with each renewal of its tree lease (see `renewWithLease`). */
const renewals = new WeakMap<ActivePass, Effect.Effect<void>>()

/**
 * Renews the pass's permit, if it holds one: the lease holder runs it right
 * after each renewal of the tree lease the store confirmed, so the permit
 * lives as long as the lease. A renewal that finds the permit gone stops the
 * pass; a store that did not answer is tried again at the next renewal.
 *
 * @category internal
 * @since 0.1.0
 */
export const renewWithLease = (pass: ActivePass): Effect.Effect<void> => Effect.suspend(() => renewals.get(pass) ?? Effect.void)

/** Registers the permit's renewal for the rest of the scope. */
const renewedWithLease = (instance: InstanceShape, store: RateLimitStoreShape, pass: ActivePass, holder: LeaseHolder) => (slot: SlotLease) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      renewals.set(
        pass,
        LeasedSlots.renewSlotOnce(store, slot, instance.config.leaseMillis).pipe(
          Effect.flatMap((held) => (held ? Effect.void : lapsed(pass, holder)))
        )
      )
    ),
    () => Effect.sync(() => renewals.delete(pass))
  )

/** Passes already holding a permit taken by `admitNew` (their scope releases it). */
const admitted = new WeakSet<ActivePass>()

const storeOf = (instance: InstanceShape) => Context.getOption(instance.services as Context.Context<never>, RateLimitStore)

/**
 * Fails the runtime's build (field `tenantQuota`) when a quota is set and no
 * `RateLimitStore` is among its services.
 *
 * @category constructors
 * @since 0.1.0
 */
export const check = (instance: InstanceShape): Effect.Effect<void, BatonConfigError> =>
  instance.config.tenantQuota === undefined || Option.isSome(storeOf(instance))
    ? Effect.void
    : Effect.fail(
      new BatonConfigError({
        field: "tenantQuota",
        reason: "needs a RateLimitStore (permits are its leased slots): provide a stores bundle, which provides one, or a RateLimitStore Layer"
      })
    )

const optionsOf = (instance: InstanceShape, holder: string, timeoutMillis: number): LeasedSlots.HoldOptions => ({
  max: instance.config.tenantQuota!,
  holder,
  leaseMillis: instance.config.leaseMillis,
  timeoutMillis,
  pollMillis: instance.config.waitPollMillis,
  renewal: "caller",
  // A pass's holder: a permit claim whose answer was lost finds the permit it took.
  uniqueHolder: true
})

/**
 * A new root over quota with `onOverQuota: "fail"`: takes a permit now, for
 * the rest of the scope (the starting pass's), or fails with
 * `TenantQuotaExceededError`. Otherwise does nothing (the pass will wait).
 *
 * @category internal
 * @since 0.1.0
 */
export const admitNew = (
  instance: InstanceShape,
  pass: ActivePass,
  holder: LeaseHolder
): Effect.Effect<void, TenantQuotaExceededError | StoreError | InvalidInputError, Scope.Scope> => {
  const cap = instance.config.tenantQuota
  const store = storeOf(instance)
  if (cap === undefined || instance.config.onOverQuota !== "fail" || Option.isNone(store)) return Effect.void
  return LeasedSlots.holdScoped(
    permitKey(pass.tenantId),
    optionsOf(instance, pass.holder, 0),
    (waitedMillis) => Effect.fail(new TenantQuotaExceededError({ tenantId: pass.tenantId, cap, waitedMillis }))
  ).pipe(
    Effect.provideService(RateLimitStore, store.value),
    Effect.flatMap(renewedWithLease(instance, store.value, pass, holder)),
    Effect.tap(() => Effect.sync(() => admitted.add(pass)))
  )
}

/** What `during` needs of a pass. */
export interface PassView<RC = never> {
  readonly instance: InstanceShape
  readonly pass: ActivePass
  readonly holder: LeaseHolder
  /** Ends the tree as cancelled under the pass's lease (after its undos, which may fail it), then fails with why. */
  readonly cancelled: Effect.Effect<ExecutionCancelledError | ExecutionFailedError, StoreError | InvalidInputError | LeaseLostError | InstanceStoppingError, RC>
}

/** Fails once the pass's holder stops: its lease lost, a cancel (the tree ended cancelled), a close. */
type StopError = LeaseLostError | ExecutionCancelledError | ExecutionFailedError | InstanceStoppingError | StoreError | InvalidInputError

const stopped = <RC>(p: PassView<RC>): Effect.Effect<never, StopError, RC> =>
  Effect.callback<never, unknown>((resume) => {
    const signal = p.holder.signal
    const onAbort = () => resume(Effect.fail(signal.reason))
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  }).pipe(Effect.catch((reason): Effect.Effect<never, StopError, RC> => {
    if (reason instanceof LeaseLostError || reason instanceof InstanceStoppingError) return Effect.fail(reason)
    if (reason instanceof ExecutionCancelledError) return Effect.flatMap(p.cancelled, Effect.fail)
    return Effect.die(reason)
  }))

const setPhase = (p: PassView<unknown>, phase: ActivePass["phase"]) =>
  Effect.sync(() => {
    p.pass.phase = phase
    p.instance.passes.progressed()
  })

/**
 * Runs the pass `effect` holding one of its tenant's permits (see the module
 * doc); without a quota, runs it as it is.
 *
 * @category internal
 * @since 0.1.0
 */
export const during = <A, E, R, RC>(
  p: PassView<RC>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | StopError, R | RC> => {
  const { instance, pass } = p
  const cap = instance.config.tenantQuota
  const store = storeOf(instance)
  if (cap === undefined || Option.isNone(store) || admitted.has(pass)) return effect
  const wait = LeasedSlots.holdScoped(
    permitKey(pass.tenantId),
    optionsOf(instance, p.holder.lease.holder, Number.POSITIVE_INFINITY),
    () => Effect.die(new Error("a permit wait without a deadline gave up")),
    stopped(p)
  ).pipe(Effect.provideService(RateLimitStore, store.value), Effect.flatMap(renewedWithLease(instance, store.value, pass, p.holder)))
  return Effect.scoped(
    Effect.andThen(
      setPhase(p, "waiting").pipe(Effect.andThen(wait), Effect.ensuring(setPhase(p, "running"))),
      effect
    )
  )
}
