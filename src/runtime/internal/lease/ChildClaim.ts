/**
 * A queued child's claim, kept while the child runs: the claim row of the
 * `ChildQueueStore` is renewed with the child's own lease timing, so a
 * worker that dies stops renewing and the claim expires for another to take.
 *
 * @since 0.1.0
 */
import { Clock, Effect, type Scope } from "effect"
import type { ChildQueueStoreShape, QueuedChild } from "../../../stores/ChildQueueStore.ts"
import * as KeptLease from "./KeptLease.ts"

/**
 * Renews `row`'s claim by `holder` every `renewMillis` for the rest of the
 * current scope; a renewal the store did not answer is logged and tried
 * again, one that finds the claim gone ends the renewals.
 *
 * @category constructors
 * @since 0.1.0
 */
export const keep = (
  queue: ChildQueueStoreShape,
  row: QueuedChild,
  holder: string,
  timing: { readonly leaseMillis: number; readonly renewMillis: number }
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const kept = yield* KeptLease.make({
      leaseMillis: timing.leaseMillis,
      acquiredAt: yield* Clock.currentTimeMillis,
      renew: (now) => queue.renewClaim(row.tenantId, row.executionId, holder, timing.leaseMillis, now)
    })
    yield* KeptLease.renewEvery(kept, {
      periodMillis: timing.renewMillis,
      onError: (e) => Effect.logWarning("renewing a child claim failed; retrying at the next renewal", e.message)
    })
  })
