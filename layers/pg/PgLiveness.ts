/**
 * `InstanceLiveness` on Postgres: each instance holds a session-level
 * advisory lock on a hash of its key, on a connection of its own (outside
 * the pool). The server frees the lock the moment that session ends — the
 * process died and its socket closed, or the connection was cut — so a peer
 * learns it at once:
 *
 * - `register(key)` opens the connection, takes `pg_try_advisory_lock(k)`,
 *   writes the key in `<prefix>instances` and LISTENs on it (a lost
 *   connection fails the listener); a lost session is opened and locked
 *   again. It sets `idle_session_timeout = 0` on that session (a server-wide
 *   idle timeout would otherwise end a live instance's lock) and TCP
 *   keepalives (10 s), so a peer host that vanished without closing its
 *   socket loses its lock once the server's keepalives give up
 *   (`tcp_keepalives_idle`/`_interval`/`_count` on the server set that bound).
 *   A frozen process (SIGSTOP) keeps its lock: its trees move at lease expiry.
 * - `deadAmong(keys)` is one statement: the registered keys whose lock a
 *   shared `pg_try_advisory_lock_shared` can take now (and gives back in the
 *   same statement).
 * - `awaitChange(keys)` waits, one connection per watched key whose lock is
 *   held, in a blocking `pg_advisory_lock_shared` — granted the moment the
 *   holder's session ends — and gives it back at once. No polling.
 *
 * Where the session is not the instance's own — a pooler in transaction or
 * statement mode (pgbouncer) between baton and the server — the backend
 * pid Postgres reports differs from the one the connection was given at
 * startup, and a second connection is served by the same server session:
 * `register` then fails, and the runtime falls back to lease expiry (it
 * says so at start and in readiness). A pooler in session mode keeps one
 * server session per client connection and resets it when the client goes
 * (pgbouncer's `server_reset_query`, `DISCARD ALL` by default, frees the
 * lock): there the lock works as over a direct connection.
 *
 * @since 0.1.0
 */
