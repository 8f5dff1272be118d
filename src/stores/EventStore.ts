/**
 * Live output of executions: the events a holder's graph streamed (LangGraph's
 * `values`, `updates`, `custom` and `messages` modes, and the execution's
 * status changes), appended per thread under the tree's lease and read by
 * any instance — `Baton.stream` follows them.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
import { InvalidInputError, type LeaseLostError, type StoreError } from "./Errors.ts"
import type { ExecutionId, InstanceId, TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"
import type { Lease } from "./Lease.ts"

/**
 * What an event carries: one of LangGraph's stream modes, or `"status"` (the
 * execution went Running, Paused, Finished, Failed or Cancelled).
 *
 * @category models
 * @since 0.1.0
 */
export type EventMode = "values" | "updates" | "custom" | "messages" | "status"

const modes: ReadonlyArray<EventMode> = ["values", "updates", "custom", "messages", "status"]

/**
 * An event as the holder appends it.
 *
 * @category models
 * @since 0.1.0
 */
export interface EventInput {
  /**
   * The event's identity in its thread: an event whose key the thread holds
   * already is not appended again (a step run again after a takeover streams
   * the same keys).
   */
  readonly key: string
  readonly executionId: ExecutionId
  readonly mode: EventMode
  /** JSON. */
  readonly data: unknown
  /** When the holder saw it (epoch ms, its Clock). */
  readonly at: number
  /** The instance whose pass streamed it. */
  readonly instanceId: InstanceId
}

/**
 * An event as a reader gets it: `id` grows with every event of the thread
 * (not necessarily by one); pass the last one seen back as `after` to
 * continue.
 *
 * @category models
 * @since 0.1.0
 */
export interface StreamEvent {
  readonly id: number
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly executionId: ExecutionId
  readonly mode: EventMode
  readonly data: unknown
  readonly at: number
  readonly instanceId: InstanceId
}

/**
 * The errors of an event store operation.
 *
 * @category models
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a backend implements. Semantics (the conformance suite checks them):
 * - `append(lease, threadId, events, now)` appends the events whose key the
 *   thread does not hold yet, in the given order, each with an id greater
 *   than every id the thread ever had — only while `lease` is the tree's
 *   current lease (same holder and epoch, `expiresAt > now`), checked in the
 *   same atomic step: a stale holder gets `LeaseLostError` and appends
 *   nothing. Answers the ids given (ascending; none when every key was held);
 * - `read(tenantId, threadId, after, limit)` answers the thread's events
 *   with an id greater than `after`, ascending, at most `limit`;
 * - `deleteBefore(cutoff, limit)` deletes at most `limit` events (any
 *   tenant) seen before `cutoff` — but never a thread's newest event, so
 *   ids never start again — answering how many: call again until it answers
 *   less than `limit`;
 * - data is JSON; times are epoch milliseconds from the caller's Clock.
 */
export interface EventStoreShape {
  readonly append: (
    lease: Lease,
    threadId: ThreadId,
    events: ReadonlyArray<EventInput>,
    now: number
  ) => Effect.Effect<ReadonlyArray<number>, Failure | LeaseLostError>
  readonly read: (tenantId: TenantId, threadId: ThreadId, after: number, limit: number) => Effect.Effect<ReadonlyArray<StreamEvent>, Failure>
  readonly deleteBefore: (cutoff: number, limit: number) => Effect.Effect<number, Failure>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

const checkEvents = (op: string, events: ReadonlyArray<EventInput>) => {
  if (!Array.isArray(events) || events.length === 0) {
    return [Effect.fail(new InvalidInputError({ operation: op, field: "events", reason: "must be a non-empty array of events" }))]
  }
  const keys = new Set<string>()
  const checks = events.flatMap((e, i) => [
    V.nonEmpty(op, `events[${i}].key`, e?.key),
    V.nonEmpty(op, `events[${i}].executionId`, e?.executionId),
    V.nonEmpty(op, `events[${i}].instanceId`, e?.instanceId),
    V.oneOf(op, `events[${i}].mode`, e?.mode, modes),
    V.time(op, `events[${i}].at`, e?.at),
    V.json(op, `events[${i}].data`, e?.data ?? null)
  ])
  for (const e of events) {
    if (keys.has(e?.key)) {
      checks.push(Effect.fail(new InvalidInputError({ operation: op, field: "events", reason: `holds the key ${JSON.stringify(e.key)} twice: keys of one append must differ` })))
      break
    }
    keys.add(e?.key)
  }
  return checks
}

/**
 * The store of streamed events.
 *
 * @category services
 * @since 0.1.0
 */
export class EventStore extends Context.Service<EventStore, EventStoreShape>()("baton/EventStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: EventStoreShape): EventStoreShape => ({
  append: (lease, threadId, events, now) => {
    const op = "EventStore.append"
    return V.checked([
      ...V.lease(op, lease),
      ...V.ids(op, { threadId }),
      ...checkEvents(op, events),
      V.time(op, "now", now)
    ], () => impl.append(lease, threadId, events, now))
  },
  read: (tenantId, threadId, after, limit) => {
    const op = "EventStore.read"
    return V.checked([
      ...V.ids(op, { tenantId, threadId }),
      V.wholeAtLeast(op, "after", after, 0),
      V.wholeAtLeast(op, "limit", limit, 1)
    ], () => impl.read(tenantId, threadId, after, limit))
  },
  deleteBefore: (cutoff, limit) =>
    V.checked([
      V.time("EventStore.deleteBefore", "cutoff", cutoff),
      V.wholeAtLeast("EventStore.deleteBefore", "limit", limit, 1)
    ], () => impl.deleteBefore(cutoff, limit)),
  ping: impl.ping
})
