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
 * Over a bundle whose partitions fail apart and that says which partition a
 * tenant's calls go to (`StorePartitions.partitionOf`: `ShardedStores`), all
 * of this is done once per partition, inside its `within`: the instance
 * registers on each partition's liveness, watches each, and a tree's
 * takeover and its holder's own signal are those of the tree's partition, so
 * a partition that is down costs the signals of its own trees only. A
 * partition whose registration fails for a reason that can pass (its
 * database down at start) keeps lease expiry and registers again on the
 * Clock until it succeeds.
 *
 * Safety stays with the epoch fence: a holder taken for dead while alive
 * (its liveness connection cut) is refused every write and renewal under its
 * old epoch and stops with `LeaseLostError`.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Option, type Scope } from "effect"
import { type InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import { InstanceLiveness, type InstanceLivenessShape, keyOfHolder, type Registration } from "../../../stores/InstanceLiveness.ts"
import type { Lease } from "../../../stores/Lease.ts"
import { LeaseStore } from "../../../stores/LeaseStore.ts"
import { StorePartitions } from "../../../stores/StorePartitions.ts"
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
  /** The partition this state is of (undefined: the one state of a bundle without partitions). */
  readonly partition: string | undefined
  /** Runs a liveness call confined to the partition (`StorePartitions.within`). */
  readonly confine: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
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

/** An instance's takeover states: one, or one per partition, and which one a tenant's trees are under. */
interface Takeovers {
  readonly states: ReadonlyArray<State>
  readonly of: (tenantId: string) => State | undefined
}

const takeovers = new WeakMap<InstanceShape, Takeovers>()

/** A holder found dead this recently is taken for dead without asking again. */
const recheckAfterMillis = 1000

/** Between two registrations of a partition whose first one failed for a reason that can pass. */
const registerAgainAfter = Duration.seconds(30)

/**
 * Registers the instance's liveness for the current scope (the instance's)
 * and starts the watcher, or settles for lease expiry, saying why once: once
 * per partition over a bundle that routes tenants to partitions, else once.
 *
 * @category internal
 * @since 0.1.0
 */
export const start = (instance: InstanceShape): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const partitions = Option.getOrUndefined(Context.getOption(instance.services, StorePartitions))
    const partitionOf = partitions?.partitionOf
    if (partitions === undefined || partitionOf === undefined) {
      const state = yield* startIn(instance, undefined, (effect) => effect)
      takeovers.set(instance, { states: [state], of: () => state })
      return
    }
    const states = yield* Effect.forEach(
      partitions.names,
      (name) => startIn(instance, name, partitions.within(name)).pipe(Effect.annotateLogs({ partition: name })),
      { concurrency: "unbounded" }
    )
    const byName = new Map(partitions.names.map((name, i) => [name, states[i]!]))
    takeovers.set(instance, {
      states,
      of: (tenantId) => {
        const name = partitionOf(tenantId)
        return name === undefined ? undefined : byName.get(name)
      }
    })
  }).pipe(Effect.annotateLogs({ instanceId: instance.instanceId }))

/** The takeover state of one partition (or of the whole bundle): registered, watching, or on lease expiry. */
const startIn = (
  instance: InstanceShape,
  partition: string | undefined,
  confine: State["confine"]
): Effect.Effect<State, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state: State = {
      partition,
      confine,
      mode: { _tag: "LeaseExpiry", reason: "starting" },
      ownKey: `${instance.instanceId}#${instance.incarnation}`,
      liveness: undefined,
      registration: undefined,
      losses: 0,
      dead: new Map(),
      deaths: Signal.make(),
      changed: Signal.make()
    }
    const fallBack = (reason: string): Effect.Effect<void> =>
      Effect.andThen(
        Effect.sync(() => {
          state.mode = { _tag: "LeaseExpiry", reason }
        }),
        Effect.logInfo(`crash takeover: a dead instance's trees move at their lease expiry (${Math.round(instance.config.leaseMillis / 1000)} s): ${reason}`)
      )
    const liveness = Context.getOption(instance.services, InstanceLiveness)
    if (Option.isNone(liveness)) return yield* Effect.as(fallBack("the stores provide no InstanceLiveness"), state)
    const store = Context.get(instance.services as Context.Context<LeaseStore>, LeaseStore)
    if (store.takeOver === undefined) return yield* Effect.as(fallBack("the LeaseStore cannot take a lease over (it has no takeOver)"), state)
    const failed = yield* register(state, liveness.value)
    if (failed === undefined) return state
    // Over partitions, a partition down at start is registered once it is back.
    const again = partition !== undefined && failed.isRetryable
    yield* fallBack(`registering this instance's liveness failed${again ? ` (tried again every ${Duration.toSeconds(registerAgainAfter)} s)` : ""}: ${failed.message}`)
    if (again) yield* Effect.forkScoped(registerAgain(state, liveness.value))
    return state
  })

