/**
 * Leader-run work once per store partition: over a bundle that offers
 * `StorePartitions` (`ShardedStores`: one per shard), a program runs once
 * per partition, confined to it (its fleet-wide store calls and its leader
 * lease are that partition's), so a partition that is down stops only its
 * own leader work; over any other bundle it runs once, as it always did.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { StorePartitions } from "../../../stores/StorePartitions.ts"

/**
 * Runs `program` once per partition at once (each given the partition's
 * name, its logs annotated with `partition`), or once (given `undefined`)
 * without partitions. Ends when every run ends.
 *
 * @category internal
 * @since 0.1.0
 */
export const each = <E, R>(program: (partition: string | undefined) => Effect.Effect<void, E, R>): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    const partitions = yield* Effect.serviceOption(StorePartitions)
    if (Option.isNone(partitions)) return yield* program(undefined)
    const { names, within } = partitions.value
    yield* Effect.forEach(
      names,
      (name) => within(name)(program(name)).pipe(Effect.annotateLogs({ partition: name })),
      { concurrency: "unbounded", discard: true }
    )
  })

/**
 * A campaigner's holder id in `partition` (unchanged without one): each
 * partition's lease names which of the instance's campaigns holds it.
 *
 * @category internal
 * @since 0.1.0
 */
export const holderIn = (holder: string, partition: string | undefined): string =>
  partition === undefined ? holder : `${holder}@${partition}`
