/**
 * The Postgres client baton's stores run on: `@effect/sql-pg`'s pooled
 * `PgClient` (it speaks the wire protocol itself, prepares statements and
 * offers LISTEN/NOTIFY), built from a connection URL and checked at build.
 *
 * - The URL comes from `options.url`, else the `BATON_PG_URL` config. Missing,
 *   empty or not a `postgres://` / `postgresql://` URL → `BatonConfigError`
 *   naming the setting (the password is never echoed).
 * - At build one `SELECT 1` checks the server within `connectTimeout`
 *   (default 5 s): an unreachable server is a `StoreError` (operation
 *   "connect") naming the host and the setting to fix; a refused login or a
 *   missing database is a `BatonConfigError`. A connection the server
 *   accepted and then closed mid-check (a restart, a failover, a terminated
 *   backend) is retried on a new one within the same bound. The Layer never
 *   hangs.
 * - A URL may name several hosts, as libpq reads them
 *   (`postgres://user@10.0.0.1:5432,10.0.0.2:5432/db?target_session_attrs=read-write`):
 *   each new connection goes to the first host, in order, that accepts one
 *   and takes the sessions `target_session_attrs` asks for (`any`,
 *   `read-write`: not read-only, `primary`: not in recovery; asked on a short
 *   connection of its own), starting from the one that served last. After a
 *   failover the pool's new connections reach the promoted primary.
 * - `schema` (optional) puts every baton table in that schema: it becomes the
 *   connections' `search_path`, and the migrations create it. With the table
 *   prefix of the store options this lets several apps share one database.
 * - A pool of `maxConnections` (default 10) connections; statements are
 *   prepared once per connection and reused — except through a pooler in
 *   transaction mode (pgbouncer `pool_mode=transaction`), found at build on
 *   a connection of its own: there every statement is parsed unnamed, since
 *   a statement prepared on one server session is gone on the next.
 *
 * @since 0.1.0
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import * as Options from "../../src/stores/internal/options.ts"
import { durationMillis, optionOrSetting, show, wholeNumber } from "../sql/internal/config.ts"
import * as MultiHost from "./internal/multiHost.ts"
import * as Pooling from "./internal/pooling.ts"

/**
 * The config setting read when no `url` is given.
 *
 * @category config
 * @since 0.1.0
 */
export const urlSetting = "BATON_PG_URL"

/**
 * Where the Postgres server is and how to connect to it.
 *
 * @category models
 * @since 0.1.0
 */
export interface PgClientOptions {
  /** `postgres://user:password@host:5432/database`. Default: the `BATON_PG_URL` config. */
  readonly url?: string | Redacted.Redacted<string> | undefined
  /**
   * The schema baton's tables live in (created by the migrations); default:
   * the server's `search_path` (usually `public`). A plain identifier.
   */
  readonly schema?: string | undefined
  /** Connections in the pool: 1 to 1,000. Default 10. */
  readonly maxConnections?: number | undefined
  /** How long opening one connection (TCP, TLS, login) may take: 1 ms to 10 minutes. Default 5 seconds. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Shown in `pg_stat_activity`: at most 63 bytes (what Postgres keeps of it), no control characters. Default `"baton"`. */
  readonly applicationName?: string | undefined
  /** TLS: `true`, node's TLS options, or from the URL's `sslmode` when unset. */
  readonly ssl?: PgClient.PgClientConfig["ssl"]
}

/**
 * What the options resolved to (no password).
 *
 * @category models
 * @since 0.1.0
 */
export interface PgTarget {
  /** The setting the URL came from: `url` or `BATON_PG_URL`. */
  readonly field: string
  /** `host:port/database`, for messages. */
  readonly where: string
  readonly schema: string | undefined
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** The most connections one pool opens. */
const maxPoolSize = 1_000

/** Postgres keeps 63 bytes of a name (NAMEDATALEN − 1); a longer startup parameter breaks the connection. */
const maxNameBytes = 63

const checkApplicationName = (name: unknown): Effect.Effect<string, BatonConfigError> =>
  Effect.flatMap(Options.setting("applicationName", name, Options.text({ maxLength: maxNameBytes, why: "what Postgres keeps of it" }), "baton"), (text) => {
    // deno-lint-ignore no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(text)) {
      return Effect.fail(new BatonConfigError({ field: "applicationName", reason: `is ${show(text)}: it must hold no control characters` }))
    }
    const bytes = new TextEncoder().encode(text).length
    return bytes <= maxNameBytes
      ? Effect.succeed(text)
      : Effect.fail(new BatonConfigError({ field: "applicationName", reason: `is ${bytes} bytes in UTF-8: it must be at most ${maxNameBytes} (what Postgres keeps of it)` }))
  })
