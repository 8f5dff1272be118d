/**
 * The runtime's one lease primitive: a lease kept alive on the Clock.
 *
 * Whatever the lease is of — a tree, a queued child's claim, a slot of a
 * `RateLimitStore` key (provider slots, tenant permits, a tree's shared child
 * slots), the leader's lease — keeping it is the same work:
 *
 * - `make` tracks `confirmedUntil`: the clock read *before* the last acquire
 *   or renewal the store confirmed, plus the lease length. Past it nothing
 *   says the lease is still this holder's.
 * - `renewEvery` renews in a fiber of the caller's scope every period: a
 *   renewal the store refused ends the loop (`onRefused`), one the store did
 *   not answer is reported (`onError`) and tried again at the next period.
 * - `expireAt` stops the holder at `confirmedUntil` when nothing newer was
 *   confirmed (`onExpired`): a holder whose renewals fail stops before any
 *   other instance can take the lease.
 *
 * The lease is taken and released by its own store; the holders built on this
 * module (`LeaseHolder` for trees and the leader, `LeasedSlots` for slots,
 * the child worker's claims) say what a loss means for them. Only the modules
 * of this folder call a store's renewal.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, type Scope } from "effect"

/**
 * How a lease is renewed, and how long a confirmation lasts.
 *
 * @category models
 * @since 0.1.0
 */
export interface KeptLeaseOptions<E> {
  /** The lease length: a confirmation read at `t` holds until `t + leaseMillis`. */
  readonly leaseMillis: number
  /** The clock read before the acquire the store confirmed. */
  readonly acquiredAt: number
  /** One renewal read at `now`: `true` while the lease is still this holder's. */
  readonly renew: (now: number) => Effect.Effect<boolean, E>
}

/**
 * A lease being kept: its confirmed time, and one renewal.
 *
 * @category models
 * @since 0.1.0
 */
export interface KeptLease<E> {
  readonly leaseMillis: number
  /** Until when the holder may act without a new confirmation. */
  readonly confirmedUntil: () => number
  /** A renewal read at `at` was confirmed (here or by a write that renewed it). */
  readonly confirm: (at: number) => void
  /**
   * The store reported the expiry `expiresAt` at `at` without renewing: an
   * earlier confirmation of this holder set it, so it is trusted up to a
   * renewal read now and never beyond.
   */
  readonly confirmExpiry: (at: number, expiresAt: number) => void
  /** Renews once at the Clock's now; confirms it when the store did. */
  readonly renewOnce: Effect.Effect<boolean, E>
}

/**
 * Starts keeping a lease the store just granted.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <E>(options: KeptLeaseOptions<E>): Effect.Effect<KeptLease<E>> =>
  Clock.clockWith((clock) => Effect.sync((): KeptLease<E> => {
    const { leaseMillis } = options
    let confirmedUntil = options.acquiredAt + leaseMillis
    const confirm = (at: number) => {
      confirmedUntil = Math.max(confirmedUntil, at + leaseMillis)
    }
    return {
      leaseMillis,
      confirmedUntil: () => confirmedUntil,
      confirm,
      confirmExpiry: (at, expiresAt) => {
        confirmedUntil = Math.max(confirmedUntil, Math.min(expiresAt, at + leaseMillis))
      },
      renewOnce: Effect.suspend(() => {
        const at = clock.currentTimeMillisUnsafe()
        return Effect.tap(options.renew(at), (held) => held ? Effect.sync(() => confirm(at)) : Effect.void)
      })
    }
  }))

/**
 * What the renewal loop does with each answer.
 *
 * @category models
 * @since 0.1.0
 */
export interface RenewEveryOptions<E, E2> {
  /** Time between renewals: shorter than the lease. */
  readonly periodMillis: number
  /** Runs after every renewal the store confirmed; its failure ends the loop. */
  readonly onRenewed?: Effect.Effect<void, E2> | undefined
  /** Runs once when a renewal was refused (the lease expired or another holds it); the loop ends. */
  readonly onRefused?: Effect.Effect<void> | undefined
  /** A renewal the store did not answer: reported here, tried again at the next period. */
  readonly onError: (error: E) => Effect.Effect<void>
}

/**
 * Renews `lease` every period in a fiber of the current scope, until a
 * renewal is refused, `onRenewed` fails, or the scope closes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const renewEvery = <E, E2>(
  lease: KeptLease<E>,
  options: RenewEveryOptions<E, E2>
): Effect.Effect<void, never, Scope.Scope> => {
  const period = Duration.millis(options.periodMillis)
  const loop: Effect.Effect<void> = Effect.sleep(period).pipe(
    Effect.andThen(lease.renewOnce),
    Effect.matchEffect({
      onFailure: (e) => Effect.as(options.onError(e), true),
      onSuccess: (held) =>
        held
          ? (options.onRenewed === undefined ? Effect.succeed(true) : options.onRenewed.pipe(Effect.as(true), Effect.orElseSucceed(() => false)))
          : Effect.as(options.onRefused ?? Effect.void, false)
    }),
    Effect.flatMap((goOn) => goOn ? loop : Effect.void)
  )
  return Effect.asVoid(Effect.forkScoped(loop))
}

/**
 * Runs `onExpired` in a fiber of the current scope at `confirmedUntil`
 * exactly when nothing newer was confirmed meanwhile; ends at once when
 * `settled()` says the holder stopped for another reason.
 *
 * @category constructors
 * @since 0.1.0
 */
export const expireAt = <E>(
  lease: KeptLease<E>,
  options: { readonly settled: () => boolean; readonly onExpired: () => void }
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.asVoid(Effect.forkScoped(
    Clock.clockWith((clock) =>
      Effect.suspend(() => {
        const now = clock.currentTimeMillisUnsafe()
        if (options.settled()) return Effect.succeed(true)
        if (now >= lease.confirmedUntil()) {
          options.onExpired()
          return Effect.succeed(true)
        }
        return Effect.as(Effect.sleep(Duration.millis(lease.confirmedUntil() - now)), false)
      }).pipe(Effect.repeat({ until: (done) => done })))
  ))
