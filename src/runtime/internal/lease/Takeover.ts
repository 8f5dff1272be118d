/**
 * Crash takeover: a tree whose holder is provably gone is taken at once,
 * epoch + 1, instead of at its lease's expiry.
 *
 * At start the instance registers its liveness key (`instanceId#incarnation`,
 * see `InstanceLiveness.keyOfHolder`) with the stores' `InstanceLiveness`,
 * for its whole scope. When the stores have none, the lease store cannot
 * take a lease over, or the registration fails (a pooler in transaction
 * mode), the instance says once why and keeps lease expiry; readiness shows
 * the mode either way.
 *
 * In liveness mode:
 * - a watcher fiber waits for any other registered instance to die
 *   (`awaitDeath`: no Clock, no polling here), and a death wakes the sweep
 *   at once (`deaths`);
 * - the sweep treats a live lease of a dead holder as free (`heldByDead`) and
 *   recovers the tree; the lease holder, refused by `acquire`, asks
 *   `attempt`, which checks the holder is still dead and calls
 *   `LeaseStore.takeOver` (conditional on the dead holder and its epoch).
 *
 * Safety stays with the epoch fence: a holder taken for dead while alive
 * (its liveness connection cut) is refused every write and renewal under its
 * old epoch and stops with `LeaseLostError`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Option, type Scope } from "effect"
import type { InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import { InstanceLiveness, type InstanceLivenessShape, keyOfHolder, type Registration } from "../../../stores/InstanceLiveness.ts"
import type { Lease } from "../../../stores/Lease.ts"
import { LeaseStore } from "../../../stores/LeaseStore.ts"
import type { HealthComponent } from "../../Health.ts"
import type { InstanceShape } from "../Instance.ts"
import * as Signal from "../../../stores/internal/signal.ts"

/**
 * How this instance learns that another one died.
 *
 * @category models
 * @since 0.1.0
 */
export type Mode =
  | { readonly _tag: "Liveness"; readonly kind: string }
  | { readonly _tag: "LeaseExpiry"; readonly reason: string }

interface State {
  mode: Mode
  readonly ownKey: string
  liveness: InstanceLivenessShape | undefined
  /** This instance's own registration: not held while its signal is lost. */
  registration: Registration | undefined
  /** How many times this instance's own signal was lost: a lease held across a loss may have been taken. */
  losses: number
  /** Keys of other instances found dead (checked again before a takeover), with when (Clock) it was last seen. */
  readonly dead: Map<string, number>
  /** Wakes the sweep when an instance died. */
  readonly deaths: Signal.Signal
  /** Wakes the watcher when a key left `dead` (found alive again). */
  readonly changed: Signal.Signal
}

const states = new WeakMap<InstanceShape, State>()

/** A holder found dead this recently is taken for dead without asking again. */
const recheckAfterMillis = 1000

/**
 * Registers the instance's liveness for the current scope (the instance's)
 * and starts the watcher, or settles for lease expiry, saying why once.
 *
 * @category internal
 * @since 0.1.0
 */
export const start = (instance: InstanceShape): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state: State = {
      mode: { _tag: "LeaseExpiry", reason: "starting" },
      ownKey: `${instance.instanceId}#${instance.incarnation}`,
      liveness: undefined,
      registration: undefined,
      losses: 0,
      dead: new Map(),
      deaths: Signal.make(),
      changed: Signal.make()
    }
    states.set(instance, state)
    const fallBack = (reason: string): Effect.Effect<void> =>
      Effect.andThen(
        Effect.sync(() => {
          state.mode = { _tag: "LeaseExpiry", reason }
        }),
        Effect.logInfo(`crash takeover: a dead instance's trees move at their lease expiry (${Math.round(instance.config.leaseMillis / 1000)} s): ${reason}`)
      )
    const liveness = Context.getOption(instance.services, InstanceLiveness)
    if (Option.isNone(liveness)) return yield* fallBack("the stores provide no InstanceLiveness")
    const store = Context.get(instance.services as Context.Context<LeaseStore>, LeaseStore)
    if (store.takeOver === undefined) return yield* fallBack("the LeaseStore cannot take a lease over (it has no takeOver)")
    const context = yield* Effect.context<never>()
    const lost = () =>
      Effect.runForkWith(context)(Effect.logWarning(
        "crash takeover: this instance's liveness signal was lost (its connection cut?): other instances may take its trees; its passes stop at their next check, and it takes the signal again"
      ).pipe(Effect.annotateLogs({ instanceId: instance.instanceId })))
    const registered = yield* Effect.exit(liveness.value.register(state.ownKey, () => {
      state.losses++
      lost()
    }))
    if (registered._tag === "Failure") {
      const error = registered.cause.reasons.find((r) => r._tag === "Fail")
      return yield* fallBack(`registering this instance's liveness failed: ${error?._tag === "Fail" ? (error.error as StoreError).message : "interrupted"}`)
    }
    state.liveness = liveness.value
    state.registration = registered.value
    state.mode = { _tag: "Liveness", kind: liveness.value.kind }
    yield* Effect.logInfo(`crash takeover: a dead instance's trees move at once (liveness: ${liveness.value.kind})`)
    yield* Effect.forkScoped(watch(state, liveness.value))
  }).pipe(Effect.annotateLogs({ instanceId: instance.instanceId }))

