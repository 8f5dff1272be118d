/**
 * The checks of the runtime's limit options (`tenantQuota`, `onOverQuota`,
 * `providers`), kept apart from `BatonConfig` so its own checks stay short.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import { BatonConfigError } from "../../stores/Errors.ts"
import type { HealthComponent } from "../Health.ts"
import * as Provider from "../Provider.ts"

/**
 * A provider definition as the runtime's `providers` option takes it.
 *
 * @category models
 * @since 0.1.0
 */
export type ProviderDefinition = Provider.Provider

/**
 * The limit options of a configuration.
 *
 * @category models
 * @since 0.1.0
 */
export interface LimitOptions {
  readonly tenantQuota?: number | undefined
  readonly onOverQuota?: "wait" | "fail" | undefined
  readonly providers?: ReadonlyArray<ProviderDefinition> | undefined
}

const refuse = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))

const show = (value: unknown) => (typeof value === "string" ? JSON.stringify(value) : String(value))

/**
 * Checks the limit options; a bad one fails with `BatonConfigError` naming it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = Effect.fnUntraced(function*(config: LimitOptions) {
  const { onOverQuota, providers, tenantQuota } = config
  if (tenantQuota !== undefined && !(typeof tenantQuota === "number" && Number.isSafeInteger(tenantQuota) && tenantQuota >= 1)) {
    return yield* refuse("tenantQuota", `must be a whole number ≥ 1 (trees one tenant runs at once), or unset for no cap (got ${show(tenantQuota)})`)
  }
  if (onOverQuota !== undefined && onOverQuota !== "wait" && onOverQuota !== "fail") {
    return yield* refuse("onOverQuota", `must be "wait" or "fail" (got ${show(onOverQuota)})`)
  }
  if (providers === undefined) return
  if (!Array.isArray(providers)) return yield* refuse("providers", "must be an array of provider definitions (see Provider)")
  const keys = new Set<string>()
  for (const p of providers) {
    yield* Provider.make(p).pipe(Effect.mapError((e) => new BatonConfigError({ field: `providers: ${e.field}`, reason: e.reason })))
    if (keys.has(p.key)) return yield* refuse("providers", `names provider ${show(p.key)} twice; keys must be unique`)
    keys.add(p.key)
  }
})

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
  providers: ReadonlyArray<ProviderDefinition> | undefined,
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
