/**
 * Holding one of `max` leased slots of a key in `RateLimitStore` while an
 * effect runs — shared by provider concurrency slots and tenant permits.
 *
 * - Waiters of one key in one process form a line: only its head asks the
 *   store, so this process's waiters get slots in the order they came —
 *   fair between tenants when the waiters name theirs (`fairBy`): a tenant's
 *   n-th waiter stands after every other tenant's n-th, so one tenant's
 *   burst cannot keep another's single call waiting behind it. The
 *   head is woken at once when a slot of the key is released in this process
 *   (by any fiber on the same `RateLimitStore` service) or when the head
 *   before it got its slot; it also polls every `pollMillis` on the Clock for
 *   releases by other instances and expired leases. Across instances there
 *   is no order: the heads of each process race.
 * - The lease is renewed every third of its length by a fiber in the call's
 *   scope; if a renewal finds it gone, renewals stop (the call goes on).
 * - The slot is released when the effect ends, however it ends. Waiting can
 *   be interrupted (a cancelled call, a closing instance); taking the slot
 *   and registering its release cannot be split by an interruption.
 */
import { Clock, Deferred, Duration, Effect, Option, type Scope } from "effect"
import type { InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"
import { RateLimitStore, type RateLimitStoreShape, type SlotLease } from "../../../stores/RateLimitStore.ts"
import * as KeptLease from "./KeptLease.ts"

export interface HoldOptions {
  readonly max: number
  readonly holder: string
  readonly leaseMillis: number
  /** How long to wait; 0: ask once. */
  readonly timeoutMillis: number
  readonly pollMillis: number
  /** Who renews the slot: a fiber of its own every third of the lease (default), or the caller ("caller"). */
  readonly renewal?: "own" | "caller" | undefined
  /** The tenant the waiter waits for: the line takes tenants in turn (waiters naming none count as one tenant). */
  readonly fairBy?: string | undefined
  /**
   * True when `holder` is this claim's alone (a pass's holder): an
   * `acquireSlot` whose answer was lost (a retryable store failure) is then
   * tried again, first by asking the store for the slot the holder holds —
   * the one the lost call took — so the claim gets that slot, not a second.
   */
  readonly uniqueHolder?: boolean | undefined
}

/**
 * One `acquireSlot`; with a unique holder, a retryable failure (maybe after
 * the store committed: the answer was lost) is followed by one look for the
 * slot the holder holds, and one more try if it holds none.
 */
const acquireOnce = (store: RateLimitStoreShape, key: string, o: HoldOptions, now: number) =>
  store.acquireSlot(key, o.max, o.holder, o.leaseMillis, now).pipe(
    Effect.catchIf(
      (e) => o.uniqueHolder === true && store.heldSlot !== undefined && e._tag === "StoreError" && e.isRetryable,
      () =>
        Effect.flatMap(store.heldSlot!(key, o.holder, now), (held) =>
          Option.isSome(held) ? Effect.succeed(held) : store.acquireSlot(key, o.max, o.holder, o.leaseMillis, now))
    )
  )

interface Waiter {
  wake: Deferred.Deferred<void>
  readonly tenant: string
  /** Its turn: the line is kept in order of rounds, and of arrival within a round. */
  readonly round: number
}

const lines = new WeakMap<object, Map<string, Array<Waiter>>>()

const lineOf = (store: RateLimitStoreShape, key: string): Array<Waiter> => {
  let byKey = lines.get(store)
  if (byKey === undefined) lines.set(store, byKey = new Map())
  let line = byKey.get(key)
  if (line === undefined) byKey.set(key, line = [])
  return line
}

/**
 * Puts `me` in line: after every waiter of an earlier or the same round, so
 * the line takes tenants in turn and each tenant's waiters in the order they
 * came. With one tenant this is the end of the line.
 */
const join = (line: Array<Waiter>, me: Waiter) => {
  let at = line.length
  while (at > 1 && line[at - 1].round > me.round) at--
  line.splice(at, 0, me)
}

/**
 * A new waiter of `tenant`: the round after its tenant's last waiter in
 * line, and never before the head's round (a tenant coming back after a
 * while gets no credit for the turns it was away).
 */
const waiter = (wake: Deferred.Deferred<void>, line: ReadonlyArray<Waiter>, tenant: string): Waiter => ({
  wake,
  tenant,
  round: line.reduce((round, w) => (w.tenant === tenant ? Math.max(round, w.round + 1) : round), line[0]?.round ?? 0)
})

const wakeHead = (store: RateLimitStoreShape, key: string) =>
  Effect.suspend(() => {
    const head = lines.get(store)?.get(key)?.[0]
    return head === undefined ? Effect.void : Deferred.succeed(head.wake, undefined)
  })

const leave = (store: RateLimitStoreShape, key: string, me: Waiter) =>
  Effect.suspend(() => {
    const line = lineOf(store, key)
    const at = line.indexOf(me)
    if (at >= 0) line.splice(at, 1)
    if (line.length === 0) lines.get(store)?.delete(key)
    return at === 0 ? wakeHead(store, key) : Effect.void
  })

/**
 * Waits in line for a slot; `None` when none came free within the timeout.
 * Run uninterruptibly with `restore` making only the waits interruptible, so
 * a slot the store handed out always gets its release registered (`onSlot`).
 */
const acquire = (
  store: RateLimitStoreShape,
  key: string,
  o: HoldOptions,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  onSlot: (slot: SlotLease) => Effect.Effect<void, never, Scope.Scope>
) =>
  Effect.gen(function*() {
    const line = lineOf(store, key)
    const me = waiter(yield* Deferred.make<void>(), line, o.fairBy ?? "")
    join(line, me)
    const start = yield* Clock.currentTimeMillis
    return yield* Effect.gen(function*() {
      while (true) {
        const now = yield* Clock.currentTimeMillis
        if (line[0] === me) {
          const got = yield* acquireOnce(store, key, o, now)
          if (Option.isSome(got)) {
            yield* onSlot(got.value)
            return got
          }
        }
        const left = start + o.timeoutMillis - now
        if (left <= 0) return Option.none<SlotLease>()
        me.wake = yield* Deferred.make<void>()
        yield* restore(Effect.raceFirst(Deferred.await(me.wake), Effect.sleep(Duration.millis(Math.min(o.pollMillis, left)))))
      }
    }).pipe(Effect.ensuring(leave(store, key, me)))
  })

/**
 * Renews `slot` every third of its lease in a fiber of the current scope; a
 * renewal the store did not answer is tried again at the next turn (the lease
 * still runs), one that finds the slot gone runs `onLost` and stops.
 */
export const renewWhileHeld = (store: RateLimitStoreShape, slot: SlotLease, leaseMillis: number, onLost: Effect.Effect<void> = Effect.void) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.flatMap(KeptLease.make({ leaseMillis, acquiredAt: now, renew: (at) => store.renewSlot(slot, leaseMillis, at) }), (kept) =>
      KeptLease.renewEvery(kept, { periodMillis: leaseMillis / 3, onRefused: onLost, onError: () => Effect.void })))