const defaultConnectTimeout = Duration.seconds(5)

/**
 * Checks a schema name for baton's tables: a plain identifier, and not one of
 * Postgres's own schemas (`pg_catalog`, `information_schema`, `pg_toast`, any
 * name starting `pg_`, which Postgres reserves).
 *
 * @category config
 * @since 0.1.0
 */
export const checkSchema = (schema: unknown): Effect.Effect<string | undefined, BatonConfigError> => {
  if (schema === undefined) return Effect.succeed(undefined)
  if (typeof schema !== "string" || !identifier.test(schema)) {
    return Effect.fail(new BatonConfigError({
      field: "schema",
      reason: `is ${show(schema)}: it must be up to 63 letters, digits or "_", starting with a letter or "_"`
    }))
  }
  if (/^pg_/i.test(schema) || schema.toLowerCase() === "information_schema") {
    return Effect.fail(new BatonConfigError({
      field: "schema",
      reason: `is "${schema}", a schema of Postgres itself (names starting "pg_" and "information_schema" are reserved): choose a schema of your own, e.g. "baton"`
    }))
  }
  return Effect.succeed(schema)
}

/**
 * Checks the options and reads the URL; every problem is a `BatonConfigError` naming its field.
 *
 * @category utils
 * @since 0.1.0
 */
export const resolve = (options: PgClientOptions = {}): Effect.Effect<
  { readonly config: PgClient.PgPoolConfig; readonly target: PgTarget; readonly connectTimeout: Duration.Duration },
  BatonConfigError
