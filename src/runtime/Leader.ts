/**
 * A leader lease: `Leader.run(name, program)` runs `program` on exactly one
 * instance of the fleet at a time — work that must happen once per fleet
 * (retention deletes, periodic reports) rather than once per instance.
 *
 * Every instance calls `Leader.run` with the same name; they campaign for
 * one named lease in the `LeaseStore` (tenant `@baton`, key
 * `@baton/leader/<name>`), fenced by its epoch like a tree's lease. The
 * instance that holds it runs the program; its lease is renewed on the
 * Clock every `renewEvery` and the program is interrupted at
 * `confirmedUntil` (the clock read before the last confirmed renewal + the
 * lease length) when renewals stop — before any other instance can take the
 * lease. When the leader's scope ends (graceful close, interruption) the lease
 * is released at once and the release wakes the other campaigners
 * (`LeaseWakeups`, and Postgres NOTIFY across processes), so one of them
 * takes over within one wake-up instead of a lease period. After a crash, a
 * campaigner takes over when the lease expires.
 *
 * Over a partitioned store bundle (`StorePartitions`, which `ShardedStores`
 * provides: one partition per shard), a campaign inside
 * `StorePartitions.within(name)` keeps its lease in that partition: the
 * runtime's own leaders (retention, the schedules' firing) campaign once per
 * partition that way, so each shard has its own leader. A campaign outside
 * `within` keeps its lease on the bundle's home partition.
 *
 * A program that acts on shared state checks `Leadership.check` before each
 * action: it fails with `LeaseLostError` once the instance may no longer
 * act as leader (e.g. a process thawed after a freeze, before its
 * interruption ran).
 *
 * @since 0.1.0
 */
import { Clock, Context, Deferred, Duration, Effect, type Exit, Fiber, Option } from "effect"
import { InvalidInputError, type LeaseLostError, type StoreError } from "../stores/Errors.ts"
import { LeaseStore } from "../stores/LeaseStore.ts"
import { LeaseWakeups } from "../stores/LeaseWakeups.ts"
import * as Options from "../stores/internal/options.ts"
import * as LeaseHolder from "./internal/lease/LeaseHolder.ts"

/**
 * The tenant every leader lease is kept under (reserved for the runtime).
 *
 * @category constants
 * @since 0.1.0
 */
export const leaderTenant = "@baton"

/**
 * The lease key of the leader named `name`.
 *
 * @category constants
 * @since 0.1.0
 */
export const leaseKey = (name: string) => `@baton/leader/${name}`

/**
 * How a campaigner takes and keeps the leader lease.
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaderOptions {
  /** Who campaigns: unique per call of `run` (default: a random id). Two calls with one holder id are one campaigner. */
  readonly holder?: string | undefined
  /** Lease length: how long a crashed leader blocks the others. 1 second to 24 hours; default 30 seconds. */
  readonly lease?: Duration.Input | undefined
  /** How often the leader renews: at least 100 ms and shorter than the lease. Default a third of the lease. */
  readonly renewEvery?: Duration.Input | undefined
}

/**
 * What the program learns of its leadership (provided to it as a service).
 *
 * @category models
 * @since 0.1.0
 */
export interface LeadershipShape {
  readonly name: string
  readonly holder: string
  /** The lease's epoch: grows with every new leader, so writes can be fenced by it. */
  readonly epoch: number
  /** Until when this instance may act as leader without a new confirmation. */
  readonly confirmedUntil: () => number
  /** Aborted when leadership ends. */
  readonly signal: AbortSignal
  /** Fails with `LeaseLostError` once this instance may no longer act as leader. */
  readonly check: Effect.Effect<void, LeaseLostError>
}

/**
 * The current leadership, inside a program run by `Leader.run`.
 *
 * @category services
 * @since 0.1.0
 */
export class Leadership extends Context.Service<Leadership, LeadershipShape>()("baton/Leadership") {}

/** The checked lease and renewal lengths (the lease option every lease of the runtime takes); bad options are a typed error naming the field. */
const timingOf = (options: LeaderOptions | undefined) =>
  Effect.mapError(Options.leaseTiming(options?.lease, options?.renewEvery), Options.asArgument("Leader.run"))

