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

/**
 * A fresh liveness table: registered keys, and those whose scope is still open.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (): InstanceLivenessShape => {
  const registered = new Set<string>()
  const alive = new Map<string, number>()
  const waiters = new Set<() => void>()
  const changed = {
    next: Effect.callback<void>((resume) => {
      const f = () => resume(Effect.void)
      waiters.add(f)
      return Effect.sync(() => waiters.delete(f))
    }),
    notify: () => {
      const woken = [...waiters]
      waiters.clear()
      for (const f of woken) f()
    }
  }
  const dead = (key: string) => registered.has(key) && (alive.get(key) ?? 0) === 0
  return {
    kind: "in-memory registration scope",
    register: (key) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          registered.add(key)
          alive.set(key, (alive.get(key) ?? 0) + 1)
        }),
        () =>
          Effect.sync(() => {
            alive.set(key, (alive.get(key) ?? 1) - 1)
            changed.notify()
          })
      ),
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
