/**
 * Tenants over several store bundles (databases, servers): `layer({ shards,
 * route })` maps each tenant to one of N bundles by a rule you give and
 * provides every store contract by routing each call to that tenant's
 * bundle. Any bundle Layer is a shard (`PgStores.layer({ url })`,
 * `SqliteStores.layer`, `MemoryStores.layer`); give every shard the same
 * kind of bundle.
 *
 * ```ts
 * const stores = ShardedStores.layer({
 *   shards: [
 *     { name: "a", layer: PgStores.layer({ url: "postgres://db-a/baton" }) },
 *     { name: "b", layer: PgStores.layer({ url: "postgres://db-b/baton" }) }
 *   ],
 *   route: { tenants: { acme: "b" }, default: "a" } // or (tenantId) => "a" | "b"
 * })
 * Baton.layer(config).pipe(Layer.provide(stores))
 * ```
 *
 * **The rule per call.** Every call that names a tenant (its `tenantId`,
 * its lease's, its record's, its key's) goes to that tenant's shard; so do
 * the saver's calls (by the tenant in `config.configurable`). The calls that
 * name none:
 *
 * | call | how it runs |
 * | --- | --- |
 * | `RecordStore.findByStatus`, `PauseStore.findResolvedRoots`, `TreeStore.findRootsWith`, checkpoint `lifecycle.listThreads` (recovery scans, fleet-wide lists) | on every shard at once, each from the same cursor; the first `limit` of the merged pages in (tenant, id) order |
 * | `ScheduleStore.due` | on every shard at once; the first `limit` in (next fire, tenant, schedule) order |
 * | `DebounceStore.due` | on every shard at once; the first `limit`: the open windows earliest first, then the closed ones |
 * | `ConcurrencyKeyStore.listAdmitted` | on every shard at once, from the same cursor; the first `limit` in (tenant, execution) order |
 * | `TimerStore.nextWake`, `ScheduleStore.nextDue`, `DebounceStore.nextDue` | on every shard at once; the earliest |
 * | `ChildQueueStore.claim` | every shard claims its first child; the first in the contract's order (deepest, longest waiting) is answered, the others are handed back to their queues at once |
 * | `TimerStore.claimDue` | shard after shard, each given what is left of `limit`; each call starts at the next shard, so no shard's timers wait behind another's (earliest first within a shard, not across shards: a claimed timer's answer carries its claim's expiry, not the due time it was taken at, so pages cannot be merged by due time) |
 * | `PauseStore.deleteSettledBefore` | on every shard at once; the sum |
 * | `ExecutionHistoryStore.deleteEndedBefore`, `EventStore.deleteBefore`, `RequestStore.deleteExpired` (retention) | shard after shard, each given what is left of `limit`, so a call deletes at most `limit` in all |
 * | `LeaseStore.getMany` | each root on its tenant's shard (one call per shard); fails if one of them fails |
 * | every `ping` | on every shard; fails if one fails (the health check is told the truth) |
 * | the saver's `deleteThread(threadId)` | on every shard; fails if one fails |
 * | `RateLimitStore`, a key that names its tenant (`RateLimitStore.tenantOfKey`: a tenant's quota permits, a tree's cap on its children) | on that tenant's shard |
 * | `RateLimitStore`, every other key (a provider's slots, windows, pauses: the fleet's) | on the home shard |
 * | `InstanceLiveness` (when a shard's bundle provides one) | on every shard: the runtime registers, watches and checks each instance's signal once per shard, inside `StorePartitions.within` (outside it, the home shard's) |
 * | `StoreProbe` (when the home bundle provides it) | on the home shard |
 * | the runtime's leader leases (tenant `@baton`: retention, the schedules' firing) | one per shard, each in its shard: the runtime runs its leader work once per shard (`StorePartitions`), confined to it |
 * | any other lease of tenant `@baton` (`Leader.run` of your own) | on the home shard: the shard the rule gives the tenant `@baton`, else the first shard |
 * | `LeaseWakeups` / `EventWakeups` | a release or append on its tenant's shard; a wait for any release on every shard at once; a release of tenant `@baton` told, and waited for, on every shard |
 *
 * **A shard that is down** affects its tenants only. A bundle that cannot be
 * built (its server down) does not fail this Layer: the shard is down, and
 * its tenants' calls fail at once with a `StoreError` of the build's kind
 * (`Connection` for an unreachable server: retryable) naming the shard and
 * the tenant, until `retryAfter` has passed; then a call builds it again (a
 * fan-out does not wait for that build: it answers without the shard and
 * starts the build in the background). A
 * `StoreError` of a built shard names the shard in its description. The
 * fan-outs above that are scans or claims of due work (each pass of a sweep
 * finds again what it missed) answer from the shards that answered, log a
 * warning for each that failed, and fail only when every shard failed; the
 * ones whose answer must be complete (`getMany`, `ping`, `deleteThread`)
 * fail with the shard's failure.
 *
 * **A leader per shard.** This Layer provides `StorePartitions`, one
 * partition per shard: the runtime keeps one leader lease in each shard and
 * runs that leader's work (retention, the schedules' firing) confined to the
 * shard — its scans and deletes reach that shard alone. A shard that is down
 * stops its own leader's work only; the other shards' retention and
 * schedules go on. Tenant quotas and tree caps are on their tenants' shards.
 *
 * **What stays on the home shard**, and so stops for every tenant while it
 * is down: the rate-limit keys that name no tenant (a provider's slots,
 * windows and pauses: one budget for the fleet), `StoreProbe`, and
 * `Leader.run` campaigns of your own.
 *
 * **Liveness per shard.** Each instance holds its liveness signal on every
 * shard (`StorePartitions.partitionOf` tells the runtime a tenant's shard):
 * a shard that is down loses the signals there only, so only its trees are
 * open to takeover and only its passes stop; a tree is taken at once only
 * when its holder's signal on the tree's shard is free. A shard down when an
 * instance starts keeps lease expiry for its trees until the instance
 * registers there (tried again every 30 seconds on the Clock).
 *
 * Not provided: effect's `RateLimiterStore` and `CircuitBreakerStore`, and
 * the SQL client of a bundle. Their keys are a provider's (the runtime uses
 * `Provider.key`), naming no tenant: one limit or circuit for the whole
 * fleet, which cannot be split over shards without splitting the budget.
 * Provide them from one bundle (e.g. `PgLimiters.layer` on the home
 * database, or on a database of their own so that no shard's outage stops
 * the providers' guarded calls). The `baton` command line takes the same
 * shards and rule from a JSON file (`baton --shards FILE …`): it routes each
 * command by tenant and fans a fleet-wide one out.
 *
 * @since 0.1.0
 */
