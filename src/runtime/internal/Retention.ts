/**
 * Retention: deletes what is kept past its retention (settled pauses), once
 * per fleet — under the `baton/retention` leader lease, so one instance
 * does it at start and every `sweepInterval` while the others wait to take
 * over.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect } from "effect"
import { PauseStore } from "../../stores/PauseStore.ts"
import * as Leader from "../Leader.ts"
import { Instance } from "./Instance.ts"

/** The leader name retention runs under. */
export const leaderName = "baton/retention"

/** One round of deletes (the leader checked first); a failed store call is logged and retried next round. */
const round = Effect.gen(function*() {
  const instance = yield* Instance
  const leadership = yield* Leader.Leadership
  yield* leadership.check
  const now = yield* Clock.currentTimeMillis
  const deleted = yield* (yield* PauseStore).deleteSettledBefore(now - instance.config.pauseRetentionMillis)
  if (deleted > 0) yield* Effect.logDebug(`retention deleted ${deleted} settled pauses past retention`)
}).pipe(Effect.catchTag(["StoreError", "InvalidInputError"], (e) => Effect.logWarning(`retention round failed: ${e.message}`)))

/**
 * Campaigns for the retention leader and, while leading, runs a round every
 * sweep interval; runs until interrupted (the instance's close hands the
 * lease back at once).
 *
 * @category internal
 * @since 0.1.0
 */
export const run = Effect.gen(function*() {
  const instance = yield* Instance
  const { leaseMillis, renewMillis, sweepMillis } = instance.config
  const rounds = Effect.andThen(round, Effect.sleep(Duration.millis(sweepMillis))).pipe(Effect.forever)
  return yield* Leader.run(leaderName, rounds, {
    holder: `${instance.instanceId}/retention`,
    lease: Duration.millis(leaseMillis),
    renewEvery: Duration.millis(renewMillis)
  })
}).pipe(
  Effect.catchTag("InvalidInputError", (e) => Effect.logError(`retention cannot campaign: ${e.message}`))
)
