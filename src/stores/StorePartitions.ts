/**
 * The parts of a store bundle that fail apart: `ShardedStores` provides it
 * (one partition per shard); a single-database bundle does not. Where it is
 * in context, the runtime runs its leader-run work (retention, the firing of
 * schedule ticks) once per partition, each under a leader lease of its own
 * kept in that partition, so a partition that is down stops only its own
 * leader work.
 *
 * `within(name)(effect)` runs `effect` with the store calls that name no
 * tenant (the fleet-wide scans, claims and retention deletes) confined to
 * partition `name`, and with the runtime's own tenant (`@baton`: the leader
 * leases) kept there too. Calls that name a tenant still go to that tenant's
 * partition, whatever `within` says.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"

/**
 * What a partitioned bundle offers (see the module).
 *
 * @category models
 * @since 0.1.0
 */
export interface StorePartitionsShape {
  /** The partitions' names, distinct, in the bundle's order (`ShardedStores`: its shards' names). */
  readonly names: ReadonlyArray<string>
  /**
   * `effect` with its fleet-wide store calls and the leases of tenant `@baton`
   * confined to the partition `name`. A name that is no partition's leaves
   * `effect` unconfined (it is the caller's to give one of `names`).
   */
  readonly within: (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * The partition a tenant's calls go to (`undefined`: none, the rule gives
   * it no partition). With it, the runtime keeps its instance liveness per
   * partition (registered, watched and checked inside `within`), so that a
   * partition that is down loses the signals of its own trees only; without
   * it, one liveness for the bundle.
   *
   * @since 0.1.0
   */
  readonly partitionOf?: ((tenantId: string) => string | undefined) | undefined
}

/**
 * The partitions of the store bundle in context, when it has more than one
 * part that can be down on its own.
 *
 * @category services
 * @since 0.1.0
 */
export class StorePartitions extends Context.Service<StorePartitions, StorePartitionsShape>()("baton/StorePartitions") {}