/** Waits for the next instance to die (`awaitDeath`); a new dead key goes to `dead` and wakes the sweep. */
const watch = (state: State, liveness: InstanceLivenessShape) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    let failing = false
    while (true) {
      // Its own key too: while this instance's signal is lost it reads as dead, and is no news to wait for.
      const known = [state.ownKey, ...state.dead.keys()]
      const round = Effect.raceFirst(
        Effect.map(liveness.awaitDeath(known), Option.some),
        Effect.as(state.changed.next, Option.none<ReadonlyArray<string>>())
      ).pipe(Effect.flatMap(Option.match({
        onNone: () => Effect.void,
        onSome: (dead) => {
          const fresh = dead.filter((key) => key !== state.ownKey && !state.dead.has(key))
          const at = clock.currentTimeMillisUnsafe()
          for (const key of fresh) state.dead.set(key, at)
          if (fresh.length === 0) return Effect.void
          state.deaths.notify()
          return Effect.logInfo(`crash takeover: instance ${fresh.join(", ")} is gone; its trees are taken without waiting for their leases`)
        }
      })))
      yield* round.pipe(
        Effect.tap(() => Effect.sync(() => (failing = false))),
        Effect.catch((e: StoreError) =>
          Effect.andThen(
            failing ? Effect.void : Effect.logWarning(`crash takeover: watching other instances failed (lease expiry still applies); retrying: ${e.message}`),
            Effect.andThen(Effect.sync(() => (failing = true)), Effect.sleep(Duration.seconds(1)))
          )
        )
      )
    }
  })

/**
 * For one lease holder about to acquire (undefined without liveness): true
 * while this instance's own signal was not lost since — once lost, others may
 * have taken the lease, even after the signal is back. See `LeaseHolder`'s `stillLive`.
 *
 * @category internal
 * @since 0.1.0
 */
export const selfLive = (instance: InstanceShape): (() => boolean) | undefined => {
  const state = states.get(instance)
  const registration = state?.registration
  if (state === undefined || registration === undefined) return undefined
  const losses = state.losses
  return () => state.losses === losses && registration.held()
}

/**
 * The mode in force, or undefined before `start`.
 *
 * @category internal
 * @since 0.1.0
 */
export const modeOf = (instance: InstanceShape): Mode | undefined => states.get(instance)?.mode

/**
 * True when `lease` is held by another instance known to be gone: the sweep
 * may take the tree now, live as the lease is.
 *
 * @category internal
 * @since 0.1.0
 */
export const heldByDead = (instance: InstanceShape, lease: Lease): boolean => {
  const state = states.get(instance)
  if (state === undefined || state.dead.size === 0) return false
  const key = keyOfHolder(lease.holder)
  return key !== state.ownKey && state.dead.has(key)
}

/**
 * Resolves when another instance was found dead (never without liveness).
 *
 * @category internal
 * @since 0.1.0
 */
export const deaths = (instance: InstanceShape): Effect.Effect<void> => {
  const state = states.get(instance)
  return state === undefined || state.mode._tag !== "Liveness" ? Effect.never : state.deaths.next
}

/**
 * What the lease holder calls when `acquire` was refused: takes the tree's
 * lease over when its holder is known dead and still is (asked again now),
 * else `None`. No I/O while no holder is known dead. Undefined without liveness.
 *
 * @category internal
 * @since 0.1.0
 */
export const attempt = (
  instance: InstanceShape,
  tenantId: string,
  rootExecutionId: string,
  holder: string,
  ttlMillis: number
): ((readAt: number) => Effect.Effect<Option.Option<Lease>, StoreError | InvalidInputError, LeaseStore>) | undefined => {
  const state = states.get(instance)
  if (state === undefined || state.mode._tag !== "Liveness" || state.liveness === undefined) return undefined
  const liveness = state.liveness
  return (readAt) =>
    Effect.gen(function*() {
      if (state.dead.size === 0) return Option.none()
      const store = yield* LeaseStore
      const current = yield* store.get(tenantId, rootExecutionId)
      if (Option.isNone(current) || store.takeOver === undefined) return Option.none()
      const key = keyOfHolder(current.value.holder)
      const seenDead = state.dead.get(key)
      if (seenDead === undefined) return Option.none()
      // Asked again unless it was found dead within the last second (a hundred trees of one dead instance cost
      // one check, not a hundred): a holder alive again after that is refused by the fence, as any.
      if (readAt - seenDead >= recheckAfterMillis && (yield* liveness.deadAmong([key])).length === 0) {
        // Alive again (its signal taken back): watched again, not taken.
        state.dead.delete(key)
        state.changed.notify()
        return Option.none()
      }
      if (readAt - seenDead >= recheckAfterMillis) state.dead.set(key, readAt)
      const taken = yield* store.takeOver(current.value, holder, ttlMillis, readAt)
      if (Option.isSome(taken)) {
        yield* Effect.logInfo(
          `crash takeover: took execution ${rootExecutionId} from ${current.value.holder} (gone) before its lease expired, epoch ${current.value.epoch} → ${taken.value.epoch}`
        ).pipe(Effect.annotateLogs({ executionId: rootExecutionId, tenantId }))
      }
      return taken
    })
}

/**
 * The readiness component saying which takeover mode is in force.
 *
 * @category internal
 * @since 0.1.0
 */
export const readiness = (instance: InstanceShape): ReadonlyArray<HealthComponent> => {
  const state = states.get(instance)
  const mode = state?.mode
  if (mode === undefined) return []
  return [
    mode._tag === "Liveness" && state?.registration?.held() === false
      ? {
        name: "crash-takeover",
        status: "Degraded",
        message: `liveness (${mode.kind}) lost: other instances may take this instance's trees; taking the signal again`
      }
      : mode._tag === "Liveness"
      ? { name: "crash-takeover", status: "Healthy", message: `liveness (${mode.kind}): a dead instance's trees move at once` }
      : {
        name: "crash-takeover",
        status: "Healthy",
        message: `lease expiry: a dead instance's trees move when their leases expire (${Math.round(instance.config.leaseMillis / 1000)} s), because ${mode.reason}`
      }
  ]
}