import type { StoreServices as AllStores } from "../../src/stores/StoreServices.ts"
import { Context, type Duration, Effect, Layer, Option } from "effect"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { EventWakeups } from "../../src/stores/EventWakeups.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { InstanceLiveness } from "../../src/stores/InstanceLiveness.ts"
import { duration, setting } from "../../src/stores/internal/options.ts"
import { LeaseWakeups } from "../../src/stores/LeaseWakeups.ts"
import { StorePartitions } from "../../src/stores/StorePartitions.ts"
import { StoreProbe } from "../../src/stores/StoreProbe.ts"
import * as Liveness from "./internal/liveness.ts"
import * as Router from "./internal/router.ts"
import * as Rule from "./internal/rule.ts"
import * as Shard from "./internal/shard.ts"
import { routedStores } from "./internal/stores.ts"
import { eventWakeups, leaseWakeups } from "./internal/wakeups.ts"

/**
 * The store services every shard's bundle must provide (every bundle of
 * `MemoryStores`, `SqliteStores`, `PgStores` does).
 *
 * @category models
 * @since 0.1.0
 */
export type Stores = AllStores

/**
 * What this Layer provides: every store contract, routed, an
 * `IdGenerator` (random ids), and `StorePartitions` (one partition per
 * shard: the runtime runs a leader per shard).
 *
 * @category models
 * @since 0.1.0
 */
export type Services = Stores | Ids.IdGenerator | StorePartitions