> =>
  Effect.gen(function*() {
    const given = Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url
    const { value: raw, field } = yield* optionOrSetting("url", given, urlSetting)
    if (raw === undefined) {
      return yield* new BatonConfigError({
        field,
        reason: `is not set: set ${urlSetting} (or pass \`url\`) to the Postgres every instance shares, e.g. postgres://user:password@host:5432/database`
      })
    }
    if (typeof raw !== "string" || raw.trim().length === 0) {
      return yield* new BatonConfigError({ field, reason: "is empty: it must be a URL like postgres://user:password@host:5432/database" })
    }
    const hosts = MultiHost.parse(raw.trim())
    if (typeof hosts === "string") return yield* new BatonConfigError({ field, reason: hosts })
    let url: URL
    try {
      url = new URL(hosts === undefined ? raw.trim() : hosts.singleUrl)
    } catch {
      return yield* new BatonConfigError({
        field,
        reason: "is not a valid URL (not shown: it may hold a password): it must look like postgres://user:password@host:5432/database"
      })
    }
    if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
      return yield* new BatonConfigError({
        field,
        reason: `has scheme "${url.protocol}": it must be a postgres:// or postgresql:// URL`
      })
    }
    if (url.port !== "" && !(Number(url.port) >= 1 && Number(url.port) <= 65535)) {
      return yield* new BatonConfigError({ field, reason: `names port ${url.port}: it must be 1 to 65535` })
    }
    yield* checkSchema(options.schema)
    const maxConnections = yield* wholeNumber("maxConnections", options.maxConnections ?? 10, 1, maxPoolSize, "a server allows 100 connections by default")
    const applicationName = yield* checkApplicationName(options.applicationName)
    // The option, else the URL's `connect_timeout` (seconds) when > 0, else 5 s: never unbounded.
    const fromUrl = Number(url.searchParams.get("connect_timeout") ?? NaN)
    const timeout = options.connectTimeout !== undefined
      ? Option.some(Duration.millis(
        yield* durationMillis("connectTimeout", options.connectTimeout, { min: 1, max: 600_000, why: "a longer wait only hides an unreachable server" })
      ))
      : Option.some(Number.isInteger(fromUrl) && fromUrl > 0 ? Duration.seconds(fromUrl) : defaultConnectTimeout)
    if (Option.isNone(timeout)) {
      return yield* new BatonConfigError({ field: "connectTimeout", reason: "must be a finite duration > 0" })
    }
    const host = url.searchParams.get("host") ?? (url.hostname === "" ? "localhost" : url.hostname)
    const port = url.searchParams.get("port") ?? (url.port === "" ? "5432" : url.port)
    let database: string
    try {
      database = url.searchParams.get("dbname") ?? decodeURIComponent(url.pathname.replace(/^\//, ""))
    } catch {
      return yield* new BatonConfigError({ field, reason: "has a database name with invalid %-encoding" })
    }
    const single: PgClient.PgPoolConfig = {
      url: Redacted.make(hosts === undefined ? raw.trim() : hosts.singleUrl),
      maxConnections,
      connectTimeout: timeout.value,
      applicationName,
      ...(options.ssl !== undefined ? { ssl: options.ssl } : {}),
      ...(options.schema !== undefined ? { startupParameters: { search_path: `"${options.schema}"` } } : {})
    }
    // Several hosts: each new connection goes to the first that takes the sessions `target_session_attrs` asks for.
    const config: PgClient.PgPoolConfig = hosts === undefined ? single : { ...single, stream: MultiHost.streamOf(hosts, single) }
    return {
      config,
      connectTimeout: timeout.value,
      target: {
        field,
        where: hosts === undefined ? `${host}:${port}/${database === "" ? "(default database)" : database}` : MultiHost.where(hosts),
        schema: options.schema
      }
    }
  })

/** The server accepted the connection, then closed it while a statement ran. */
const closedMidQuery = (error: SqlError): boolean => error.reason._tag === "ConnectionError" && error.reason.operation === "query"

/** A failure of the build-time check, as a typed error that says what to fix. */
const connectFailure = (target: PgTarget, error: SqlError): StoreError | BatonConfigError => {
  const reason = error.reason
  const cause = reason.cause as { readonly code?: unknown; readonly message?: unknown } | undefined
  const detail = typeof cause?.message === "string" && cause.message !== "" ? cause.message : reason.message || reason._tag
  const code = cause?.code
  if (reason._tag === "AuthenticationError" || reason._tag === "AuthorizationError" || code === "28P01" || code === "28000") {
    return new BatonConfigError({
      field: target.field,
      reason: `was refused by Postgres at ${target.where} (${detail}): check the user and password it names`
    })
  }
  if (target.schema !== undefined && /unsupported startup parameter: search_path/.test(detail)) {
    return new BatonConfigError({
      field: "schema",
      reason:
        `cannot be set through the pooler at ${target.where} (${detail}): baton sets the schema as the connections' search_path, which pgbouncer refuses at login. Leave \`schema\` unset and keep deployments apart by \`tablePrefix\`, or put the schema in the role's search_path (ALTER ROLE … SET search_path = …) and leave \`schema\` unset, or connect to Postgres directly`
    })
  }
  if (code === "3D000") {
    return new BatonConfigError({
      field: target.field,
      reason: `names a database that does not exist at ${target.where} (${detail}): create it or fix the database name`
    })
  }
  return new StoreError({
    store: "PgClient",
    operation: "connect",
    kind: "Connection",
    reason: `cannot reach Postgres at ${target.where} (${detail}): check that the server is running and accepts connections there, and that \`${target.field}\` names the right host and port`,
    cause: error
  })
}

/**
 * The pooled client in the current scope, checked with a `SELECT 1`
 * (bounded by the connect timeout; again on a new connection when the server
 * closed the first mid-check) before it is handed out.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: PgClientOptions = {}) =>
  Effect.gen(function*() {
    const { config: resolved, connectTimeout, target } = yield* resolve(options)
    const pooling = yield* checked(Pooling.detect(resolved), target, connectTimeout)
    // Through a pooler in transaction mode a statement prepared on one server session is gone on the next.
    const config = pooling === "transaction" ? { ...resolved, prepare: false } : resolved
    const client = yield* PgClient.make(config).pipe(Effect.mapError((e) => connectFailure(target, e)))
    yield* checked(client`SELECT 1`, target, connectTimeout)
    return { client, target, pooling }
  })

/** `check` bounded as the build's check is: again on a new connection when the server closed one mid-check, at most the connect timeout and a second. */
const checked = <A>(check: Effect.Effect<A, SqlError>, target: PgTarget, connectTimeout: Duration.Duration) =>
  check.pipe(
      // A connection the server accepted and then closed (a restart, a failover, a terminated backend) may be
      // followed by one that works: check again on a new one, within the same time bound.
      Effect.retry({ while: closedMidQuery, schedule: Schedule.spaced("100 millis") }),
      Effect.mapError((e) => connectFailure(target, e)),
      // The pool applies the connect timeout to each attempt; this bounds the whole check.
      Effect.timeoutOrElse({
        duration: Duration.sum(connectTimeout, Duration.seconds(1)),
        orElse: () =>
          Effect.fail(
            new StoreError({
              store: "PgClient",
              operation: "connect",
              kind: "Connection",
              reason: `Postgres at ${target.where} did not answer within ${Duration.format(connectTimeout)}: check that the server is running there and that \`${target.field}\` names the right host and port`
            })
          )
      })
    )

/**
 * Provides `@effect/sql-pg`'s `PgClient` and effect's `SqlClient` (one pool, closed with the Layer).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: PgClientOptions = {}): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, StoreError | BatonConfigError> =>
  PgClient.layerFrom(Effect.map(make(options), ({ client }) => client)) as Layer.Layer<
    PgClient.PgClient | SqlClient.SqlClient,
    StoreError | BatonConfigError
  >