import { PgClient, PgConnection } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Queue } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { createHash } from "node:crypto"
import { type BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { InstanceLiveness, type InstanceLivenessShape } from "../../src/stores/InstanceLiveness.ts"
import { kindOf } from "../sql/internal/classify.ts"
import { sqlErrorDetail, transaction } from "../sql/internal/rows.ts"
import * as SqlTables from "../sql/SqlTables.ts"
import * as Pooling from "./internal/pooling.ts"
import { lockClass, lockKey } from "./PgMigrations.ts"
import { againOnLostConnection } from "./internal/lostConnection.ts"

/**
 * The deployment whose instances are watched (schema and table prefix).
 *
 * @category models
 * @since 0.1.0
 */
export interface PgLivenessOptions extends SqlTables.SqlStoreOptions {
  readonly schema?: string | undefined
}

/**
 * The advisory lock key of an instance key in a deployment: 64 bits of a SHA-256, as a bigint literal.
 */
const lockKeyOf = (options: PgLivenessOptions, key: string): string =>
  createHash("sha256").update(`${options.schema ?? ""}.${options.tablePrefix ?? SqlTables.defaultTablePrefix}/${key}`).digest()
    .readBigInt64BE(0).toString()

/** How many times an instance's first liveness session is opened when cut connections fail it. */
const firstSessionAttempts = 5

const failed = (operation: string, reason?: string) => (e: SqlError) =>
  new StoreError({ store: "InstanceLiveness", operation, reason: reason ?? sqlErrorDetail(e), kind: kindOf(e), cause: e })

/**
 * Provides `InstanceLiveness` over the pool in context (its config opens the lock and watch connections).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgLivenessOptions = {}): Layer.Layer<InstanceLiveness, BatonConfigError | StoreError, PgClient.PgClient> =>
  Layer.effect(
    InstanceLiveness,
    Effect.gen(function*() {
      const client = yield* PgClient.PgClient
      const tables = yield* SqlTables.make(options)
      const table = `"${tables.prefix}instances"`
      // Built beside the migrations (not after them): the schema may not be there yet. Under the migrations' own
      // lock, so that two creations of the schema never race.
      const ddl = [
        ...(options.schema === undefined ? [] : [`CREATE SCHEMA IF NOT EXISTS "${options.schema}"`]),
        `CREATE TABLE IF NOT EXISTS ${table} (instance_key TEXT PRIMARY KEY, lock_key BIGINT NOT NULL, registered_at TIMESTAMPTZ NOT NULL DEFAULT now())`
      ]
      yield* transaction(
        client,
        Effect.andThen(
          client`SELECT pg_advisory_xact_lock(${lockClass}, ${lockKey(options)})`,
          Effect.forEach(ddl, (statement) => client.unsafe(statement), { discard: true })
        )
      ).pipe(Effect.mapError(failed("migrate")), againOnLostConnection)
      // Named after the pool's application name: `<name> liveness` holds the lock, `<name> watch` waits on peers'.
      const named = (role: string): PgConnection.Config => ({
        ...client.config,
        keepAlive: Duration.seconds(10),
        applicationName: `${client.config.applicationName ?? "baton"} ${role}`
      })
      const lockConfig = named("liveness")
      const connectionConfig = named("watch")
      const channelOf = (lockKey: string) => `baton_live_${lockKey.replace("-", "m")}`
      /** Where a registration is announced, per deployment. */
      const registrations = `baton_registered_${lockKeyOf(options, "").replace("-", "m")}`

      /** One session holding the lock: resolves `ready` once held and recorded, then waits until the session ends. */
      const session = (key: string, lockKey: string, ready: Deferred.Deferred<void, StoreError>, state: { held: boolean }) =>
        Effect.scoped(Effect.gen(function*() {
          const connection = yield* PgConnection.make(lockConfig).pipe(Effect.mapError(failed("connect")))
          // PG 14+ only; older servers have no idle session timeout to switch off.
          yield* connection.query("SET idle_session_timeout = 0").pipe(Effect.ignore)
          // Asked before locking: through a pooler the lock would stay with a server session the pooler keeps.
          const [own] = (yield* connection.query("SELECT pg_backend_pid() AS pid").pipe(Effect.mapError(failed("lock")))).rows
          // A pooler in session mode keeps this server session for this connection and resets it (DISCARD ALL frees
          // the lock) when the connection goes: the lock dies with the process there too.
          const pooling = Number(own?.pid) === connection.processId ? "direct" : yield* Pooling.poolingOf(lockConfig, connection).pipe(Effect.mapError(failed("lock")))
          if (pooling === "transaction") {
            return yield* new StoreError({
              store: "InstanceLiveness",
              operation: "lock",
              kind: "Config",
              reason:
                `the session is not this connection's own (backend pid ${String(own?.pid)}, connection given ${connection.processId}): a pooler in transaction or statement mode sits between baton and Postgres, so a session lock would not die with this process; connect the instances to Postgres directly (or through a session-mode pool) for crash takeover`
            })
          }
          const [row] = (yield* connection.query("SELECT pg_try_advisory_lock($1::bigint) AS got", [lockKey]).pipe(Effect.mapError(failed("lock")))).rows
          if (row?.got !== true) {
            // Held by a watcher's momentary shared lock (or a session of ours not yet gone): try again shortly.
            return yield* new StoreError({ store: "InstanceLiveness", operation: "lock", kind: "Busy", reason: "the liveness lock is held for a moment; taking it again" })
          }
          yield* connection.query(`INSERT INTO ${table} (instance_key, lock_key) VALUES ($1, $2::bigint) ON CONFLICT (instance_key) DO NOTHING`, [
            key,
            lockKey
          ]).pipe(Effect.mapError(failed("register")))
          yield* connection.query("SELECT pg_notify($1, '')", [registrations]).pipe(Effect.ignore)
          // Crashed instances' keys are kept (so they read as dead) for a day, far past any lease: then forgotten.
          yield* connection.query(
            `DELETE FROM ${table} WHERE registered_at < now() - interval '1 day'
               AND CASE WHEN pg_try_advisory_lock_shared(lock_key) THEN pg_advisory_unlock_shared(lock_key) ELSE false END`
          ).pipe(Effect.ignore)
          // A graceful end: the key is forgotten before the session (and its lock) goes, so it never reads as dead.
          yield* Effect.addFinalizer((exit) =>
            Exit.hasInterrupts(exit) ? connection.query(`DELETE FROM ${table} WHERE instance_key = $1`, [key]).pipe(Effect.ignore) : Effect.void
          )
          const lost = yield* Effect.scoped(Effect.gen(function*() {
            const notifications = yield* connection.listen(channelOf(lockKey))
            state.held = true
            yield* Deferred.succeed(ready, void 0)
            return yield* Effect.forever(Queue.take(notifications))
          })).pipe(Effect.flip)
          return yield* Effect.fail(failed("hold", `the liveness session ended: ${sqlErrorDetail(lost as SqlError)}`)(lost as SqlError))
        }))

      const register = (key: string, onLost?: () => void) =>
        Effect.gen(function*() {
          const lockKey = lockKeyOf(options, key)
          const ready = yield* Deferred.make<void, StoreError>()
          const state = { held: false }
          // A first session lost to a cut connection (a restart, a terminated backend) is tried again, a few times.
          let firstTries = 0
          // Held for the scope: a lost session is opened and locked again; a first one that cannot be had fails `register`.
          const loop = session(key, lockKey, ready, state).pipe(
            Effect.catch((e) =>
              Effect.flatMap(Deferred.isDone(ready), (registered) =>
                registered
                  ? Effect.sync(() => {
                    // Told at once: peers may take this instance's trees from now on.
                    if (state.held) onLost?.()
                    state.held = false
                  }).pipe(Effect.andThen(Effect.logWarning(`instance liveness lock lost; taking it again (peers may take this instance's trees meanwhile): ${e.message}`).pipe(
                    Effect.andThen(Effect.sleep(Duration.millis(200)))
                  )))
                  : e.kind === "Busy"
                  ? Effect.sleep(Duration.millis(20))
                  : e.kind === "Connection" && ++firstTries < firstSessionAttempts
                  ? Effect.sleep(Duration.millis(200))
                  : Effect.andThen(Deferred.fail(ready, e), Effect.never))
            ),
            Effect.forever
          )
          const fiber = yield* Effect.forkScoped(loop)
          yield* Deferred.await(ready).pipe(Effect.onError(() => Fiber.interrupt(fiber)))
          return { held: () => state.held }
        })

      const deadAmong = (keys: ReadonlyArray<string>) =>
        keys.length === 0 ? Effect.succeed([]) : client.unsafe<{ instance_key: string }>(
          `SELECT instance_key FROM ${table}
           WHERE instance_key IN (SELECT jsonb_array_elements_text($1::jsonb))
             AND CASE WHEN pg_try_advisory_lock_shared(lock_key) THEN pg_advisory_unlock_shared(lock_key) ELSE false END`,
          [JSON.stringify(keys)]
        ).pipe(Effect.map((rows) => rows.map((r) => r.instance_key)), Effect.mapError(failed("deadAmong")))

      /** Every registered key, and whether its lock is free now (its holder gone). */
      const everyKey = client.unsafe<{ instance_key: string; lock_key: string; free: boolean }>(
        `SELECT instance_key, lock_key::text AS lock_key,
                CASE WHEN pg_try_advisory_lock_shared(lock_key) THEN pg_advisory_unlock_shared(lock_key) ELSE false END AS free
         FROM ${table}`
      ).pipe(Effect.mapError(failed("watch")))

      /** Blocks until the lock is free (its holder's session ended), then gives back the shared lock it got. */
      const waitFree = (lockKey: string) =>
        Effect.scoped(Effect.gen(function*() {
          const connection = yield* PgConnection.make(connectionConfig).pipe(Effect.mapError(failed("connect")))
          yield* connection.query("SELECT pg_advisory_lock_shared($1::bigint)", [lockKey]).pipe(Effect.mapError(failed("watch")))
          yield* connection.query("SELECT pg_advisory_unlock_shared($1::bigint)", [lockKey]).pipe(Effect.ignore)
        }))

      /** Resolves at the next registration of an instance (its NOTIFY). */
      const aRegistration = (listening: Deferred.Deferred<void>) =>
        Effect.scoped(Effect.gen(function*() {
          const connection = yield* PgConnection.make(connectionConfig).pipe(Effect.mapError(failed("connect")))
          const notifications = yield* connection.listen(registrations).pipe(Effect.mapError(failed("watch")))
          yield* Deferred.succeed(listening, void 0)
          yield* Queue.take(notifications).pipe(Effect.mapError(failed("watch")))
        }))

      const awaitDeath = (known: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>, StoreError> =>
        Effect.gen(function*() {
          while (true) {
            // Listening first: an instance registering while the keys are read wakes the wait below.
            const listening = yield* Deferred.make<void>()
            const registered = yield* Effect.forkChild(aRegistration(listening), { startImmediately: true })
            yield* Effect.raceFirst(Deferred.await(listening), Fiber.join(registered))
            const rows = yield* everyKey
            const dead = rows.filter((r) => r.free).map((r) => r.instance_key)
            if (dead.some((k) => !known.includes(k))) {
              yield* Fiber.interrupt(registered)
              return dead
            }
            // One connection per held lock, each blocked until its holder's session ends.
            yield* Effect.raceAll([Fiber.join(registered), ...rows.filter((r) => !r.free).map((r) => waitFree(r.lock_key))]).pipe(
              Effect.ensuring(Fiber.interrupt(registered))
            )
          }
        })

      return {
        kind: "Postgres session advisory lock",
        register,
        deadAmong,
        awaitDeath
      } satisfies InstanceLivenessShape
    })
  )
