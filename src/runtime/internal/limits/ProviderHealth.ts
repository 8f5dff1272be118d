/**
 * The breakers of the runtime's configured `providers` in its readiness.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import { BatonConfigError } from "../../../stores/Errors.ts"
import type { HealthComponent } from "../../Health.ts"
import * as Provider from "../../limits/Provider.ts"

const refuse = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))

/**
 * The readiness components of the configured providers' breakers, read from
 * the `CircuitBreakerStore` among the instance's services. Fails (at build)
 * with `BatonConfigError` on `providers` when one has a breaker and no store
 * was provided.
 *
 * @category health
 * @since 0.1.0
 */
export const providerReadiness = (
  providers: ReadonlyArray<Provider.Provider> | undefined,
  services: Context.Context<never>
): Effect.Effect<Effect.Effect<ReadonlyArray<HealthComponent>>, BatonConfigError> => {
  const withBreaker = (providers ?? []).filter((p) => p.breaker !== undefined)
  if (withBreaker.length === 0) return Effect.succeed(Effect.succeed([]))
  const store = Context.getOption(services, CircuitBreaker.CircuitBreakerStore)
  if (Option.isNone(store)) {
    return refuse(
      "providers",
      `${withBreaker.map((p) => p.key).join(", ")} ha${withBreaker.length === 1 ? "s" : "ve"} a breaker but no CircuitBreakerStore was provided: provide a stores bundle (they all provide one) or CircuitBreaker's own store Layer`
    )
  }
  return Effect.succeed(Effect.provideService(Provider.readiness(withBreaker), CircuitBreaker.CircuitBreakerStore, store.value))
}
