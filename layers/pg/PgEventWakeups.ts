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
 * fallback (the only way behind a pooler in transaction mode, where a LISTEN
 * cannot be held). The channel is per deployment (schema and table prefix).
 *
 * @since 0.1.0
 */
import type { PgClient } from "@effect/sql-pg"
import type { Layer } from "effect"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import { EventWakeups, type EventWakeupsShape } from "../../src/stores/EventWakeups.ts"
import * as NotifyChannel from "./internal/notifyChannel.ts"
import { lockKey } from "./PgMigrations.ts"
import type { PgWakeupsOptions } from "./PgWakeups.ts"

/**
 * The event NOTIFY channel of the deployment with these options.
 *
 * @category utils
 * @since 0.1.0
 */
export const channel = (options: PgWakeupsOptions = {}): string =>
  `baton_events_${(lockKey(options) >>> 0).toString(16).padStart(8, "0")}`

/** A notification `[origin, tenantId, threadId]`, or undefined when it is not one of ours. */
const decode = (value: unknown): { readonly origin: string; readonly tenantId: string; readonly threadId: string } | undefined =>
  Array.isArray(value) && value.length === 3 && value.every((v) => typeof v === "string")
    ? { origin: value[0], tenantId: value[1], threadId: value[2] }
    : undefined

/**
 * Provides `EventWakeups`: the hub in context, each append also sent on
 * the deployment's event channel and the other processes' appends heard
 * here, for the Layer's lifetime. Built once LISTEN is confirmed, or with
 * the failure logged and the listener retrying.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgWakeupsOptions = {}): Layer.Layer<never, BatonConfigError, PgClient.PgClient> =>
  NotifyChannel.relay(EventWakeups, {
    name: channel(options),
    what: "event",
    waiters: "readers",
    reconnectDelay: options.reconnectDelay,
    dedupe: true,
    decode,
    heard: (hub, m) => hub.appended(m.tenantId, m.threadId),
    wrap: (hub, send, origin): EventWakeupsShape => ({
      appended: (tenantId, threadId) => {
        hub.appended(tenantId, threadId)
        send([origin, tenantId, threadId])
      },
      next: hub.next
    })
  })