const invalid = (field: string, reason: string) => new InvalidInputError({ operation: "Leader.run", field, reason })

type Term<A, E> =
  | { readonly _tag: "Done"; readonly exit: Exit.Exit<A, E> }
  | { readonly _tag: "NotLeader"; readonly wait: number }
  | { readonly _tag: "Lost" }

/** One term: take the lease and run the program until it ends or the lease is lost; or say how long to wait. */
const term = <A, E, R>(
  name: string,
  holder: string,
  timing: { readonly leaseMillis: number; readonly renewMillis: number },
  program: Effect.Effect<A, E, R>
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = leaseKey(name)
    const held = yield* LeaseHolder.acquire({ tenantId: leaderTenant, rootExecutionId: root, holder, ...timing })
    if (Option.isNone(held)) {
      const current = yield* (yield* LeaseStore).get(leaderTenant, root)
      const now = yield* Clock.currentTimeMillis
      const wait = Option.isNone(current) ? 0 : Math.min(timing.leaseMillis, current.value.expiresAt - now)
      return { _tag: "NotLeader", wait: Math.max(0, wait) } satisfies Term<A, E>
    }
    const h = held.value
    const leadership: LeadershipShape = {
      name,
      holder,
      epoch: h.lease.epoch,
      confirmedUntil: h.confirmedUntil,
      signal: h.signal,
      check: Effect.suspend(() => {
        const refused = h.fence.refusal()
        return refused === undefined ? Effect.void : Effect.fail(refused)
      })
    }
    const ran = program.pipe(Effect.provideService(Leadership, leadership), Effect.exit)
    const exit = yield* Effect.raceFirst(ran, Effect.as(Effect.exit(Deferred.await(h.lost)), undefined))
    // Whatever the program answered after leadership ended (a failed check, an interruption) is a lost term.
    if (exit === undefined || h.signal.aborted) return { _tag: "Lost" } satisfies Term<A, E>
    return { _tag: "Done", exit } satisfies Term<A, E>
  }))

/**
 * Runs `program` on exactly one instance of the fleet at a time (see the
 * module). Campaigns until this instance leads, runs the program while it
 * holds the lease, and campaigns again when the lease is lost. Answers what
 * the program answers once it ends on its own (the lease is then released);
 * a program that loops forever makes a campaign that runs until interrupted.
 * Store errors while campaigning are logged and retried every `renewEvery`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const run = <A, E, R>(
  name: string,
  program: Effect.Effect<A, E, R>,
  options?: LeaderOptions
): Effect.Effect<A, E | InvalidInputError, Exclude<R, Leadership> | LeaseStore> =>
  Effect.gen(function*() {
    if (typeof name !== "string" || name.length === 0) return yield* Effect.fail(invalid("name", "must be a non-empty string"))
    const timing = yield* timingOf(options)
    const holder = options?.holder ?? `leader_${crypto.randomUUID()}`
    const wakeups = yield* LeaseWakeups
    while (true) {
      // Listen before trying: a release between the try and the wait wakes the wait at once.
      const released = yield* Effect.forkChild(wakeups.next(leaderTenant, leaseKey(name)), { startImmediately: true })
      const outcome = yield* term(name, holder, timing, program as Effect.Effect<A, E, Exclude<R, Leadership>>).pipe(
        Effect.catchTag("StoreError", (e: StoreError) =>
          Effect.as(
            Effect.logWarning(`leader "${name}": the lease store failed; trying again in ${timing.renewMillis} ms`, e.message),
            { _tag: "NotLeader", wait: timing.renewMillis } as Term<A, E>
          ))
      )
      if (outcome._tag === "Done") {
        yield* Fiber.interrupt(released)
        return yield* outcome.exit
      }
      const wait = outcome._tag === "Lost" ? 0 : outcome.wait
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(Math.max(1, wait))), Fiber.join(released)).pipe(
        Effect.ensuring(Fiber.interrupt(released))
      )
    }
  }).pipe(Effect.annotateLogs({ leader: name })) as never
