/**
 * The `StoreProbe` of the in-memory stores: they live in this process only,
 * which is what `Diagnostics.check` warns about when more than one process
 * is meant to share them.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { StoreProbe } from "../../src/stores/StoreProbe.ts"

/**
 * The probe of the in-memory stores.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<StoreProbe> = Layer.succeed(StoreProbe)({ probe: Effect.succeed({ _tag: "Memory" }) })
