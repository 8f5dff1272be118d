/**
 * What the Redis tests share: the server (127.0.0.1:6379, which the machines
 * and CI run), a key prefix per test run, and the clean-up of that prefix.
 * No server is a failure that says how to start one — never a skip.
 */
import { Cause, Effect, Layer } from "effect"
import { Redis } from "effect/persistence"
import * as RedisStores from "../../examples/redis-store/RedisStores.ts"

export const url = "redis://127.0.0.1:6379"

export const startCommand =
  `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log`

/** A prefix no other run uses: `baton-test:<name>:<random>:`. */
export const runPrefix = (name: string) => `baton-test:${name}:${Math.random().toString(36).slice(2, 10)}:`

/** Why the connection failed: node-redis' own error (ECONNREFUSED, …) under effect's `RedisError`. */
const reason = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause) as { readonly cause?: unknown; readonly message?: string }
  return error.cause instanceof Error ? error.cause.message : String(error.message ?? error)
}

/** One connection (one instance's); fails with the command to start Redis when none answers. */
export const connection = (): Layer.Layer<Redis.Redis, Error> =>
  RedisStores.connection(url).pipe(
    Layer.catchCause((cause) =>
      Layer.effect(
        Redis.Redis,
        Effect.fail(
          new Error(`The Redis tests need a Redis server at ${url}, and none answered (${reason(cause)}). Start one with:\n  ${startCommand}`)
        )
      )
    )
  )

/** A Layer that deletes the prefix's keys when its scope closes (after a suite). */
export const cleanUp = (prefix: string) =>
  Layer.effectDiscard(Effect.addFinalizer(() => Effect.orDie(RedisStores.deleteAll(prefix)))).pipe(Layer.provide(connection()))
