/**
 * Appended-event wake-ups across instances over Postgres LISTEN/NOTIFY, for
 * `Baton.stream` readers.
 *
 * The runtime tells the process's `EventWakeups` hub when a pass appended
 * events to a thread, and every reader of this process waits on that hub (or
 * its poll on the Clock). This Layer provides an `EventWakeups` that wraps
 * the hub in context:
 * - `appended(tenant, thread)` wakes this process's readers at once and sends
 *   a NOTIFY on the deployment's event channel (by one fiber, in order: the
 *   pass never waits for it; a failed NOTIFY is only logged);
 * - a listener on its own connection (outside the pool) hears the NOTIFYs of
 *   every other process and wakes this process's readers of that thread, so
 *   a reader on another machine reads the new events within milliseconds.
 *
 * Nothing depends on a notification arriving: a lost connection is logged
 * and re-opened after `reconnectDelay`, and the readers' polling stays the
 * fallback. The channel is per deployment (schema and table prefix).
 *
 * @since 0.2.0
 */
import { PgClient, PgConnection } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Layer, Queue } from "effect"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import { EventWakeups, type EventWakeupsShape } from "../../src/stores/EventWakeups.ts"
import { durationMillis } from "../sql/internal/config.ts"
import { lockKey } from "./PgMigrations.ts"
import type { PgWakeupsOptions } from "./PgWakeups.ts"

/**
 * The event NOTIFY channel of the deployment with these options.
 *
 * @category utils
 * @since 0.2.0
 */
export const channel = (options: PgWakeupsOptions = {}): string =>
  `baton_events_${(lockKey(options) >>> 0).toString(16).padStart(8, "0")}`

/** NOTIFY payloads must stay under 8000 bytes. */
const maxPayload = 7900

const origins = new WeakMap<EventWakeupsShape, string>()
const originOf = (hub: EventWakeupsShape): string => {
  let origin = origins.get(hub)
  if (origin === undefined) {
    origin = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
    origins.set(hub, origin)
  }
  return origin
}

/**
 * A notification `[origin, tenantId, threadId]`, or undefined when it is not one of ours.
 *
 * @category utils
 * @since 0.2.0
 */
export const parse = (payload: string): { readonly origin: string; readonly tenantId: string; readonly threadId: string } | undefined => {
  try {
    const value: unknown = JSON.parse(payload)
    if (!Array.isArray(value) || value.length !== 3 || !value.every((v) => typeof v === "string")) return undefined
    return { origin: value[0], tenantId: value[1], threadId: value[2] }
  } catch {
    return undefined
  }
}

/**
 * Provides `EventWakeups` (the hub in context, wrapped) and runs the
 * listener for the Layer's lifetime. Built once LISTEN is confirmed — or,
 * when it could not be, with the failure logged and the listener retrying.
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = (options: PgWakeupsOptions = {}): Layer.Layer<never, BatonConfigError, PgClient.PgClient> =>
  Layer.effect(
    EventWakeups,
    Effect.gen(function*() {
      const client = yield* PgClient.PgClient
      const hub = yield* EventWakeups
      const origin = originOf(hub)
      const name = channel(options)
      const reconnectDelay = options.reconnectDelay === undefined ? Duration.seconds(1) : Duration.millis(
        yield* durationMillis("reconnectDelay", options.reconnectDelay, {
          min: 10,
          max: 600_000,
          minWhy: "retrying more often only spins against a server that is down",
          why: "a longer pause leaves readers polling"
        })
      )
      const outbox = yield* Queue.unbounded<string>()
      yield* Queue.takeAll(outbox).pipe(
        Effect.flatMap((payloads) =>
          Effect.forEach(new Set(payloads), (payload) =>
            client.notify(name, payload).pipe(
              Effect.catch((e) => Effect.logWarning(`event NOTIFY failed (readers fall back to polling): ${e.message}`))
            ), { discard: true })
        ),
        Effect.forever,
        Effect.forkScoped
      )
      const listening = yield* Deferred.make<void>()
      const listenOnce = Effect.scoped(Effect.gen(function*() {
        const connection = yield* PgConnection.make(client.config)
        const notifications = yield* connection.listen(name)
        yield* Deferred.succeed(listening, void 0)
        while (true) {
          const n = yield* Queue.take(notifications)
          const message = parse(n.payload)
          if (message !== undefined && message.origin !== origin) hub.appended(message.tenantId, message.threadId)
        }
      }))
      yield* listenOnce.pipe(
        Effect.catch((e) =>
          Effect.logWarning(`event LISTEN on ${name} failed; listening again in ${Duration.format(reconnectDelay)}: ${String((e as { message?: unknown }).message ?? e)}`).pipe(
            Effect.andThen(Deferred.succeed(listening, void 0)),
            Effect.andThen(Effect.sleep(reconnectDelay))
          )
        ),
        Effect.forever,
        Effect.forkScoped
      )
      yield* Deferred.await(listening)
      const wrapped: EventWakeupsShape = {
        appended: (tenantId, threadId) => {
          hub.appended(tenantId, threadId)
          const payload = JSON.stringify([origin, tenantId, threadId])
          if (new TextEncoder().encode(payload).length <= maxPayload) Queue.offerUnsafe(outbox, payload)
        },
        next: hub.next
      }
      return wrapped
    })
  )
