/**
 * Concurrency slots per provider key, shared by every instance: at most `max`
 * calls hold a slot of a key at once across the fleet. A slot is a lease in
 * `RateLimitStore` (acquire / renew / release), so a slot whose holder died
 * comes back to the fleet when its lease runs out.
 *
 * `withSlot(key, options)(call)`:
 * - acquires a slot; when none is free it waits on the Clock — in line with
 *   this process's other waiters of the key (first come, first served), woken
 *   at once when a slot of the key is released in this process, and polling
 *   every `pollInterval` for releases elsewhere — and fails with
 *   `SlotTimeoutError` after `timeout`;
 * - renews the lease every third of its length while the call runs (a fiber
 *   in the call's scope);
 * - releases the slot when the call ends, however it ends.
 *
 * If a renewal finds the lease gone (the process was paused past it), the
 * call goes on but the renewals stop: another caller may then hold the slot.
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Schema } from "effect"
import type { InvalidInputError, StoreError } from "../../stores/Errors.ts"
import type { InstanceId, TenantId } from "../../stores/Ids.ts"
import type { RateLimitStore } from "../../stores/RateLimitStore.ts"
import * as LeasedSlots from "../internal/lease/leasedSlots.ts"

/**
 * No slot of `key` came free within the wait allowed.
 *
 * @category errors
 * @since 0.1.0
 */
export class SlotTimeoutError extends Schema.TaggedError<SlotTimeoutError>()("SlotTimeoutError", {
  key: Schema.String,
  max: Schema.Number,
  waitedMillis: Schema.Number
}) {
  override get message() {
    return `No concurrency slot of ${this.key} (max ${this.max} at once across instances) came free within ${this.waitedMillis} ms. Retry later, or raise the provider's slots or its acquire timeout.`
  }
}

/**
 * How a call holds a slot.
 *
 * @category models
 * @since 0.1.0
 */
export interface SlotOptions {
  /** At most this many calls of the key at once, fleet-wide (a whole number ≥ 1). */
  readonly max: number
  /** The instance holding the slot (its lease holder). */
  readonly holder: InstanceId
  /**
   * The tenant the call is for. The calls waiting on one instance take
   * tenants in turn (a tenant's n-th waiter after every other tenant's
   * n-th), so one tenant's burst does not keep another's call waiting behind
   * it; calls naming none count as one tenant. Between instances a free slot
   * goes to whichever instance takes its lease first.
   */
  readonly tenantId?: TenantId | undefined
  /** How long a slot is held without renewal: a dead holder's slot returns after it. 1 second to 24 hours, default 30 s (the runtime's one lease option). */
  readonly lease?: Duration.Input | undefined
  /** How long to wait for a slot before `SlotTimeoutError`: 0 to Infinity (default 60 s). */
  readonly timeout?: Duration.Input | undefined
  /** How often a waiting call looks again for releases by other instances: at least 10 ms (default 1 s). */
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The errors of `withSlot` besides the call's own.
 *
 * @category models
 * @since 0.1.0
 */
export type SlotError = SlotTimeoutError | StoreError | InvalidInputError

/**
 * Runs `call` holding a concurrency slot of `key` (see the module doc).
 *
 * @category combinators
 * @since 0.1.0
 */
export const withSlot = (key: string, options: SlotOptions) =>
<A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E | SlotError, R | RateLimitStore> =>
  Effect.flatMap(
    Effect.map(LeasedSlots.holdOptions("ProviderSlots.withSlot", options, { field: "max", value: options.max }, 60_000), (o) => ({ ...o, fairBy: options.tenantId })),
    (o) => LeasedSlots.hold(key, o, call, (waitedMillis) => Effect.fail(new SlotTimeoutError({ key, max: options.max, waitedMillis })))
  )
