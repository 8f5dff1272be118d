/**
 * The instances' liveness signals, one per shard: an instance registers its
 * key on every shard's own `InstanceLiveness` (the runtime does so, once per
 * partition, inside `StorePartitions.within`), so a shard that is down loses
 * the signals of that shard only, and peers take an instance's trees on a
 * shard only when its signal there is free. Outside `within` the calls go to
 * the home shard.
 */
import { Context, Effect, Option, Scope } from "effect"
import { StoreError } from "../../../src/stores/Errors.ts"
import { InstanceLiveness, type InstanceLivenessShape } from "../../../src/stores/InstanceLiveness.ts"
import type { Router } from "./router.ts"

/** The liveness of the shard the fiber is confined to (else the home shard), or why it has none. */
const onLiveness = <A, E, S>(
  router: Router<S>,
  operation: string,
  f: (liveness: InstanceLivenessShape) => Effect.Effect<A, E>
): Effect.Effect<A, E | StoreError> =>
  Effect.flatMap(router.fleetShard, (shard) =>
    router.onShard("InstanceLiveness", operation, shard, (stores): Effect.Effect<A, E | StoreError> => {
      const own = Context.getOption(stores as Context.Context<InstanceLiveness>, InstanceLiveness)
      return Option.isSome(own) ? f(own.value) : Effect.fail(
        new StoreError({
          store: "InstanceLiveness",
          operation,
          kind: "Config",
          reason: `shard "${shard.name}"'s stores provide no InstanceLiveness: a dead instance's trees there move at their lease expiry (give the shard's bundle one to move them at once)`
        })
      )
    }))

/**
 * The routed liveness over `router`'s shards; `kind` is what the shards'
 * signals are (see `kindOf`), and each registration names its own shard's.
 * A shard whose bundle has no liveness fails `register` with a `Config`
 * `StoreError` (not retryable: its trees keep lease expiry).
 */
export const make = <S>(router: Router<S>, kind: string): InstanceLivenessShape => ({
  kind,
  register: (key, onLost) =>
    Effect.flatMap(Effect.scope, (scope) =>
      onLiveness(router, "register", (liveness) =>
        Effect.map(Effect.provideService(liveness.register(key, onLost), Scope.Scope, scope), (registration) => ({
          held: registration.held,
          kind: registration.kind ?? liveness.kind
        })))),
  deadAmong: (keys) => onLiveness(router, "deadAmong", (liveness) => liveness.deadAmong(keys)),
  awaitDeath: (known) => onLiveness(router, "awaitDeath", (liveness) => liveness.awaitDeath(known))
})

/**
 * What the shards' signals are, for the liveness's `kind`: the home shard's,
 * else the first built shard's, else "each shard's own" (none built yet; each
 * registration says its shard's).
 */
export const kindOf = <S>(router: Router<S>): string => {
  for (const shard of [router.home, ...router.shards]) {
    const built = shard.built()
    const own = built === undefined ? Option.none() : Context.getOption(built as Context.Context<InstanceLiveness>, InstanceLiveness)
    if (Option.isSome(own)) return own.value.kind
  }
  return "each shard's own"
}
