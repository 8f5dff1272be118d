/**
 * The lease holder: one per execution tree a pass of this instance moves.
 *
 * Acquires the tree's lease, renews it in a background fiber every
 * `renewMillis`, fences locally by `confirmedUntil` and releases it when its
 * scope closes. Losing the lease — a renewal answered false, a fenced write
 * refused, or `confirmedUntil` reached with nothing confirmed — aborts the
 * pass at once: the holder's `signal` aborts with a `LeaseLostError` and
 * `lost` completes.
 *
 * `confirmedUntil` is the clock read *before* the last acquire or renewal the
 * store confirmed, plus the lease length. A renewal is the background fiber's
 * `renew`, or a fenced checkpoint write that renewed (it pushes the lease
 * only when a renewal is due — see `Fence` — and then counts as a confirmed
 * renewal read at the write's `now`). A fenced write that did not renew
 * reports the expiry the store still holds, which an earlier confirmed
 * acquire/renewal of this holder set (its clock read + the lease length), so
 * confirming with it keeps the same rule.
 *
 * @since 0.1.0
 */
import { Clock, Deferred, Duration, Effect, type Metric, Option, Scope } from "effect"
import { LeaseLostError, type InvalidInputError, type StoreError } from "../../../stores/Errors.ts"
import type { Fence } from "../../../stores/Fence.ts"
import type { Lease } from "../../../stores/Lease.ts"
import { LeaseStore } from "../../../stores/LeaseStore.ts"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import * as Metrics from "../../Metrics.ts"
import * as Metering from "../observe/Metering.ts"
import * as KeptLease from "./KeptLease.ts"

/**
 * A held lease of one tree: renewed in the background, fenced, lost when renewals fail.
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseHolder {
  /** The lease as last acquired. */
  readonly lease: Lease
  /** Aborted with the `LeaseLostError` when the lease is lost. */
  readonly signal: AbortSignal
  /** Fails with the `LeaseLostError` when the lease is lost. */
  readonly lost: Deferred.Deferred<never, LeaseLostError>
  /** What the checkpoint saver checks and feeds: travels in `configurable`. */
  readonly fence: Fence
  /** Until when the holder may act without a new confirmation. */
  readonly confirmedUntil: () => number
  /** Stops the holder as if the lease were lost (used by cancel and close): aborts with `error`. */
  readonly abort: (error: unknown) => void
  /**
   * Tells the holder its tree ended under this lease (its record moved to a
   * final status): the release then wakes only the tree's own waiters (see
   * `LeaseWakeups`), no sweep.
   */
  readonly treeEnded: () => void
}

/**
 * How a lease holder takes and keeps its lease.
 *
 * @category models
 * @since 0.1.0
 */
export interface HolderOptions {
  readonly tenantId: string
  readonly rootExecutionId: string
  readonly holder: string
  readonly leaseMillis: number
  readonly renewMillis: number
  /** Runs after every renewal the store confirmed (e.g. to read a cancel request). */
  readonly onConfirmed?: Effect.Effect<void> | undefined
  /** Awaited before the lease is released (step bodies that outlived the pass). */
  readonly beforeRelease?: Effect.Effect<void> | undefined
  /** The instance whose metrics count this holder's acquisitions, renewals and losses (none without). */
  readonly instanceId?: string | undefined
  /**
   * Asked when `acquire` was refused: may take the lease over from a holder
   * known to be gone (see `Takeover`), read at the same `readAt`.
   */
  readonly takeOver?: ((readAt: number) => Effect.Effect<Option.Option<Lease>, StoreError | InvalidInputError, LeaseStore>) | undefined
  /**
   * False while this instance's liveness signal is lost (see `Takeover`):
   * other instances may take its trees at once, so the holder stops at its
   * next check (a write, `leaseHeld`) as if the lease were lost.
   */
  readonly stillLive?: (() => boolean) | undefined
}

/**
 * Tries to take the tree's lease. `None` when another holder keeps it alive.
 * With `Some`, the renewal and deadline fibers live in the current scope and
 * the lease is released when it closes (unless it was lost).
 *
 * @category internal
 * @since 0.1.0
 */