/** Registers `state`'s key and starts watching; answers the failure, if it failed. */
const register = (state: State, liveness: InstanceLivenessShape): Effect.Effect<StoreError | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const lost = () =>
      Effect.runForkWith(context)(Effect.logWarning(
        "crash takeover: this instance's liveness signal was lost (its connection cut?): other instances may take its trees; its passes stop at their next check, and it takes the signal again"
      ))
    const registered = yield* Effect.exit(state.confine(liveness.register(state.ownKey, () => {
      state.losses++
      lost()
    })))
    if (registered._tag === "Failure") {
      const error = registered.cause.reasons.find((r) => r._tag === "Fail")
      return error?._tag === "Fail" ? error.error as StoreError : new StoreError({ store: "InstanceLiveness", operation: "register", kind: "Other", reason: "interrupted" })
    }
    state.liveness = liveness
    state.registration = registered.value
    const kind = registered.value.kind ?? liveness.kind
    state.mode = { _tag: "Liveness", kind }
    yield* Effect.logInfo(`crash takeover: a dead instance's trees move at once (liveness: ${kind})`)
    yield* Effect.forkScoped(state.confine(watch(state, liveness)))
    return undefined
  })

/** Registers again on the Clock until it succeeds, or fails for a reason that does not pass. */
const registerAgain = (state: State, liveness: InstanceLivenessShape): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep(registerAgainAfter)
      const failed = yield* register(state, liveness)
      if (failed === undefined || !failed.isRetryable) return
    }
  })

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
 * For one lease holder of a tree of `tenantId` about to acquire (undefined
 * without liveness): true while this instance's own signal (in the tree's
 * partition) was not lost since — once lost, others may have taken the
 * lease, even after the signal is back. See `LeaseHolder`'s `stillLive`.
 *
 * @category internal
 * @since 0.1.0
 */
export const selfLive = (instance: InstanceShape, tenantId: string): (() => boolean) | undefined => {
  const state = takeovers.get(instance)?.of(tenantId)
  const registration = state?.registration
  if (state === undefined || registration === undefined) return undefined
  const losses = state.losses
  return () => state.losses === losses && registration.held()
}

/**
 * True when `lease` is held by another instance known to be gone (in the
 * lease's partition): the sweep may take the tree now, live as the lease is.
 *
 * @category internal
 * @since 0.1.0
 */
export const heldByDead = (instance: InstanceShape, lease: Lease): boolean => {
  const state = takeovers.get(instance)?.of(lease.tenantId)
  if (state === undefined || state.dead.size === 0) return false
  const key = keyOfHolder(lease.holder)
  return key !== state.ownKey && state.dead.has(key)
}

/**
 * Resolves when another instance was found dead, in any partition (never without liveness).
 *
 * @category internal
 * @since 0.1.0
 */
export const deaths = (instance: InstanceShape): Effect.Effect<void> => {
  const watching = (takeovers.get(instance)?.states ?? []).filter((state) => state.mode._tag === "Liveness")
  // A partition registered later (registerAgain) is in Liveness mode by the next wait.
  return watching.length === 0 ? Effect.never : Effect.raceAll(watching.map((state) => state.deaths.next))
}

/**
 * What the lease holder calls when `acquire` was refused: takes the tree's
 * lease over when its holder is known dead (in the tree's partition) and
 * still is (asked again now), else `None`. No I/O while no holder is known
 * dead. Undefined without liveness.
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
  const state = takeovers.get(instance)?.of(tenantId)
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
      if (readAt - seenDead >= recheckAfterMillis && (yield* state.confine(liveness.deadAmong([key]))).length === 0) {
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

/** One state's readiness: its mode, and whether its own signal is held. */
const readinessOf = (instance: InstanceShape, state: State): Pick<HealthComponent, "status" | "message"> => {
  const mode = state.mode
  if (mode._tag === "Liveness" && state.registration?.held() === false) {
    return { status: "Degraded", message: `liveness (${mode.kind}) lost: other instances may take this instance's trees; taking the signal again` }
  }
  if (mode._tag === "Liveness") return { status: "Healthy", message: `liveness (${mode.kind}): a dead instance's trees move at once` }
  return {
    status: "Healthy",
    message: `lease expiry: a dead instance's trees move when their leases expire (${Math.round(instance.config.leaseMillis / 1000)} s), because ${mode.reason}`
  }
}

/**
 * The readiness component saying which takeover mode is in force (over
 * partitions, each partition's, Degraded while any of its own signals is lost).
 *
 * @category internal
 * @since 0.1.0
 */
export const readiness = (instance: InstanceShape): ReadonlyArray<HealthComponent> => {
  const states = takeovers.get(instance)?.states ?? []
  if (states.length === 0) return []
  const parts = states.map((state) => ({ partition: state.partition, ...readinessOf(instance, state) }))
  if (parts.length === 1 && parts[0]!.partition === undefined) return [{ name: "crash-takeover", status: parts[0]!.status, message: parts[0]!.message }]
  return [{
    name: "crash-takeover",
    status: parts.some((part) => part.status === "Degraded") ? "Degraded" : "Healthy",
    message: parts.map((part) => `partition ${part.partition}: ${part.message}`).join("; ")
  }]
}