/**
 * One renewal of `slot`, for a slot renewed along with another lease (a
 * tenant permit with its tree lease): `false` only when the store says the
 * slot is gone; a store that did not answer counts as held (tried again at
 * the next renewal).
 */
export const renewSlotOnce = (store: RateLimitStoreShape, slot: SlotLease, leaseMillis: number): Effect.Effect<boolean> =>
  Clock.currentTimeMillis.pipe(
    Effect.flatMap((now) => store.renewSlot(slot, leaseMillis, now)),
    Effect.catch(() => Effect.succeed(true))
  )

/**
 * Asks once for one of `max` slots of `key`; `Some` holds it for the rest of
 * the current scope (renewed every third of the lease, released when the
 * scope closes), `None` when all are held.
 */
export const tryScoped = (key: string, max: number, holder: string, leaseMillis: number) =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const got = yield* Effect.uninterruptible(Effect.gen(function*() {
      const slot = yield* store.acquireSlot(key, max, holder, leaseMillis, yield* Clock.currentTimeMillis)
      if (Option.isSome(slot)) yield* Effect.addFinalizer(() => store.releaseSlot(slot.value).pipe(Effect.ignore, Effect.andThen(wakeHead(store, key))))
      return slot
    }))
    if (Option.isSome(got)) yield* renewWhileHeld(store, got.value, leaseMillis)
    return got
  })