/**
 * The rule mapping a tenant to a shard's name: a function (called on every
 * routed call: keep it pure and fast; it must answer a shard's name for
 * every tenant, and a call whose tenant it maps to no shard fails with a
 * `StoreError` of kind `Config`), or a table of tenants with a default for
 * every other tenant (checked at build).
 *
 * @category models
 * @since 0.1.0
 */
export type Route =
  | ((tenantId: string) => string)
  | {
    /** Tenant id → shard name. */
    readonly tenants?: Readonly<Record<string, string>> | undefined
    /** The shard of every tenant not in `tenants`. */
    readonly default: string
  }

/**
 * One shard: its name (what the rule answers) and its store bundle.
 *
 * @category models
 * @since 0.1.0
 */
export interface ShardOptions<E = StoreError | BatonConfigError, R = never> {
  readonly name: string
  readonly layer: Layer.Layer<Stores, E, R>
}

/**
 * The shards, the rule, and how long a down shard's calls fail at once
 * before a call builds its bundle again.
 *
 * @category models
 * @since 0.1.0
 */
export interface ShardedStoresOptions<E = StoreError | BatonConfigError, R = never> {
  /** At least one; names non-empty and distinct. */
  readonly shards: ReadonlyArray<ShardOptions<E, R>>
  readonly route: Route
  /** Between builds of a down shard's bundle (default 5 seconds; 0 to 1 hour): its calls fail at once in between. */
  readonly retryAfter?: Duration.Input | undefined
}

const retryAfterSetting = duration({ min: 0, max: 60 * 60 * 1000, example: "5 seconds" })

/**
 * Every store contract over the shards, routed by tenant (see the module's
 * doc for the rule of each call). Fails at build with `BatonConfigError`
 * naming the field when the options cannot work: no shards, a shard name
 * empty or given twice, a table naming a shard that is not one, an
 * unknown option, or a bundle refusing its own options (its field under
 * `shards[i].layer`). A bundle that cannot reach its server does not fail
 * the build: that shard is down (see the module's doc).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = <E = StoreError | BatonConfigError, R = never>(
  options: ShardedStoresOptions<E, R>
): Layer.Layer<Services, BatonConfigError, R> =>
  Layer.effectContext(Effect.gen(function*() {
    const rule = yield* Rule.check(options, options?.shards, options?.route)
    const retryAfterMillis = yield* setting("retryAfter", options.retryAfter, retryAfterSetting, 5_000)
    const scope = yield* Effect.scope
    const shards = yield* Effect.forEach(
      options.shards,
      (shard, index) => Shard.make({ name: shard.name, index, layer: shard.layer, retryAfterMillis, scope }),
      { concurrency: "unbounded" }
    )
    const router = Router.make(shards, rule)
    const home = router.home.built() as Context.Context<never> | undefined
    const livenessKind = Liveness.kindOf(router)
    const probe = home === undefined ? Option.none() : Context.getOption(home, StoreProbe)
    const ids = home === undefined ? Option.none() : Context.getOption(home, Ids.IdGenerator)
    const idGenerator = Option.isSome(ids) ? ids.value : Context.get(yield* Layer.build(Ids.layer), Ids.IdGenerator)
    const ownLeaseWakeups = yield* LeaseWakeups
    const ownEventWakeups = yield* EventWakeups
    let context = routedStores(router).pipe(
      Context.add(Ids.IdGenerator, idGenerator),
      Context.add(LeaseWakeups, leaseWakeups(router, ownLeaseWakeups)),
      Context.add(EventWakeups, eventWakeups(router, ownEventWakeups)),
      Context.add(StorePartitions, {
        names: rule.names,
        within: (name) => {
          const index = rule.names.indexOf(name)
          return index < 0 ? (effect) => effect : router.within(index)
        },
        partitionOf: (tenantId) => {
          const routed = rule.route(tenantId)
          return routed._tag === "Shard" ? rule.names[routed.index] : undefined
        }
      })
    )
    // Always: a shard down now may be up when the runtime registers (or registers again), and one without
    // liveness refuses the registration itself.
    context = Context.add(context, InstanceLiveness, Liveness.make(router, livenessKind))
    if (Option.isSome(probe)) context = Context.add(context, StoreProbe, probe.value)
    return context as Context.Context<Services>
  }))
