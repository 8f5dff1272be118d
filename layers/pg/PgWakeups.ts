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
import { PgClient, PgConnection } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Layer, Queue } from "effect"
import { LeaseWakeups, type LeaseWakeupsShape } from "../../src/stores/LeaseWakeups.ts"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import { durationMillis } from "../sql/internal/config.ts"
import type { SqlStoreOptions } from "../sql/SqlTables.ts"
import * as Pooling from "./internal/pooling.ts"
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

/**
 * A payload: `["r", origin, tenantId, rootExecutionId]`, or `"e"` first for a
 * tree that ended. NOTIFY payloads must stay under 8000 bytes.
 */
const maxPayload = 7900

const origins = new WeakMap<LeaseWakeupsShape, string>()
/** One id per hub: every listener of a process skips what any notifier of the same hub sent. */
const originOf = (hub: LeaseWakeupsShape): string => {
  let origin = origins.get(hub)
  if (origin === undefined) {
    origin = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
    origins.set(hub, origin)
  }
  return origin
}

/**
 * The notification of a release, or undefined when it is not one of ours.
 *
 * @category utils
 * @since 0.1.0
 */
export const parse = (
  payload: string
): { readonly origin: string; readonly tenantId: string; readonly rootExecutionId: string; readonly ended: boolean } | undefined => {
  try {
    const value: unknown = JSON.parse(payload)
    if (!Array.isArray(value) || value.length !== 4 || (value[0] !== "r" && value[0] !== "e")) return undefined
    const [kind, origin, tenantId, rootExecutionId] = value
    if (typeof origin !== "string" || typeof tenantId !== "string" || typeof rootExecutionId !== "string") return undefined
    return { origin, tenantId, rootExecutionId, ended: kind === "e" }
  } catch {
    return undefined
  }
}

/**
 * Provides `LeaseWakeups` (the hub in context, wrapped) and runs the
 * listener for the Layer's lifetime. Built once LISTEN is confirmed — or,
 * when it could not be, with the failure logged and the listener retrying.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgWakeupsOptions = {}): Layer.Layer<never, BatonConfigError, PgClient.PgClient> =>
  Layer.effect(
    LeaseWakeups,
    Effect.gen(function*() {
      const client = yield* PgClient.PgClient
      const hub = yield* LeaseWakeups
      const origin = originOf(hub)
      const name = channel(options)
      const reconnectDelay = options.reconnectDelay === undefined ? Duration.seconds(1) : Duration.millis(
        yield* durationMillis("reconnectDelay", options.reconnectDelay, {
          min: 10,
          max: 600_000,
          minWhy: "retrying more often only spins against a server that is down",
          why: "a longer pause leaves other instances polling"
        })
      )

      // Outgoing NOTIFYs, sent in order by one fiber so `released` never blocks.
      const outbox = yield* Queue.unbounded<string>()
      yield* Queue.takeAll(outbox).pipe(
        Effect.flatMap((payloads) =>
          Effect.forEach(payloads, (payload) =>
            client.notify(name, payload).pipe(
              Effect.catch((e) => Effect.logWarning(`lease-release NOTIFY failed (others fall back to polling): ${e.message}`))
            ), { discard: true })
        ),
        Effect.forever,
        Effect.forkScoped
      )

      // The listener: its own connection, re-opened after a failure.
      const listening = yield* Deferred.make<void>()
      const listenOnce = Effect.scoped(Effect.gen(function*() {
        const connection = yield* PgConnection.make(client.config)
        // Through a pooler in transaction mode a LISTEN stays with a server session the pooler hands to others.
        if ((yield* Pooling.poolingOf(client.config, connection)) === "transaction") return "pooled" as const
        const notifications = yield* connection.listen(name)
        yield* Deferred.succeed(listening, void 0)
        while (true) {
          const n = yield* Queue.take(notifications)
          const message = parse(n.payload)
          if (message !== undefined && message.origin !== origin) {
            hub.released(message.tenantId, message.rootExecutionId, { ended: message.ended })
          }
        }
      }))
      yield* listenOnce.pipe(
        Effect.catch((e) =>
          Effect.logWarning(`lease-release LISTEN on ${name} failed; listening again in ${Duration.format(reconnectDelay)}: ${String((e as { message?: unknown }).message ?? e)}`).pipe(
            Effect.andThen(Deferred.succeed(listening, void 0)),
            Effect.andThen(Effect.sleep(reconnectDelay)),
            Effect.as("again" as const)
          )
        ),
        Effect.repeat({ until: (outcome) => outcome === "pooled" }),
        Effect.andThen(
          Effect.logWarning(
            `lease-release wake-ups: the connections go through a pooler in transaction mode, where a LISTEN cannot be held; this instance's waiters see other instances' releases at their polling (its own releases still wake them at once, and its NOTIFYs are still sent)`
          )
        ),
        Effect.andThen(Deferred.succeed(listening, void 0)),
        Effect.forkScoped
      )
      yield* Deferred.await(listening)

      const wrapped: LeaseWakeupsShape = {
        released: (tenantId, rootExecutionId, options) => {
          hub.released(tenantId, rootExecutionId, options)
          const payload = JSON.stringify([options?.ended === true ? "e" : "r", origin, tenantId, rootExecutionId])
          if (new TextEncoder().encode(payload).length <= maxPayload) Queue.offerUnsafe(outbox, payload)
        },
        next: hub.next
      }
      return wrapped
    })
  )
