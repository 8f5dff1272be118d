/**
 * One shard: its store bundle, built in the router's scope. A bundle that
 * cannot be built (its server down, unreachable) leaves the shard down, not
 * the router: its calls fail at once with the build's failure until
 * `retryAfter` has passed on the Clock, and then the next call builds it
 * again. A bundle once built stays; its calls fail as its stores fail.
 */
import { Cause, Clock, type Context, Effect, Exit, Layer, Scope, Semaphore } from "effect"
import { BatonConfigError, StoreError, type StoreErrorKind } from "../../../src/stores/Errors.ts"
import * as Warnings from "./warnings.ts"

/** Why a shard is down: the failure of its last build. */
export interface Down {
  readonly shard: string
  readonly kind: StoreErrorKind
  readonly description: string
}

/** A shard: its name, its built stores (when built), and a way to get them (building them when down). */
export interface Shard<S> {
  readonly name: string
  readonly index: number
  /** The stores if built now (no build attempted). */
  readonly built: () => Context.Context<S> | undefined
  /** The stores, built now if not yet (or again, once `retryAfter` passed since the last failed build). */
  readonly context: Effect.Effect<Context.Context<S>, Down>
  /**
   * The stores if built; else the shard's failure at once, its build tried
   * again in the background (once `retryAfter` passed): what the fan-outs
   * use, so a sweep over every shard never waits on a down shard's connect.
   */
  readonly now: Effect.Effect<Context.Context<S>, Down>
}

type State<S> =
  | { readonly _tag: "Unbuilt" }
  | { readonly _tag: "Built"; readonly context: Context.Context<S> }
  | { readonly _tag: "Down"; readonly at: number; readonly down: Down }

/** What a failed build's cause says, as a `Down` (a `BatonConfigError` is a mistake in the bundle's options: it fails the router's build instead). */
const downOf = (shard: string, cause: Cause.Cause<unknown>): Down | BatonConfigError => {
  const error = Cause.squash(cause)
  if (error instanceof BatonConfigError) return error
  if (error instanceof StoreError) return { shard, kind: error.kind, description: error.reason.description }
  return { shard, kind: "Other", description: error instanceof Error ? error.message : String(error) }
}

/**
 * Makes a shard over `layer`, building it once at once: a bundle refusing its
 * options fails here (`BatonConfigError`, its field under `shards[index]`); a
 * bundle that cannot reach its server leaves the shard down.
 */
export const make = <S, E, R>(input: {
  readonly name: string
  readonly index: number
  readonly layer: Layer.Layer<S, E, R>
  readonly retryAfterMillis: number
  readonly scope: Scope.Scope
}): Effect.Effect<Shard<S>, BatonConfigError, R> =>
  Effect.gen(function*() {
    const lock = yield* Semaphore.make(1)
    const services = yield* Effect.context<R>()
    let state: State<S> = { _tag: "Unbuilt" }
    // "is down": at once, then at most once a minute while the builds keep failing.
    const warnings = Warnings.make()
    const build = Effect.gen(function*() {
      const scope = yield* Scope.fork(input.scope)
      // A memo map of its own: no two shards share a store built from one Layer value (each shard is its own
      // bundle), and a rebuild remembers nothing of a failed build.
      const memoMap = Layer.makeMemoMapUnsafe()
      const exit = yield* Effect.exit(Layer.buildWithMemoMap(input.layer, memoMap, scope).pipe(Effect.provideContext(services)))
      if (Exit.isSuccess(exit)) {
        state = { _tag: "Built", context: exit.value }
        yield* warnings.ended("down", (meanwhile) => `ShardedStores: shard "${input.name}" is built again${meanwhile}`)
        return { _tag: "Built" as const }
      }
      yield* Scope.close(scope, exit)
      const down = downOf(input.name, exit.cause)
      if (down instanceof BatonConfigError) return { _tag: "Config" as const, error: down }
      state = { _tag: "Down", at: yield* Clock.currentTimeMillis, down }
      yield* warnings.holds("down", (meanwhile) =>
        `ShardedStores: shard "${input.name}" is down (its stores could not be built): ${down.description}${meanwhile}; ` +
        "said again at most once a minute while its builds fail")
      return { _tag: "Down" as const }
    })
    const first = yield* build
    if (first._tag === "Config") {
      return yield* Effect.fail(new BatonConfigError({ field: `shards[${input.index}].layer: ${first.error.field}`, reason: first.error.reason }))
    }
    const context: Effect.Effect<Context.Context<S>, Down> = Effect.suspend(() => {
      if (state._tag === "Built") return Effect.succeed(state.context)
      return Semaphore.withPermit(lock)(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (state._tag === "Down" && now - state.at < input.retryAfterMillis) return yield* Effect.fail(state.down)
        if (state._tag !== "Built") {
          const again = yield* build
          if (again._tag === "Config") {
            return yield* Effect.fail<Down>({ shard: input.name, kind: "Config", description: again.error.message })
          }
        }
        return state._tag === "Built" ? state.context : yield* Effect.fail(state._tag === "Down" ? state.down : { shard: input.name, kind: "Other" as const, description: "not built" })
      }))
    })
    const now: Effect.Effect<Context.Context<S>, Down> = Effect.suspend(() => {
      if (state._tag === "Built") return Effect.succeed(state.context)
      const down: Down = state._tag === "Down" ? state.down : { shard: input.name, kind: "Connection", description: "its stores are being built" }
      return Effect.andThen(Effect.forkIn(Effect.ignore(context), input.scope), Effect.fail(down))
    })
    return {
      name: input.name,
      index: input.index,
      built: () => (state._tag === "Built" ? state.context : undefined),
      context,
      now
    }
  })
