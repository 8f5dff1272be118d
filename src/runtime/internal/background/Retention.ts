/**
 * Retention: deletes what is kept past its retention (settled pauses,
 * execution history snapshots, expired request keys and streamed events
 * when their stores are given, checkpoints a checkpoint retention policy no
 * longer keeps), once
 * per fleet — under the `baton/retention` leader lease, so one instance
 * does it at start and every `sweepInterval` while the others wait to take
 * over. Over a partitioned bundle (`ShardedStores`) once per partition, each
 * under its own leader lease kept in that partition (`PerPartition`).
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Option } from "effect"
import { EventStore } from "../../../stores/EventStore.ts"
import { ExecutionHistoryStore } from "../../../stores/ExecutionHistoryStore.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RequestStore } from "../../../stores/RequestStore.ts"
import * as Leader from "../../Leader.ts"
import * as CheckpointRetention from "../checkpoints/CheckpointRetention.ts"
import { Instance } from "../Instance.ts"
import * as PerPartition from "./PerPartition.ts"

/**
 * The leader name retention runs under.
 *
 * @category constants
 * @since 0.1.0
 */
export const leaderName = "baton/retention"

/** A delete that failed is logged and tried again next round; it never stops the other. */
const logged = <E extends { readonly message: string }>(what: string) => (e: E) =>
  Effect.logWarning(`retention: deleting ${what} failed: ${e.message}`)

/** Settled pauses past the pause retention. */
const deletePauses = (now: number) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const deleted = yield* (yield* PauseStore).deleteSettledBefore(Math.max(0, now - instance.config.pauseRetentionMillis))
    if (deleted > 0) yield* Effect.logDebug(`retention deleted ${deleted} settled pauses past retention`)
  }).pipe(Effect.catchTag(["StoreError", "InvalidInputError"], logged("settled pauses")))

/**
 * Deletes with `deletePage` (which deletes at most `page` rows a call) until
 * a call deletes fewer than a page, the leadership checked before each call.
 * Answers how many it deleted.
 */
const deletePaged = <E, R>(deletePage: (page: number) => Effect.Effect<number, E, R>) =>
  Effect.gen(function*() {
    const leadership = yield* Leader.Leadership
    const page = (yield* Instance).config.sweepPageSize
    let deleted = 0
    while (true) {
      yield* leadership.check
      const n = yield* deletePage(page)
      deleted += n
      if (n < page) return deleted
    }
  })

/** The cutoff of the history retention: what ended before it is past retention. */
const historyCutoff = (now: number) => Effect.map(Instance, (instance) => Math.max(0, now - instance.config.historyRetentionMillis))

/** Execution snapshots past the history retention, a page a call, the leadership checked between pages. */
const deleteHistory = (now: number) =>
  Effect.gen(function*() {
    const history = yield* Effect.serviceOption(ExecutionHistoryStore)
    if (Option.isNone(history)) return
    const cutoff = yield* historyCutoff(now)
    const deleted = yield* deletePaged((page) => history.value.deleteEndedBefore(cutoff, page))
    if (deleted > 0) yield* Effect.logDebug(`retention deleted ${deleted} execution history snapshots past retention`)
  }).pipe(Effect.catchTag(["StoreError", "InvalidInputError"], logged("execution history")))

/** Streamed events past the history retention (when an `EventStore` is given), a page a call; each thread's newest stays. */
const deleteEvents = (now: number) =>
  Effect.gen(function*() {
    const events = yield* Effect.serviceOption(EventStore)
    if (Option.isNone(events)) return
    const cutoff = yield* historyCutoff(now)
    yield* deletePaged((page) => events.value.deleteBefore(cutoff, page))
  }).pipe(Effect.catchTag(["StoreError", "InvalidInputError"], logged("streamed events")))

/** Request keys past their expiry (when a `RequestStore` is given), a page a call. */
const deleteRequests = (now: number) =>
  Effect.gen(function*() {
    const requests = yield* Effect.serviceOption(RequestStore)
    if (Option.isNone(requests)) return
    yield* deletePaged((page) => requests.value.deleteExpired(now, page))
  }).pipe(Effect.catchTag(["StoreError", "InvalidInputError"], logged("expired request keys")))

/** One round of deletes, the leadership checked first. */
const round = Effect.gen(function*() {
  yield* (yield* Leader.Leadership).check
  const now = yield* Clock.currentTimeMillis
  yield* deletePauses(now)
  yield* deleteHistory(now)
  yield* deleteRequests(now)
  yield* CheckpointRetention.prune(now)
  yield* deleteEvents(now)
})

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
  return yield* PerPartition.each((partition) =>
    Leader.run(leaderName, rounds, {
      holder: PerPartition.holderIn(`${instance.instanceId}/retention#${instance.incarnation}`, partition),
      lease: Duration.millis(leaseMillis),
      renewEvery: Duration.millis(renewMillis)
    })
  )
}).pipe(
  Effect.catchTag("InvalidInputError", (e) => Effect.logError(`retention cannot campaign: ${e.message}`))
)
