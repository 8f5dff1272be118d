/**
 * In-process word that a schedule was created or resumed, so the firing
 * leader of this process looks at once instead of at its next poll (a
 * leader in another process sees it within `sweepInterval`).
 *
 * @since 0.1.0
 */
import { Deferred, Effect } from "effect"

const listeners = new Set<Deferred.Deferred<void>>()

/**
 * A wait for the next change, registered now (call it before reading the
 * store, so a change in between still wakes it).
 *
 * @category internal
 * @since 0.1.0
 */
export const listen: Effect.Effect<Effect.Effect<void>> = Effect.map(Deferred.make<void>(), (changed) => {
  listeners.add(changed)
  return Deferred.await(changed).pipe(Effect.ensuring(Effect.sync(() => listeners.delete(changed))))
})

/**
 * Wakes every listener of this process.
 *
 * @category internal
 * @since 0.1.0
 */
export const notify: Effect.Effect<void> = Effect.suspend(() => {
  const woken = [...listeners]
  listeners.clear()
  return Effect.forEach(woken, (d) => Deferred.succeed(d, undefined), { discard: true })
})
