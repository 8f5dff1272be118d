/**
 * Lease-release wake-ups across instances over Postgres LISTEN/NOTIFY.
 *
 * The runtime tells the process's `LeaseWakeups` hub when it released a lease
 * (the lease holder's finalizer calls `released`), and every waiting resume
 * and recovery sweep of this process waits on that hub. This Layer provides a
 * `LeaseWakeups` that wraps the hub in context (by default the process-wide
 * one):
 * - `released(tenant, root, options)` wakes this process's waiters at once,
 *   as before, and sends a NOTIFY on the deployment's channel
 *   (asynchronously: the caller never waits for it, and a failed NOTIFY is
 *   only logged), saying whether the tree ended;
 * - a listener on its own connection (outside the pool) receives the NOTIFYs
 *   of every other process and calls the hub's `released(tenant, root)` (an
 *   ended tree's as ended: it wakes no sweep there either), so
 *   a waiter on another machine moves in milliseconds instead of at its next
 *   poll. Notifications this process sent itself are skipped (its waiters
 *   were woken already).
 *
 * Nothing depends on a notification arriving: a lost connection is logged
 * and re-opened after `reconnectDelay`, and the runtime's polling stays the
 * fallback. Through a pooler in transaction mode (pgbouncer) a LISTEN cannot
 * be held — the server session goes to other clients after each
 * transaction — so the listener is not started: the build logs that other
 * instances' releases are seen at polling. The channel is per deployment (schema and table prefix), so two
 * apps sharing a database do not wake each other.
 *
 * @since 0.1.0
 */
import type { PgClient } from "@effect/sql-pg"
import type { Duration, Layer } from "effect"
import { LeaseWakeups, type LeaseWakeupsShape } from "../../src/stores/LeaseWakeups.ts"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import type { SqlStoreOptions } from "../sql/SqlTables.ts"
import * as NotifyChannel from "./internal/notifyChannel.ts"
import { lockKey } from "./PgMigrations.ts"

/**
 * The deployment whose releases are sent and heard (schema and table prefix), and how long to wait before listening again.
 *
 * @category models
 * @since 0.1.0
 */
export interface PgWakeupsOptions extends SqlStoreOptions {
  /** The schema of the deployment (see `PgClient`): part of the channel's identity. */
  readonly schema?: string | undefined
  /** How long to wait before listening again after the listener's connection failed: 10 ms to 10 minutes. Default 1 second. */
  readonly reconnectDelay?: Duration.Input | undefined
}

/**
 * The NOTIFY channel of the deployment with these options.
 *
 * @category utils
 * @since 0.1.0
 */
export const channel = (options: PgWakeupsOptions = {}): string =>
  `baton_wake_${(lockKey(options) >>> 0).toString(16).padStart(8, "0")}`

/** The notification of a release, `[kind, origin, tenantId, rootExecutionId]` ("e" for an ended tree, "r" otherwise), or undefined when it is not one of ours. */
const decode = (
  value: unknown
): { readonly origin: string; readonly tenantId: string; readonly rootExecutionId: string; readonly ended: boolean } | undefined => {
  if (!Array.isArray(value) || value.length !== 4 || (value[0] !== "r" && value[0] !== "e")) return undefined
  const [kind, origin, tenantId, rootExecutionId] = value
  if (typeof origin !== "string" || typeof tenantId !== "string" || typeof rootExecutionId !== "string") return undefined
  return { origin, tenantId, rootExecutionId, ended: kind === "e" }
}

/**
 * Provides `LeaseWakeups`: the hub in context, each release also sent to
 * the other instances and theirs heard here, for the Layer's lifetime
 * (built once LISTEN is confirmed, or with the failure logged and the
 * listener retrying).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgWakeupsOptions = {}): Layer.Layer<never, BatonConfigError, PgClient.PgClient> =>
  NotifyChannel.relay(LeaseWakeups, {
    name: channel(options),
    what: "lease-release",
    waiters: "other instances",
    reconnectDelay: options.reconnectDelay,
    decode,
    heard: (hub, m) => hub.released(m.tenantId, m.rootExecutionId, { ended: m.ended }),
    wrap: (hub, send, origin): LeaseWakeupsShape => ({
      released: (tenantId, rootExecutionId, released) => {
        hub.released(tenantId, rootExecutionId, released)
        send([released?.ended === true ? "e" : "r", origin, tenantId, rootExecutionId])
      },
      next: hub.next
    })
  })
