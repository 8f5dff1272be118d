/**
 * Instance liveness: a signal each instance holds while its process lives,
 * which the backend frees the moment the process dies — a Postgres session
 * lock on a connection of its own, an operating-system lock on a side file of
 * a SQLite database, the instance's scope in memory. Peers watch the signals
 * of the holders of the leases they see, and take the trees of a holder whose
 * signal is provably free at once (`LeaseStore.takeOver`, epoch + 1) instead
 * of waiting for the leases to expire.
 *
 * Optional: a runtime without it (or whose `register` fails — a pooler in
 * transaction mode, say) keeps taking trees at lease expiry, and says so at
 * start and in readiness. Safety never rests on it: a holder thought dead
 * while it lives (its liveness connection cut, a partition) is refused every
 * write by the epoch fence once its trees were taken.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Scope } from "effect"
import type { StoreError } from "./Errors.ts"

/**
 * Semantics every implementation keeps:
 * - `register(key)` holds `key`'s signal until the scope closes (or the
 *   process dies) and records `key` as registered; it fails with a
 *   `StoreError` when the backend cannot give a signal that dies with the
 *   process (the runtime then falls back to lease expiry). A signal lost
 *   while the scope is open (a cut connection) is taken again by the
 *   backend when it can.
 * - `deadAmong(keys)` answers the keys among `keys` that were registered
 *   and whose signal is free now: their holder is gone. A key never
 *   registered, or whose holder stopped gracefully (unregistered), is never
 *   dead (its leases expire as before).
 * - `awaitDeath(known)` waits until some registered key not in `known` is
 *   dead — an instance registered before or after the call, found without
 *   polling the caller's Clock — and answers every dead key then (`known`
 *   included when still dead). Interrupted to stop watching.
 *
 * @category models
 * @since 0.1.0
 */
export interface InstanceLivenessShape {
  /** What the signal is, for the logs and readiness (e.g. "Postgres session advisory lock"). */
  readonly kind: string
  readonly register: (key: string, onLost?: () => void) => Effect.Effect<Registration, StoreError, Scope.Scope>
  readonly deadAmong: (keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, StoreError>
  readonly awaitDeath: (known: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, StoreError>
}

/**
 * A held registration: `held()` is false while the signal is lost though the
 * process lives (its connection cut: peers may take the instance's trees
 * now), true again once the backend took it back. `register`'s `onLost` runs
 * each time it is lost, before peers can know of it where the backend allows.
 *
 * @category models
 * @since 0.1.0
 */
export interface Registration {
  readonly held: () => boolean
  /**
   * What this registration's signal is, when it differs from the
   * liveness's `kind` (a router's: the signal of the shard it was made on).
   *
   * @since 0.1.0
   */
  readonly kind?: string | undefined
}

/**
 * The liveness signals of the instances over one set of stores; see `InstanceLivenessShape`.
 *
 * @category services
 * @since 0.1.0
 */
export class InstanceLiveness extends Context.Service<InstanceLiveness, InstanceLivenessShape>()("baton/InstanceLiveness") {}

/**
 * The liveness key of a holder id: the runtime's holder ids are
 * `instanceId#incarnation.n`, one key per incarnation (`instanceId#incarnation`),
 * so a restarted process with the same instance id never keeps its
 * predecessor's trees alive. A holder id of another shape is its own key.
 *
 * @category utils
 * @since 0.1.0
 */
export const keyOfHolder = (holder: string): string => {
  const hash = holder.lastIndexOf("#")
  const dot = holder.lastIndexOf(".")
  return hash > 0 && dot > hash ? holder.slice(0, dot) : holder
}
