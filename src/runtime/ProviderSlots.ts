/**
 * Concurrency slots per provider key, shared by every instance: at most `max`
 * calls hold a slot of a key at once across the fleet. A slot is a lease in
 * `RateLimitStore` (acquire / renew / release), so a slot whose holder died
 * comes back to the fleet when its lease runs out.
 *
 * `withSlot(key, options)(call)`:
 * - acquires a slot; when none is free it waits on the Clock — woken at once
 *   when a slot of the key is released in this process (by any fiber on the
 *   same `RateLimitStore` service), and polling every `pollInterval` for
 *   releases elsewhere — and fails with `SlotTimeoutError` after `timeout`;
 * - renews the lease every third of its length while the call runs (a fiber
 *   in the call's scope);
 * - releases the slot when the call ends, however it ends.
 *
 * If a renewal finds the lease gone (the process was paused past it), the
 * call goes on but the renewals stop: another caller may then hold the slot.
 *
 * @since 0.1.0
 */
import { Clock, Deferred, Duration, Effect, Option, Schema } from "effect"
import type { InvalidInputError, StoreError } from "../stores/Errors.ts"
import type { InstanceId } from "../stores/Ids.ts"
import { RateLimitStore, type RateLimitStoreShape, type SlotLease } from "../stores/RateLimitStore.ts"

/**
 * No slot of `key` came free within the wait allowed.
 *
 * @category errors
 * @since 0.1.0
 */
export class SlotTimeoutError extends Schema.TaggedError<SlotTimeoutError>()("SlotTimeoutError", {
  key: Schema.String,
  max: Schema.Number,
  waitedMillis: Schema.Number
}) {
  override get message() {
    return `No concurrency slot of ${this.key} (max ${this.max} at once across instances) came free within ${this.waitedMillis} ms. Retry later, or raise the provider's slots or its acquire timeout.`
  }
}

/**
 * How a call holds a slot.
 *
 * @category models
 * @since 0.1.0
 */
export interface SlotOptions {
  /** At most this many calls of the key at once, fleet-wide (a whole number ≥ 1). */
  readonly max: number
  /** The instance holding the slot (its lease holder). */
  readonly holder: InstanceId
  /** How long a slot is held without renewal: a dead holder's slot returns after it (default 30 s). */
  readonly lease?: Duration.Input | undefined
  /** How long to wait for a slot before `SlotTimeoutError` (default 60 s). */
  readonly timeout?: Duration.Input | undefined
  /** How often a waiting call looks again for releases by other instances (default 1 s). */
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The errors of `withSlot` besides the call's own.
 *
 * @category models
 * @since 0.1.0
 */
export type SlotError = SlotTimeoutError | StoreError | InvalidInputError

// In-process waiters per store service and key: a release wakes them at once.
const waiters = new WeakMap<object, Map<string, Set<Deferred.Deferred<void>>>>()

const waitersOf = (store: RateLimitStoreShape, key: string): Set<Deferred.Deferred<void>> => {
  let byKey = waiters.get(store)
  if (byKey === undefined) waiters.set(store, byKey = new Map())
  let set = byKey.get(key)
  if (set === undefined) byKey.set(key, set = new Set())
  return set
}

const wake = (store: RateLimitStoreShape, key: string) =>
  Effect.suspend(() => {
    const set = waiters.get(store)?.get(key)
    if (set === undefined) return Effect.void
    const all = [...set]
    set.clear()
    return Effect.forEach(all, (d) => Deferred.succeed(d, undefined), { discard: true })
  })

const millisOf = (input: Duration.Input | undefined, fallback: number) =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/** Waits until woken by a release of `key` here, or `millis` passed on the Clock. */
const waitForRelease = (store: RateLimitStoreShape, key: string, millis: number) =>
  Effect.acquireUseRelease(
    Effect.tap(Deferred.make<void>(), (d) => Effect.sync(() => waitersOf(store, key).add(d))),
    (d) => Effect.raceFirst(Deferred.await(d), Effect.sleep(Duration.millis(millis))),
    (d) => Effect.sync(() => waitersOf(store, key).delete(d))
  )

const acquire = (store: RateLimitStoreShape, key: string, o: Required<Pick<SlotOptions, "max" | "holder">> & { leaseMillis: number; timeoutMillis: number; pollMillis: number }) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const got = yield* store.acquireSlot(key, o.max, o.holder, o.leaseMillis, now)
      if (Option.isSome(got)) return got.value
      const left = start + o.timeoutMillis - now
      if (left <= 0) return yield* new SlotTimeoutError({ key, max: o.max, waitedMillis: now - start })
      yield* waitForRelease(store, key, Math.min(o.pollMillis, left))
    }
  })

const renewWhileHeld = (store: RateLimitStoreShape, slot: SlotLease, leaseMillis: number): Effect.Effect<void> =>
  Effect.sleep(Duration.millis(leaseMillis / 3)).pipe(
    Effect.andThen(Clock.currentTimeMillis),
    Effect.flatMap((now) => store.renewSlot(slot, leaseMillis, now)),
    // a store that did not answer: try again at the next turn, the lease still runs
    Effect.catch(() => Effect.succeed(true)),
    Effect.flatMap((held) => (held ? renewWhileHeld(store, slot, leaseMillis) : Effect.void))
  )

/**
 * Runs `call` holding a concurrency slot of `key` (see the module doc).
 *
 * @category combinators
 * @since 0.1.0
 */
export const withSlot = (key: string, options: SlotOptions) =>
<A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E | SlotError, R | RateLimitStore> =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const leaseMillis = millisOf(options.lease, 30_000)
    const o = {
      max: options.max,
      holder: options.holder,
      leaseMillis,
      timeoutMillis: millisOf(options.timeout, 60_000),
      pollMillis: millisOf(options.pollInterval, 1_000)
    }
    return yield* Effect.scoped(Effect.gen(function*() {
      const slot = yield* Effect.acquireRelease(acquire(store, key, o), (slot) =>
        store.releaseSlot(slot).pipe(Effect.ignore, Effect.andThen(wake(store, key))))
      yield* Effect.forkScoped(renewWhileHeld(store, slot, leaseMillis))
      return yield* call
    }))
  })
