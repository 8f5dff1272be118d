/**
 * How one call reaches the shards: by its tenant to one shard, or to every
 * shard (a fan-out), and how a shard's failure comes back.
 *
 * - A call on one shard fails as that shard fails: a down shard answers a
 *   `StoreError` of its build's kind (`Connection` when its server cannot be
 *   reached) naming the shard and the tenant; a `StoreError` of a built
 *   shard comes back with the shard's name in its description.
 * - A fan-out answers every shard's outcome; `partial` keeps the answers of
 *   the shards that answered and logs a warning for each that failed with a
 *   `StoreError` (a sweep goes on over the other shards; it finds the down
 *   shard's work on a later pass): at once, then at most once a minute on
 *   the Clock while that shard keeps failing, with the count since, and once
 *   more when it answers again. It fails only when every shard failed;
 *   `complete` fails with the first shard's failure.
 * - Any other failure (`InvalidInputError`: the caller's mistake, the same
 *   on every shard) fails the call.
 * - Inside `within(index)` (the store partition the runtime's leader of one
 *   shard runs in), a fan-out reaches that shard alone, and the reserved
 *   tenant's calls (the leader leases) go to it instead of the home shard.
 */
import { Context, Effect, Exit, Option } from "effect"
import { StoreError } from "../../../src/stores/Errors.ts"
import type { Rule } from "./rule.ts"
import type { Down, Shard } from "./shard.ts"
import * as Warnings from "./warnings.ts"

/**
 * The tenant the runtime keeps its own fleet-wide leases under (the leader's).
 * Its shard is the home shard (the one the rule answers for it, else the
 * first shard): where what has no tenant goes.
 */
export const reservedTenant = "@baton"

/** The shard the current fiber is confined to, of which router (see `within`). */
const Confined = Context.Reference<{ readonly router: object; readonly index: number } | undefined>("baton/sharded/Confined", {
  defaultValue: () => undefined
})

