/**
 * One Postgres LISTEN/NOTIFY channel of a wake-up Layer (lease releases,
 * appended events): outgoing NOTIFYs sent in order by one fiber (a sender
 * never waits for them; a failed one is only logged), and a listener on its
 * own connection (outside the pool), re-opened after `reconnectDelay` when it
 * fails. Behind a pooler in transaction mode a LISTEN cannot be held (it stays
 * with a server session the pooler hands to others): the listener then says
 * so once and stops, and the waiters' polling takes over.
 *
 * Nothing depends on a notification arriving: the callers poll on the Clock.
 */
import { PgClient, PgConnection } from "@effect/sql-pg"
import { type Context, Deferred, Duration, Effect, Layer, Queue, type Scope } from "effect"
import type { BatonConfigError } from "../../../src/stores/Errors.ts"
import { durationMillis } from "../../sql/internal/config.ts"
import * as Pooling from "./pooling.ts"

/** NOTIFY payloads must stay under 8000 bytes. */
const maxPayload = 7900

/** What a channel is for, as its log lines name it, and what its listener does with a notification. */
export interface ChannelOptions<M> {
  readonly client: PgClient.PgClient
  readonly name: string
  /** The wake-ups' name in log lines: "lease-release", "event". */
  readonly what: string
  /** Who waits when nothing is heard: "other instances", "readers". */
  readonly waiters: string
  readonly reconnectDelay?: Duration.Input | undefined
  /** Sends each payload once per batch (the same payload twice wakes no one more). */
  readonly dedupe?: boolean | undefined
  readonly parse: (payload: string) => M | undefined
  readonly onMessage: (message: M) => void
}

/** The reconnect delay: 10 ms to 10 minutes, default 1 second. */
const reconnectDelayOf = (given: Duration.Input | undefined, waiters: string) =>
  given === undefined ? Effect.succeed(Duration.seconds(1)) : Effect.map(
    durationMillis("reconnectDelay", given, {
      min: 10,
      max: 600_000,
      minWhy: "retrying more often only spins against a server that is down",
      why: `a longer pause leaves ${waiters} polling`
    }),
    Duration.millis
  )

/** The sender: one fiber sending what `send` put in its outbox, in order. */
const sender = <M>(options: ChannelOptions<M>) =>
  Effect.gen(function*() {
    const outbox = yield* Queue.unbounded<string>()
    yield* Queue.takeAll(outbox).pipe(
      Effect.flatMap((payloads) =>
        Effect.forEach(options.dedupe === true ? new Set(payloads) : payloads, (payload) =>
          options.client.notify(options.name, payload).pipe(
            Effect.catch((e) => Effect.logWarning(`${options.what} NOTIFY failed (${options.waiters} fall back to polling): ${e.message}`))
          ), { discard: true })
      ),
      Effect.forever,
      Effect.forkScoped
    )
    return (payload: string) => {
      if (new TextEncoder().encode(payload).length <= maxPayload) Queue.offerUnsafe(outbox, payload)
    }
  })

/** The listener, on its own connection; answers once it listens, failed once, or found a transaction pooler. */
const listener = <M>(options: ChannelOptions<M>, reconnectDelay: Duration.Duration) =>
  Effect.gen(function*() {
    const listening = yield* Deferred.make<void>()
    const listenOnce = Effect.scoped(Effect.gen(function*() {
      const connection = yield* PgConnection.make(options.client.config)
      if ((yield* Pooling.poolingOf(options.client.config, connection)) === "transaction") return "pooled" as const
      const notifications = yield* connection.listen(options.name)
      yield* Deferred.succeed(listening, void 0)
      while (true) {
        const message = options.parse((yield* Queue.take(notifications)).payload)
        if (message !== undefined) options.onMessage(message)
      }
    }))
    yield* listenOnce.pipe(
      Effect.catch((e) =>
        Effect.logWarning(
          `${options.what} LISTEN on ${options.name} failed; listening again in ${Duration.format(reconnectDelay)}: ${String((e as { message?: unknown }).message ?? e)}`
        ).pipe(
          Effect.andThen(Deferred.succeed(listening, void 0)),
          Effect.andThen(Effect.sleep(reconnectDelay)),
          Effect.as("again" as const)
        )
      ),
      Effect.repeat({ until: (outcome) => outcome === "pooled" }),
      Effect.andThen(Effect.logWarning(
        `${options.what} wake-ups: the connections go through a pooler in transaction mode, where a LISTEN cannot be held; this instance's ${options.waiters} are woken by other instances only at their polling (its own still wake them at once, and its NOTIFYs are still sent)`
      )),
      Effect.andThen(Deferred.succeed(listening, void 0)),
      Effect.forkScoped
    )
    yield* Deferred.await(listening)
  })

/**
 * Opens the channel for the current scope: the listener runs (and the call
 * answers once it listens, or once it failed and retries in the
 * background), and `send` queues a NOTIFY (one over the payload limit is
 * dropped: the waiters poll).
 */
export const open = <M>(options: ChannelOptions<M>): Effect.Effect<{ readonly send: (payload: string) => void }, BatonConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const reconnectDelay = yield* reconnectDelayOf(options.reconnectDelay, options.waiters)
    const send = yield* sender(options)
    yield* listener(options, reconnectDelay)
    return { send }
  })

const origins = new WeakMap<object, string>()

/** One id per hub: every listener of a process skips what any notifier of the same hub sent. */
export const originOf = (hub: object): string => {
  let origin = origins.get(hub)
  if (origin === undefined) {
    origin = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
    origins.set(hub, origin)
  }
  return origin
}

/** What a wake-up Layer relays over its channel: a notification names the process that sent it. */
export interface RelayOptions<S, M extends { readonly origin: string }> extends Omit<ChannelOptions<M>, "client" | "onMessage" | "parse"> {
  /** The notification in a payload's JSON value, or undefined when it is not one of ours. */
  readonly decode: (value: unknown) => M | undefined
  /** Wakes this process's waiters for what another process sent. */
  readonly heard: (hub: S, message: M) => void
  /** The hub wrapped so that each wake-up also goes out with `send` (as JSON), naming `origin`. */
  readonly wrap: (hub: S, send: (value: unknown) => void, origin: string) => S
}

/**
 * A wake-up Layer over Postgres: provides the hub in context wrapped by
 * `wrap`, and runs the channel's listener for the Layer's lifetime, waking
 * the hub for every notification another process sent (this process's own
 * are skipped: its waiters were woken already). Built once LISTEN is
 * confirmed, or, when it could not be, with the failure logged and the
 * listener retrying.
 */
export const relay = <S extends object, M extends { readonly origin: string }>(
  hubKey: Context.Reference<S>,
  options: RelayOptions<S, M>
): Layer.Layer<never, BatonConfigError, PgClient.PgClient> =>
  Layer.effect(
    hubKey,
    Effect.gen(function*() {
      const hub = yield* hubKey
      const origin = originOf(hub)
      const { send } = yield* open({
        ...options,
        client: yield* PgClient.PgClient,
        parse: (payload) => {
          try {
            return options.decode(JSON.parse(payload))
          } catch {
            return undefined
          }
        },
        onMessage: (m) => {
          if (m.origin !== origin) options.heard(hub, m)
        }
      })
      return options.wrap(hub, (value) => send(JSON.stringify(value)), origin)
    })
  )
