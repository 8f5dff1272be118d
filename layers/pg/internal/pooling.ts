/**
 * How connections made with a config reach Postgres: directly, through a
 * pooler that keeps a server session per client (session mode), or through
 * one that hands server sessions to other clients between transactions
 * (transaction or statement mode). Shared by the client (no prepared
 * statements in transaction mode), the liveness lock, the wake-ups and the
 * probe.
 *
 * - A connection whose `pg_backend_pid()` is not the process id the login
 *   answered sits behind a pooler (pgbouncer answers logins itself).
 * - Behind one, a second connection opened while the first is idle but open
 *   is served by the first one's server session only when the pooler moves
 *   sessions between clients. A busy pool that gives the second client
 *   another session reads as session mode: never falsely transaction mode,
 *   though it may miss it.
 *
 * @since 0.1.0
 */
import { PgConnection } from "@effect/sql-pg"
import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { PgPooling } from "../../../src/stores/StoreProbe.ts"

/** Tries of the sharing test. */
const tries = 3

/** The server session's process id, as the server itself says. */
export const backendPid = (connection: PgConnection.PgConnection): Effect.Effect<number, SqlError> =>
  Effect.map(connection.query("SELECT pg_backend_pid() AS pid", [], false), (r) => Number(r.rows[0]?.pid))

/** Whether `connection` (open) is its own server session. */
export const isOwnSession = (connection: PgConnection.PgConnection): Effect.Effect<boolean, SqlError> =>
  Effect.map(backendPid(connection), (pid) => pid === connection.processId)

/** The pooling of `connection` (open, made with `config`): one or a few more connections are opened and closed. */
export const poolingOf = (config: PgConnection.Config, connection: PgConnection.PgConnection): Effect.Effect<PgPooling, SqlError> =>
  Effect.gen(function*() {
    const pid = yield* backendPid(connection)
    if (pid === connection.processId) return "direct"
    for (let i = 0; i < tries; i++) {
      const other = yield* Effect.scoped(Effect.flatMap(PgConnection.make({ ...config, prepare: false }), backendPid))
      if (other === pid) return "transaction"
    }
    return "session"
  })

/** The pooling of connections made with `config`, on a connection of its own. */
export const detect = (config: PgConnection.Config): Effect.Effect<PgPooling, SqlError> =>
  Effect.scoped(Effect.flatMap(PgConnection.make({ ...config, prepare: false }), (connection) => poolingOf(config, connection)))
