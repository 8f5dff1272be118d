/**
 * The `StoreProbe` of Postgres: how baton's connections reach the server —
 * straight, or through a pooler in session or in transaction mode — and how
 * long the server takes to notice a client that vanished (its TCP
 * keepalives). Connections of its own, opened and closed by each probe,
 * answer it:
 *
 * - A connection whose `pg_backend_pid()` is not the process id the server
 *   gave at login sits behind a pooler (pgbouncer answers the login itself).
 * - Behind a pooler, a second connection opened while the first stays open
 *   is served by the first one's server session when the pooler hands
 *   sessions around between transactions (transaction or statement mode);
 *   in session mode each client keeps its own. A pooler that still gives the
 *   second client a session of its own (a busy pool) reads as session mode.
 * - The keepalives are the server's `tcp_keepalives_*` of that connection's
 *   socket (`pg_settings` shows the values the socket uses).
 *
 * @since 0.1.0
 */
import { PgClient, PgConnection } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { StoreError } from "../../src/stores/Errors.ts"
import { type PgFacts, StoreProbe } from "../../src/stores/StoreProbe.ts"
import { kindOf } from "../sql/internal/classify.ts"
import { sqlErrorDetail } from "../sql/internal/rows.ts"
import * as Pooling from "./internal/pooling.ts"

const failed = (e: SqlError) =>
  new StoreError({ store: "StoreProbe", operation: "probe", reason: sqlErrorDetail(e), kind: kindOf(e), cause: e })

const settingsQuery = `SELECT name, setting FROM pg_settings
  WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'server_version_num')`

/** The facts, over connections made with `config`. */
const facts = (config: PgConnection.Config): Effect.Effect<PgFacts, SqlError> =>
  Effect.scoped(Effect.gen(function*() {
    const connection = yield* PgConnection.make({ ...config, prepare: false })
    const pooling = yield* Pooling.poolingOf(config, connection)
    const rows = (yield* connection.query(settingsQuery, [], false)).rows
    const value = (name: string) => {
      const row = rows.find((r) => r.name === name)
      return row === undefined ? undefined : Number(row.setting)
    }
    const [idle, interval, count] = [value("tcp_keepalives_idle"), value("tcp_keepalives_interval"), value("tcp_keepalives_count")]
    // 0 on a Unix socket (no keepalives there); on TCP the socket's own values.
    const keepaliveSeconds = idle === undefined || interval === undefined || count === undefined || idle === 0 ? undefined : idle + interval * count
    return { pooling, keepaliveSeconds, serverVersion: value("server_version_num") ?? 0 }
  }))

/**
 * The probe over the pool in context (its connection settings; the probe's
 * own connections are opened outside the pool).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<StoreProbe, never, PgClient.PgClient> = Layer.effect(
  StoreProbe,
  Effect.gen(function*() {
    const client = yield* PgClient.PgClient
    const config = { ...client.config, applicationName: `${client.config.applicationName ?? "baton"} probe` }
    return { probe: Effect.map(Effect.mapError(facts(config), failed), (found) => ({ _tag: "Postgres" as const, ...found })) }
  })
)