/** The shards and the rule, with the calls over them. */
export interface Router<S> {
  readonly shards: ReadonlyArray<Shard<S>>
  /** The shards a fan-out reaches here: the one of `within`, else every shard. */
  readonly reached: Effect.Effect<ReadonlyArray<Shard<S>>>
  /** `effect` confined to shard `index`: its fan-outs reach that shard alone, and the reserved tenant goes there. */
  readonly within: (index: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The shard of the reserved tenant: what carries no tenant (a provider's rate-limit keys) is kept there. */
  readonly home: Shard<S>
  /** The shard of a call that names no tenant and reaches one shard (instance liveness): the one of `within`, else home. */
  readonly fleetShard: Effect.Effect<Shard<S>>
  /** Runs `f` on the stores of `tenantId`'s shard. */
  readonly onTenant: <A, E>(store: string, operation: string, tenantId: unknown, f: (stores: Context.Context<S>) => Effect.Effect<A, E>) => Effect.Effect<A, E | StoreError>
  /** Runs `f` on the stores of one shard (`at: "now"`: without waiting for a down shard's build, see `Shard.now`). */
  readonly onShard: <A, E>(
    store: string,
    operation: string,
    shard: Shard<S>,
    f: (stores: Context.Context<S>) => Effect.Effect<A, E>,
    tenantId?: string,
    at?: "built" | "now"
  ) => Effect.Effect<A, E | StoreError>
  /** The shard of `tenantId` (its index), or the `StoreError` saying the rule gave none. */
  readonly shardOf: (store: string, operation: string, tenantId: unknown) => Effect.Effect<Shard<S>, StoreError>
  /**
   * Says that `store.operation` went on without `shard` (`how`: "answers", "goes on"), which failed
   * with `error`: at once the first time, then at most once a minute (`Warnings.interval`) on the Clock
   * while it keeps failing, with how often it failed since.
   */
  readonly warnWithout: (store: string, operation: string, how: string, shard: Shard<S>, error: StoreError) => Effect.Effect<void>
  /** Says that `store.operation` reaches `shard` again, once, when it had been warned about. */
  readonly reachedAgain: (store: string, operation: string, shard: Shard<S>) => Effect.Effect<void>
  /** Runs `f` on every shard at once; answers the shards' answers (see the module's doc for `mode`). */
  readonly fanOut: <A, E>(
    store: string,
    operation: string,
    mode: "partial" | "complete",
    f: (stores: Context.Context<S>, shard: Shard<S>) => Effect.Effect<A, E>
  ) => Effect.Effect<ReadonlyArray<A>, E | StoreError>
}

const downError = (store: string, operation: string, down: Down, tenantId: string | undefined) =>
  new StoreError({
    store,
    operation,
    kind: down.kind,
    reason: `shard "${down.shard}"${tenantId === undefined ? "" : ` (tenant ${tenantId})`} is unavailable: its stores could not be built (${down.description}); ` +
      "only the tenants of this shard are affected, and the shard is built again on a call once the router's retryAfter has passed"
  })

/** A built shard's `StoreError`, with the shard named. */
const onNamedShard = (shard: string) => <E>(e: E): E =>
  e instanceof StoreError
    ? new StoreError({
      store: e.store,
      operation: e.operation,
      kind: e.kind,
      reason: `on shard "${shard}": ${e.reason.description}`,
      cause: e.cause,
      recorded: e.recorded
    }) as E
    : e

export const make = <S>(shards: ReadonlyArray<Shard<S>>, rule: Rule): Router<S> => {
  const home = shards[indexOf(rule, reservedTenant) ?? 0]!
  const token = {}
  const confined = Effect.map(Effect.service(Confined), (c) => (c !== undefined && c.router === token ? shards[c.index] : undefined))
  const reached = Effect.map(confined, (shard) => (shard === undefined ? shards : [shard]))
  const shardOf = (store: string, operation: string, tenantId: unknown): Effect.Effect<Shard<S>, StoreError> => {
    // An id that is no text is the shard's to refuse (InvalidInputError): it goes home.
    if (typeof tenantId !== "string" || tenantId.length === 0) return Effect.succeed(home)
    // The runtime's own tenant is home, whatever a rule function answers for it; inside `within`, the confined shard.
    if (tenantId === reservedTenant) return Effect.map(confined, (shard) => shard ?? home)
    const routed = rule.route(tenantId)
    return routed._tag === "Shard"
      ? Effect.succeed(shards[routed.index]!)
      : Effect.fail(new StoreError({ store, operation, kind: "Config", reason: routed.reason }))
  }
  const onShard = <A, E>(
    store: string,
    operation: string,
    shard: Shard<S>,
    f: (stores: Context.Context<S>) => Effect.Effect<A, E>,
    tenantId?: string,
    at: "built" | "now" = "built"
  ) =>
    Effect.flatMap(
      Effect.mapError(at === "now" ? shard.now : shard.context, (down) => downError(store, operation, down, tenantId)),
      (stores) => Effect.mapError(f(stores), onNamedShard(shard.name))
    )
  // Per operation and shard: at once, then at most once a minute while that shard keeps failing it.
  const warnings = Warnings.make()
  const keyOf = (store: string, operation: string, shard: Shard<S>) => `${store}.${operation}\u0000${shard.name}`
  const warnWithout = (store: string, operation: string, how: string, shard: Shard<S>, error: StoreError) =>
    warnings.holds(keyOf(store, operation, shard), (meanwhile) =>
      `ShardedStores: ${store}.${operation} ${how} without shard "${shard.name}", which failed: ${error.message}${meanwhile}; ` +
      "said again at most once a minute while it fails")
  const reachedAgain = (store: string, operation: string, shard: Shard<S>) =>
    warnings.ended(keyOf(store, operation, shard), (meanwhile) => `ShardedStores: ${store}.${operation} reaches shard "${shard.name}" again${meanwhile}`)
  return {
    shards,
    reached,
    warnWithout,
    reachedAgain,
    within: (index) => (effect) => Effect.provideService(effect, Confined, { router: token, index }),
    home,
    fleetShard: Effect.map(confined, (shard) => shard ?? home),
    shardOf,
    onShard,
    onTenant: (store, operation, tenantId, f) =>
      Effect.flatMap(shardOf(store, operation, tenantId), (shard) => onShard(store, operation, shard, f, typeof tenantId === "string" ? tenantId : undefined)),
    fanOut: <A, E>(store: string, operation: string, mode: "partial" | "complete", f: (stores: Context.Context<S>, shard: Shard<S>) => Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const among = yield* reached
        const exits = yield* Effect.forEach(
          among,
          (shard) => Effect.exit(onShard(store, operation, shard, (stores) => f(stores, shard), undefined, "now")),
          { concurrency: "unbounded" }
        )
        const answers: Array<A> = []
        let storeFailure: StoreError | undefined
        for (const [i, exit] of exits.entries()) {
          if (Exit.isSuccess(exit)) {
            answers.push(exit.value)
            yield* reachedAgain(store, operation, among[i]!)
            continue
          }
          const error = Exit.findErrorOption(exit)
          if (Option.isNone(error) || !(error.value instanceof StoreError)) return yield* (exit as Exit.Exit<never, E | StoreError>)
          if (mode === "complete") return yield* Effect.fail(error.value)
          storeFailure ??= error.value
          yield* warnWithout(store, operation, "answers", among[i]!, error.value)
        }
        if (answers.length === 0 && storeFailure !== undefined) return yield* Effect.fail(storeFailure)
        return answers
      })
  }
}

const indexOf = (rule: Rule, tenantId: string): number | undefined => {
  const routed = rule.route(tenantId)
  return routed._tag === "Shard" ? routed.index : undefined
}
