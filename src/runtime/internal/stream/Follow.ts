/**
 * `Baton.stream`: a thread's events from any instance, as an Effect
 * `Stream` — those after `lastEventId` first, then each one as it is
 * appended: woken at once by an append in this process (or a Postgres
 * NOTIFY), else by a poll on the Clock. Tenant-scoped and owner-checked
 * like the reads.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Fiber, Option, Stream } from "effect"
import { StoreError } from "../../../stores/Errors.ts"
import { EventStore, type StreamEvent } from "../../../stores/EventStore.ts"
import { EventWakeups } from "../../../stores/EventWakeups.ts"
import { defaultTenant, type ThreadId } from "../../../stores/Ids.ts"
import * as Options from "../../../stores/internal/options.ts"
import type { ReadError } from "../../Errors.ts"
import type { ReadOptions } from "../calls/Reads.ts"
import { checkThread } from "../calls/Threads.ts"
import type { RecordStore } from "../../../stores/RecordStore.ts"

/**
 * What `stream` takes: who asks, where to resume, when to stop.
 *
 * @category models
 * @since 0.1.0
 */
export interface StreamOptions extends ReadOptions {
  /** The id of the last event seen (an SSE `Last-Event-ID`): the stream goes on after it, with no repeat and no gap. Default 0: from the thread's first kept event. */
  readonly lastEventId?: number | undefined
  /** How often to look for new events when no wake-up came: 10 ms to the longest timer. Default 200 milliseconds. */
  readonly pollInterval?: Duration.Input | undefined
  /**
   * Stop after the status event that ends an execution (`"end"`: Finished,
   * Failed, Cancelled) or that rests it (`"rest"`: Paused too). Default:
   * never (follow the thread until the consumer stops).
   */
  readonly until?: "end" | "rest" | undefined
}

const pageSize = 200
const ending = new Set(["Finished", "Failed", "Cancelled"])

/** Whether `event` is where a stream `until` stops. */
const stopsAt = (until: StreamOptions["until"], event: StreamEvent): boolean => {
  if (until === undefined || event.mode !== "status") return false
  const status = (event.data as { status?: unknown } | null)?.status
  return typeof status === "string" && (ending.has(status) || (until === "rest" && status === "Paused"))
}

/** The checked options, the thread's access checked. */
const begin = Effect.fnUntraced(function*(threadId: ThreadId, options: StreamOptions | undefined) {
  const op = "Baton.stream"
  const tenantId = options?.tenantId ?? defaultTenant
  const lastEventId = yield* Options.argument(op, "lastEventId", options?.lastEventId, Options.whole({ min: 0, max: Number.MAX_SAFE_INTEGER }), 0)
  const pollMillis = yield* Options.argument(op, "pollInterval", options?.pollInterval, Options.pollPeriod, 200)
  const until = yield* Options.argument(op, "until", options?.until, Options.oneOf(["end", "rest"] as const), undefined)
  const store = yield* Effect.serviceOption(EventStore)
  if (Option.isNone(store)) {
    return yield* new StoreError({
      store: "EventStore",
      operation: op,
      reason: "no EventStore is provided: use a stores bundle (MemoryStores, SqliteStores, PgStores), which includes one, or provide an EventStore Layer",
      kind: "Config"
    })
  }
  yield* checkThread(tenantId, threadId, options?.ownerId)
  return { tenantId, lastEventId, pollMillis, until, store: store.value }
})

/**
 * The thread's events after `lastEventId`, then each new one as it comes.
 *
 * @category internal
 * @since 0.1.0
 */
export const follow = (threadId: ThreadId, options?: StreamOptions): Stream.Stream<StreamEvent, ReadError, EventStore | RecordStore> =>
  Stream.unwrap(Effect.map(begin(threadId, options), ({ lastEventId, pollMillis, store, tenantId, until }) =>
    Stream.paginate({ after: lastEventId, stop: false }, (s) =>
      Effect.gen(function*() {
        if (s.stop) return [[], Option.none()] as const
        const wakeups = yield* EventWakeups
        // Waiting for a wake-up is armed before the read, so an append landing meanwhile is not missed.
        const woken = yield* Effect.forkChild(wakeups.next(tenantId, threadId))
        const page = yield* store.read(tenantId, threadId, s.after, pageSize).pipe(Effect.onError(() => Fiber.interrupt(woken)))
        if (page.length === 0) {
          yield* Effect.raceFirst(Fiber.await(woken), Effect.sleep(Duration.millis(pollMillis))).pipe(Effect.ensuring(Fiber.interrupt(woken)))
          return [[], Option.some(s)] as const
        }
        yield* Fiber.interrupt(woken)
        const end = page.findIndex((e) => stopsAt(until, e))
        const events = end < 0 ? page : page.slice(0, end + 1)
        return [events, Option.some({ after: events[events.length - 1]!.id, stop: end >= 0 })] as const
      })
    )
  ))
