/**
 * In-memory `InstanceLiveness`: an instance's signal is its registration's
 * scope — closed (a graceful stop, or a test harness killing the instance),
 * the instance is gone. For tests of the crash takeover in one process;
 * `MemoryStores.layer` does not include it (its instances keep taking
 * trees at lease expiry): merge `MemoryLiveness.layer` in to turn it on.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { InstanceLiveness, type InstanceLivenessShape } from "../../src/stores/InstanceLiveness.ts"
import * as Signal from "../../src/stores/internal/signal.ts"

/**
 * The in-memory signals, with what a test needs to lose one while its
 * instance lives (a cut liveness connection, a partition): `cut(key)` makes
 * it read as dead, `restore(key)` as it was (the backend taking it again).
 *
 * @category models
 * @since 0.1.0
 */
export interface MemoryLiveness extends InstanceLivenessShape {
  readonly cut: (key: string) => void
  readonly restore: (key: string) => void
}

/**
 * A fresh liveness table: registered keys, and those whose scope is still open.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (): MemoryLiveness => {
  const registered = new Set<string>()
  const alive = new Map<string, number>()
  const cuts = new Set<string>()
  const onLost = new Map<string, Set<() => void>>()
  const changed = Signal.make()
  const dead = (key: string) => registered.has(key) && ((alive.get(key) ?? 0) === 0 || cuts.has(key))
  return {
    kind: "in-memory registration scope",
    cut: (key) => {
      cuts.add(key)
      // The instance hears of it first (its own connection closed), then its peers.
      for (const f of onLost.get(key) ?? []) f()
      changed.notify()
    },
    restore: (key) => {
      cuts.delete(key)
      changed.notify()
    },
    register: (key, lost) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          registered.add(key)
          alive.set(key, (alive.get(key) ?? 0) + 1)
          const f = lost ?? (() => {})
          onLost.set(key, new Set([...(onLost.get(key) ?? []), f]))
          return f
        }),
        (f) =>
          Effect.sync(() => {
            alive.set(key, (alive.get(key) ?? 1) - 1)
            onLost.get(key)?.delete(f)
            changed.notify()
          })
      ).pipe(Effect.as({ held: () => !cuts.has(key) })),
    deadAmong: (keys) => Effect.sync(() => keys.filter(dead)),
    awaitDeath: (known) => {
      const check: Effect.Effect<ReadonlyArray<string>> = Effect.suspend(() => {
        const gone = [...registered].filter(dead)
        return gone.some((k) => !known.includes(k)) ? Effect.succeed(gone) : Effect.andThen(changed.next, check)
      })
      return check
    }
  }
}

/**
 * The in-memory liveness signals, one table per built Layer (share the built Layer between instances, as the stores).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<InstanceLiveness> = Layer.sync(InstanceLiveness, make)