/**
 * Takes a slot of `key` for the rest of the current scope — renewed while
 * it lasts, released when it closes; when none came free in time, runs
 * `onFull(waitedMillis)` instead. `stop`, when given, ends the wait with its
 * failure (a pass that lost its lease, say); `onLost` runs if a renewal
 * finds the slot gone (the process paused past its lease).
 */
export const holdScoped = <E2, E3 = never, R3 = never>(
  key: string,
  o: HoldOptions,
  onFull: (waitedMillis: number) => Effect.Effect<never, E2>,
  stop?: Effect.Effect<never, E3, R3>,
  onLost: Effect.Effect<void> = Effect.void
): Effect.Effect<SlotLease, E2 | E3 | StoreError | InvalidInputError, RateLimitStore | Scope.Scope | R3> =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const start = yield* Clock.currentTimeMillis
    const release = (slot: SlotLease) =>
      Effect.addFinalizer(() => store.releaseSlot(slot).pipe(Effect.ignore, Effect.andThen(wakeHead(store, key))))
    const take = Effect.uninterruptibleMask((restore) => acquire(store, key, o, restore, release))
    const got = yield* (stop === undefined ? take : Effect.raceFirst(take, stop))
    if (Option.isNone(got)) return yield* onFull((yield* Clock.currentTimeMillis) - start)
    if (o.renewal !== "caller") yield* renewWhileHeld(store, got.value, o.leaseMillis, onLost)
    return got.value
  })

/**
 * Runs `effect` holding a slot of `key`; when none came free in time, runs
 * `onFull(waitedMillis)` instead.
 */
export const hold = <A, E, R, E2>(
  key: string,
  o: HoldOptions,
  effect: Effect.Effect<A, E, R>,
  onFull: (waitedMillis: number) => Effect.Effect<never, E2>
): Effect.Effect<A, E | E2 | StoreError | InvalidInputError, R | RateLimitStore> =>
  Effect.scoped(Effect.andThen(holdScoped(key, o, onFull), effect))

/** How long a call may wait for a slot: 0 (ask once) to Infinity (no deadline). */
const waitLength = Options.duration({ min: 0, max: Infinity })

/**
 * The options of a slot call, checked — the lease with the one lease parser
 * of the runtime (1 s to 24 h, default 30 s), the poll from 10 ms (default
 * 1 s), the wait from 0 to Infinity — or an `InvalidInputError` of
 * `operation` naming the field.
 */
export const holdOptions = (
  operation: string,
  options: {
    readonly holder: string
    readonly lease?: Duration.Input | undefined
    readonly timeout?: Duration.Input | undefined
    readonly pollInterval?: Duration.Input | undefined
  },
  max: { readonly field: string; readonly value: number },
  defaultTimeoutMillis: number
): Effect.Effect<HoldOptions, InvalidInputError> =>
  Effect.gen(function*() {
    return {
      max: yield* Options.argument(operation, max.field, max.value, Options.whole({ min: 1, max: Number.MAX_SAFE_INTEGER }), 0),
      holder: options.holder,
      leaseMillis: yield* Effect.mapError(Options.lease(options.lease), Options.asArgument(operation)),
      timeoutMillis: yield* Options.argument(operation, "timeout", options.timeout, waitLength, defaultTimeoutMillis),
      pollMillis: yield* Options.argument(operation, "pollInterval", options.pollInterval, Options.pollPeriod, 1_000)
    }
  })