export const acquire = Effect.fnUntraced(function*(options: HolderOptions): Effect.fn.Return<
  Option.Option<LeaseHolder>,
  StoreError | InvalidInputError,
  LeaseStore | Scope.Scope
> {
  const store = yield* LeaseStore
  const clock = yield* Clock.Clock
  const wakeups = yield* LeaseWakeups
  const { holder, leaseMillis, renewMillis, rootExecutionId, tenantId } = options
  const readAt = clock.currentTimeMillisUnsafe()
  const answered = yield* store.acquire(tenantId, rootExecutionId, holder, leaseMillis, readAt)
  const acquired = Option.isNone(answered) && options.takeOver !== undefined ? yield* options.takeOver(readAt) : answered
  yield* Effect.annotateCurrentSpan("baton.acquired", Option.isSome(acquired))
  if (Option.isNone(acquired)) return Option.none()
  const lease = acquired.value
  yield* Effect.annotateCurrentSpan("baton.epoch", lease.epoch)
  const context = yield* Effect.context<never>()
  /** Counts `metric` for the holder's instance (nothing without one). */
  const count = (metric: Metric.Metric<number, unknown>, attributes?: Record<string, string>) => {
    if (options.instanceId !== undefined) Metering.addUnsafe(context, metric, options.instanceId, attributes)
  }
  count(Metrics.leaseAcquisitions)
  /** Set when the lease was lost (or the holder stopped as if it were). */
  let lostError: LeaseLostError | undefined
  /**
   * The pass ended with the lease still held: the holder is stopped like a
   * lost one, but its `LeaseLostError` is built only if something asks for it
   * (a late write, an awaiter of `lost`) — not on every normal end of a pass.
   */
  let ended = false
  /** The tree ended under this lease (see `LeaseHolder.treeEnded`). */
  let treeEnded = false
  /** The pass's fenced writes under way (see `Fence.writing`): the lease is released only once they settled. */
  const writes = new Set<Promise<unknown>>()
  const controller = new AbortController()
  const lost = yield* Deferred.make<never, LeaseLostError>()
  const scope = yield* Effect.scope

  const lostWith = (reason: string) => new LeaseLostError({ tenantId, rootExecutionId, holder, epoch: lease.epoch, reason })
  /** Why the holder may not act any more, or undefined while it may. */
  const stopped = (): LeaseLostError | undefined => {
    if (lostError === undefined && ended) lostError = lostWith("the pass ended and released the lease")
    return lostError
  }
  const markLost = (reason: string, kind: "renewal-refused" | "deadline" | "fenced-write" | "liveness"): LeaseLostError => {
    const already = stopped()
    if (already !== undefined) return already
    count(Metrics.leaseLosses, { reason: kind })
    lostError = lostWith(reason)
    controller.abort(lostError)
    Deferred.doneUnsafe(lost, Effect.fail(lostError))
    return lostError
  }
  // A stopped holder asks the store nothing: its renewal answers "not held" and changes nothing.
  const kept = yield* KeptLease.make({
    leaseMillis,
    acquiredAt: readAt,
    renew: (at) => stopped() !== undefined ? Effect.succeed(false) : store.renew(lease, leaseMillis, at)
  })
  const deadlineReason = () => `no renewal was confirmed by the store before ${new Date(kept.confirmedUntil()).toISOString()}`
  const refused = () => markLost("a renewal was refused: the lease expired or another instance holds it", "renewal-refused")
  const renewed = Effect.suspend(() => {
    count(Metrics.leaseRenewals)
    return options.onConfirmed ?? Effect.void
  })

  // Renewal fiber: a store error is retried at the next renewal; writes go on until confirmedUntil.
  yield* KeptLease.renewEvery(kept, {
    periodMillis: renewMillis,
    onRenewed: renewed,
    onRefused: Effect.sync(refused),
    onError: (e) =>
      e._tag === "InvalidInputError" ? Effect.die(e) : Effect.logWarning("lease renewal failed; retrying at the next renewal", e.message)
  }).pipe(Scope.provide(scope))

  // Deadline fiber: stops the holder at confirmedUntil exactly when nothing newer was confirmed.
  yield* KeptLease.expireAt(kept, {
    settled: () => lostError !== undefined || ended,
    onExpired: () => void markLost(deadlineReason(), "deadline")
  }).pipe(Scope.provide(scope))

  yield* Scope.addFinalizer(
    scope,
    Effect.gen(function*() {
      // Whatever ended the pass, its step bodies are told to stop before the lease may go.
      if (!controller.signal.aborted) controller.abort(passEnded())
      if (options.beforeRelease !== undefined) yield* options.beforeRelease
      if (lostError !== undefined) return
      ended = true
      Deferred.doneUnsafe(lost, Effect.suspend(() => Effect.fail(stopped()!)))
      // From here on new writes are refused (`ended`); those already under way land (or fail) first — released
      // before, the release would refuse them and the step they record would run again elsewhere. None can land
      // once the confirmed time ran out, so that bounds the wait.
      yield* writesSettled
      yield* store.release(lease).pipe(
        Effect.tap((released) => released ? Effect.sync(() => wakeups.released(tenantId, rootExecutionId, { ended: treeEnded })) : Effect.void),
        Effect.catch((e) => Effect.logWarning("lease release failed; the lease will expire", e.message))
      )
    })
  )

  const writesSettled = Effect.suspend(() => {
    if (writes.size === 0) return Effect.void
    const remaining = kept.confirmedUntil() - clock.currentTimeMillisUnsafe()
    return Effect.raceFirst(
      Effect.promise(() => Promise.allSettled([...writes])).pipe(Effect.repeat({ until: () => writes.size === 0 }), Effect.asVoid),
      Effect.sleep(Duration.millis(Math.max(0, remaining)))
    )
  })

  const fence: Fence = {
    lease,
    ttlMillis: leaseMillis,
    renewMillis,
    now: () => clock.currentTimeMillisUnsafe(),
    refusal: () => {
      if (lostError !== undefined || ended) return stopped()
      if (options.stillLive !== undefined && !options.stillLive()) {
        return markLost("this instance's liveness signal was lost (its connection cut): other instances may take its trees at once", "liveness")
      }
      return clock.currentTimeMillisUnsafe() >= kept.confirmedUntil() ? markLost(deadlineReason(), "deadline") : undefined
    },
    confirmed: (at, expiresAt, renewed) => renewed ? kept.confirm(at) : kept.confirmExpiry(at, expiresAt),
    writing: (write) => {
      writes.add(write)
      const settled = () => void writes.delete(write)
      write.then(settled, settled)
    },
    lost: (e) => {
      // Told by the saver and the record transitions when the store refused a fenced write.
      if (stopped() === undefined) count(Metrics.fencedWritesRefused)
      markLost(e.reason, "fenced-write")
    },
    renewBeforeWrite: () =>
      Effect.runPromise(kept.renewOnce.pipe(
        Effect.flatMap((held) => held ? renewed : Effect.fail(refused())),
        Effect.catchTag("InvalidInputError", Effect.die)
      ))
  }

  return Option.some<LeaseHolder>({
    lease,
    signal: controller.signal,
    lost,
    fence,
    confirmedUntil: kept.confirmedUntil,
    abort: (error) => {
      if (lostError === undefined && !ended && !controller.signal.aborted) controller.abort(error)
    },
    treeEnded: () => {
      treeEnded = true
    }
  })
}, (effect, options) =>
  Effect.withSpan(effect, "baton.lease.acquire", {
    attributes: {
      "baton.tenant": options.tenantId,
      "baton.root": options.rootExecutionId,
      "baton.holder": options.holder,
      ...(options.instanceId === undefined ? {} : { "baton.instance": options.instanceId })
    }
  }))

/**
 * The abort reason step bodies see when their pass ended normally. Built
 * without a stack trace: it is made on every pass and says all there is.
 */
const passEnded = (): Error => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return new Error("the pass ended")
  } finally {
    Error.stackTraceLimit = limit
  }
}
