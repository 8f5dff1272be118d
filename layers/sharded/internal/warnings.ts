/**
 * Warnings said rarely. A condition that keeps holding (a shard that is
 * down, a call that goes on without it) is warned about at once, then at
 * most once per {@link interval} on the Clock, saying how often it held
 * since; when it ends, that is said once, as info.
 */
import { Clock, Effect } from "effect"

/** The shortest time between two warnings of one key. */
export const interval = 60_000

/** " (and N more times since the last warning)", or nothing when there were none. */
const meanwhile = (count: number): string => (count === 0 ? "" : ` (and ${count} more times since the last warning)`)

/** The warnings of one owner (a shard, a router), by key. */
export interface Warnings {
  /** `key` holds: warns with `message(meanwhile)` at once, then at most once per interval. */
  readonly holds: (key: string, message: (meanwhile: string) => string) => Effect.Effect<void>
  /** `key` no longer holds: says `message(meanwhile)` once, as info, when it had been warned about. */
  readonly ended: (key: string, message: (meanwhile: string) => string) => Effect.Effect<void>
}

/** Warnings with nothing said yet. One entry a key that holds: as many as the owner has keys. */
export const make = (): Warnings => {
  const warned = new Map<string, { at: number; since: number }>()
  return {
    holds: (key, message) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const last = warned.get(key)
        if (last !== undefined && now - last.at < interval) {
          last.since++
          return Effect.void
        }
        warned.set(key, { at: now, since: 0 })
        return Effect.logWarning(message(meanwhile(last?.since ?? 0)))
      }),
    ended: (key, message) =>
      Effect.suspend(() => {
        const last = warned.get(key)
        if (last === undefined) return Effect.void
        warned.delete(key)
        return Effect.logInfo(message(meanwhile(last.since)))
      })
  }
}
