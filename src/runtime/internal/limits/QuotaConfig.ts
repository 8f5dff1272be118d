/**
 * The checks of the runtime's limit options (`tenantQuota`, `onOverQuota`,
 * `providers`), kept apart from `BatonConfig` so its own checks stay short.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { BatonConfigError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"
import * as Definition from "./ProviderDefinition.ts"

/**
 * A provider definition as the runtime's `providers` option takes it.
 *
 * @category models
 * @since 0.1.0
 */
export type ProviderDefinition = Definition.Provider

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

const show = Options.show

const quota = Options.whole({ min: 1, max: Number.MAX_SAFE_INTEGER, why: "trees one tenant runs at once", unset: "unset for no cap" })
const overQuota = Options.oneOf(["wait", "fail"])

/**
 * Checks the limit options; a bad one fails with `BatonConfigError` naming it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = Effect.fnUntraced(function*(config: LimitOptions) {
  const { onOverQuota, providers, tenantQuota } = config
  yield* Options.setting("tenantQuota", tenantQuota, quota, undefined)
  yield* Options.setting("onOverQuota", onOverQuota, overQuota, undefined)
  if (providers === undefined) return
  if (!Array.isArray(providers)) return yield* refuse("providers", "must be an array of provider definitions (see Provider)")
  const keys = new Set<string>()
  for (const p of providers) {
    yield* Definition.make(p).pipe(Effect.mapError((e) => new BatonConfigError({ field: `providers: ${e.field}`, reason: e.reason })))
    if (keys.has(p.key)) return yield* refuse("providers", `names provider ${show(p.key)} twice; keys must be unique`)
    keys.add(p.key)
  }
})
