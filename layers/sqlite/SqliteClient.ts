/**
 * A `SqlClient` over Node's built-in `node:sqlite`, one connection per Layer.
 *
 * Why it exists: effect 4.1 has no stable SQLite driver for Node
 * (`@effect/sql-sqlite-node` only ships `4.0.0-beta.102`, which imports the
 * removed `effect/unstable/*` paths and fails to load). So this is a small
 * driver of ours on effect's own client constructor (`SqlClient.make`) and
 * SQLite acquirers (`SqlClient.makeSqliteAcquirers`); it is no general
 * SQLite package — it does what baton's stores need, and no native build.
 *
 * Behaviour:
 * - one connection per Layer build, opened on first use (not at build), closed
 *   when the Layer's scope closes; fibers share it through a semaphore;
 * - WAL journal; `synchronous=NORMAL` by default: a commit survives a crash of
 *   the process (what baton guards against) without an fsync per commit; choose
 *   `"FULL"` to survive a power loss too, at an fsync per commit;
 * - busy timeout 5 s by default: a writer waits that long for another
 *   connection's write lock. `node:sqlite` is synchronous, so the wait blocks
 *   this process's event loop; with two connections in ONE process use
 *   `busyTimeout: 0` — a statement that finds the database locked outside a
 *   transaction (and `BEGIN IMMEDIATE` itself) is then retried after yielding
 *   the fiber, so the other connection's holder can commit meanwhile;
 * - every transaction starts with `BEGIN IMMEDIATE` (it takes the write lock
 *   first: a plain `BEGIN` could fail later when it upgrades); a rollback when
 *   no transaction is active (a `BEGIN` that failed busy) is a no-op;
 * - the path comes from `options.path`, else the `BATON_SQLITE_PATH` config;
 *   missing or empty → `BatonConfigError` naming the setting; a path in a
 *   folder that does not exist → `BatonConfigError` naming the path.
 *   `":memory:"` is allowed: it is a private database of this one connection
 *   (two Layers never share it — use a temporary file for several instances).
 * - the write-ahead log is checkpointed in the background by default (a
 *   second connection in a worker thread, on the Clock), so no commit waits
 *   for a checkpoint; `walCheckpoint: "inline"` leaves it to SQLite;
 * - prepared statements are kept per connection, keyed by their SQL;
 * - a database file deleted or replaced while open is noticed: its identity
 *   (device and inode) is checked at each `BEGIN`, before each write outside
 *   a transaction and at each ping; from then on every statement fails with a
 *   `SqlError` whose cause has code `BATON_SQLITE_DETACHED` (the stores report
 *   a permanent `StoreError` of kind "Config"), and nothing is written to
 *   the detached file;
 * - it offers synchronous access to hot paths (`SyncAccess`, used by the
 *   checkpoint saver): an operation runs at once, in one go, when no fiber
 *   holds the connection — `node:sqlite` is synchronous anyway, so this only
 *   skips effect's per-statement machinery.
 *
 * @since 0.1.0
 */
import type { DatabaseSync, StatementSync } from "node:sqlite"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Context, Duration, Effect, Layer, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient } from "effect/sql"
import type { Connection } from "effect/sql/SqlConnection"
import { classifySqliteError, ConnectionError, SqlError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import { BatonConfigError } from "../../src/stores/Errors.ts"
import { refuseUnknown } from "../../src/stores/internal/options.ts"
import { durationMillis, optionOrSetting, show, wholeNumber } from "../sql/internal/config.ts"
import { SyncAccess, type SyncCapable } from "../sql/internal/direct.ts"
import * as WalCheckpointer from "./internal/walCheckpointer.ts"

/**
 * The config setting read when no `path` is given.
 *
 * @category config
 * @since 0.1.0
 */
export const pathSetting = "BATON_SQLITE_PATH"

export type {
  /**
   * Where the SQLite file is and how the connection is opened.
   *
   * @category models
   * @since 0.1.0
   */
  SqliteClientOptions
} from "./internal/clientOptions.ts"

export type {
  /**
   * What one background WAL checkpoint did (see `walCheckpoint`).
   *
   * @category models
   * @since 0.1.0
   */
  Outcome as WalCheckpointOutcome
} from "./internal/walCheckpointer.ts"
import { clientAndBreakerFields, type SqliteClientOptions } from "./internal/clientOptions.ts"

/**
 * The fields the client accepts: its own, and those of the bundles over it
 * that are documented to take one options object with it (`SqliteStores`,
 * `SqliteLimiters`, `SqliteWakeups`): any other is refused at build.
 */
const acceptedFields = [...Object.keys(clientAndBreakerFields), "wakeups"]

/**
 * The client: effect's `SqlClient`, plus what it was opened with.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteClient extends SqlClient.SqlClient {
  readonly path: string
  readonly busyTimeoutMillis: number
  readonly synchronous: "NORMAL" | "FULL"
  /** Runs one background WAL checkpoint now (undefined when checkpoints are `"inline"`). */
  readonly walCheckpoint: Effect.Effect<WalCheckpointer.Outcome> | undefined
}

/**
 * The service of the SQLite client: effect's `SqlClient` plus the path and settings it was opened with.
 *
 * @category services
 * @since 0.1.0
 */
export const SqliteClient = Context.Service<SqliteClient>("baton/sqlite/SqliteClient")

interface Prepared {
  readonly statement: StatementSync
  /** False for statements that return no columns (DDL, plain INSERT, BEGIN…): run() is cheaper. */
  readonly reader: boolean
}

const toSqlError = (cause: unknown, operation: string, message?: string): SqlError => {
  // node:sqlite reports the SQLite result code as `errcode`; effect's classifier reads `errno`.
  if (cause !== null && typeof cause === "object" && typeof (cause as any).errcode === "number" && (cause as any).errno === undefined) {
    ;(cause as any).errno = (cause as any).errcode
  }
  return new SqlError({
    reason: classifySqliteError(cause, { message: message ?? (cause instanceof Error ? cause.message : String(cause)), operation })
  })
}

const bind = (params: ReadonlyArray<unknown>): Array<any> => {
  const out = new Array(params.length)
  for (let i = 0; i < params.length; i++) {
    const p = params[i]
    out[i] = p === undefined ? null : typeof p === "boolean" ? (p ? 1 : 0) : p instanceof Date ? p.toISOString() : p
  }
  return out
}

/**
 * The code of the error a connection raises once its file was deleted or replaced (classified "Config").
 *
 * @category utils
 * @since 0.1.0
 */
export const detachedCode = "BATON_SQLITE_DETACHED"

/** The identity of the file at `path` (device and inode), or undefined when no file is there. */
const identityOf = (path: string): string | undefined => {
  const stat = Fs.statSync(path, { throwIfNoEntry: false })
  return stat === undefined ? undefined : `${stat.dev}:${stat.ino}`
}

/**
 * Watches that the file a connection opened is still the one at its path:
 * unlinked (with its -wal/-shm) or replaced, the connection would go on
 * reading and writing a file no other instance sees. Checked (one `stat`) at
 * each `BEGIN`, before each write outside a transaction and at each ping
 * (`SELECT 1`), so a ping fails and no write reaches a detached file. Once
 * detached, always detached: every statement fails.
 */
class FileIdentity {
  readonly path: string
  readonly opened: string | undefined
  detached = false

  constructor(path: string) {
    this.path = path
    this.opened = path === ":memory:" || path.startsWith("file:") ? undefined : identityOf(path)
  }

  /** Throws the detached error when the file at the path is no longer the one opened. */
  check(): void {
    if (this.opened === undefined) return
    if (!this.detached && identityOf(this.path) !== this.opened) this.detached = true
    if (this.detached) {
      throw Object.assign(
        new Error(
          `SQLite database "${this.path}" was deleted or replaced while open: this connection's file is no longer the one at the path, so other instances cannot see what it holds; nothing more is read from or written to it. Restore the file or restart the instance on the right file`
        ),
        { code: detachedCode }
      )
    }
  }
}

const plainRead = /^\s*SELECT\b/i
const ping = /^\s*SELECT\s+1\s*;?\s*$/i
const checked = new Map<string, boolean>()
/** Whether a statement (outside a transaction) checks the file's identity: all but plain reads; the ping does. */
const checksFile = (sql: string): boolean => {
  let yes = checked.get(sql)
  if (yes === undefined) {
    yes = !plainRead.test(sql) || ping.test(sql)
    if (checked.size < 4096) checked.set(sql, yes)
  }
  return yes
}

/**
 * `node:sqlite`, loaded when a database is first opened rather than imported: a static import of a
 * built-in that an old Node.js lacks fails while modules link, before the entry point's check of the
 * Node.js version can say which one is needed.
 */
const nodeSqlite = (): typeof import("node:sqlite") => process.getBuiltinModule("node:sqlite")

/** One open `DatabaseSync` with its statement cache, as effect's `Connection`. */
class NodeSqliteConnection implements Connection {
  readonly db: DatabaseSync
  readonly cache = new Map<string, Prepared>()
  readonly cacheSize: number
  readonly busyRetries: number
  readonly identity: FileIdentity

  constructor(db: DatabaseSync, cacheSize: number, busyRetries: number, identity: FileIdentity) {
    this.db = db
    this.cacheSize = cacheSize
    this.busyRetries = busyRetries
    this.identity = identity
  }

  /**
   * Before a statement: fails at once when the file is known to be detached;
   * otherwise checks the file's identity (one `stat`) when the statement
   * starts outside a transaction and may write — a `BEGIN`, a write, DDL — or
   * is the stores' ping (`SELECT 1`). A plain read skips the `stat` (reading
   * writes nothing; the next ping or write finds the file gone).
   */
  checkFile(sql: string): void {
    if (this.identity.detached) this.identity.check()
    if (this.db.isTransaction || !checksFile(sql)) return
    this.identity.check()
  }

  prepared(sql: string, arrays: boolean): Prepared {
    const key = arrays ? "\u0000" + sql : sql
    const hit = this.cache.get(key)
    if (hit !== undefined) return hit
    const statement = this.db.prepare(sql)
    if (arrays) statement.setReturnArrays(true)
    const prepared = { statement, reader: statement.columns().length > 0 }
    this.cache.set(key, prepared)
    // The oldest prepared goes; node:sqlite finalizes a statement when it is collected.
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!)
    return prepared
  }

  /** Runs `f`; a busy failure outside a transaction is retried after yielding the fiber. */
  attempt<A>(operation: string, sql: string, f: () => A): Effect.Effect<A, SqlError> {
    const loop = (left: number): Effect.Effect<A, SqlError> => {
      try {
        this.checkFile(sql)
        return Effect.succeed(f())
      } catch (cause) {
        const error = toSqlError(cause, operation)
        if (left > 0 && error.reason._tag === "LockTimeoutError" && !this.db.isTransaction) {
          return Effect.flatMap(Effect.yieldNow, () => loop(left - 1))
        }
        return Effect.fail(error)
      }
    }
    return Effect.suspend(() => loop(this.busyRetries))
  }

  rows(sql: string, params: ReadonlyArray<unknown>, arrays: boolean, cached: boolean): Array<any> {
    const { reader, statement } = cached
      ? this.prepared(sql, arrays)
      : (() => {
        const statement = this.db.prepare(sql)
        if (arrays) statement.setReturnArrays(true)
        return { statement, reader: statement.columns().length > 0 }
      })()
    const bound = params.length === 0 ? params as Array<any> : bind(params)
    if (reader) return statement.all(...bound)
    statement.run(...bound)
    return []
  }

  /** For synchronous access: runs one statement that returns no rows now and answers how many rows it changed; throws a `SqlError`. */
  runSync(sql: string, params: ReadonlyArray<unknown>): number {
    try {
      // A write, maybe self-committing outside a transaction: the file's identity is checked as for any write.
      this.checkFile(sql)
      return Number(this.prepared(sql, false).statement.run(...bind(params)).changes)
    } catch (cause) {
      throw toSqlError(cause, "execute")
    }
  }

  /** For synchronous access: runs one statement now; throws a `SqlError`. */
  executeSync(sql: string, params: ReadonlyArray<unknown>): Array<any> {
    try {
      this.checkFile(sql)
      return this.rows(sql, params, false, true)
    } catch (cause) {
      throw toSqlError(cause, "execute")
    }
  }

  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined) {
    return this.attempt("execute", sql, () => {
      const rows = this.rows(sql, params, false, true)
      return transformRows ? transformRows(rows) : rows
    })
  }

  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.attempt("executeRaw", sql, () => {
      const { reader, statement } = this.prepared(sql, false)
      const bound = bind(params)
      return reader ? statement.all(...bound) : statement.run(...bound)
    })
  }

  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined) {
    return Stream.unwrap(Effect.map(
      this.execute(sql, params, transformRows),
      (rows) => Stream.fromIterable(rows)
    ))
  }

  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.attempt("executeValues", sql, () => this.rows(sql, params, true, true))
  }

  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.attempt("executeValuesUnprepared", sql, () => this.rows(sql, params, true, false))
  }

  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined) {
    return this.attempt("executeUnprepared", sql, () => {
      const rows = this.rows(sql, params, false, false)
      return transformRows ? transformRows(rows) : rows
    })
  }
}

/** The path to open: `options.path`, else the `BATON_SQLITE_PATH` config; checked before anything opens. */
const resolvePath = (options: SqliteClientOptions): Effect.Effect<{ readonly path: string; readonly field: string }, BatonConfigError> =>
  Effect.gen(function*() {
    const { value: path, field } = yield* optionOrSetting("path", options.path, pathSetting)
    if (path === undefined) {
      return yield* new BatonConfigError({
        field,
        reason: `is not set or empty: set ${pathSetting} (or pass \`path\`) to the SQLite file every instance shares, or ":memory:" for a private in-memory database`
      })
    }
    if (typeof path !== "string" || path.trim().length === 0) {
      return yield* new BatonConfigError({ field, reason: `is empty: it must name the SQLite file every instance shares, or ":memory:"` })
    }
    if (path !== ":memory:" && !path.startsWith("file:")) {
      const folder = Path.dirname(Path.resolve(path))
      let isFolder = false
      try {
        isFolder = Fs.statSync(folder).isDirectory()
      } catch {
        isFolder = false
      }
      if (!isFolder) {
        return yield* new BatonConfigError({
          field,
          reason: `is "${path}", whose folder "${folder}" does not exist: create the folder first or choose another path`
        })
      }
    }
    return { path, field }
  })

/**
 * The longest busy timeout accepted: `node:sqlite` waits synchronously, so
 * the whole process stalls that long behind another connection's write lock.
 *
 * @category utils
 * @since 0.1.0
 */
export const maxBusyTimeoutMillis = 60_000

/** The most `busyRetries` (each retry may wait the busy timeout again). */
const maxBusyRetries = 100_000

/** The most prepared statements a connection keeps. */
const maxStatementCacheSize = 100_000

const checkOptions = (options: SqliteClientOptions) =>
  Effect.gen(function*() {
    const busyTimeoutMillis = options.busyTimeout === undefined ? 5000 : Math.round(
      yield* durationMillis("busyTimeout", options.busyTimeout, {
        min: 0,
        max: maxBusyTimeoutMillis,
        why: "node:sqlite waits synchronously: the whole process stalls that long behind another connection's lock"
      })
    )
    const synchronous = options.synchronous ?? "NORMAL"
    if (synchronous !== "NORMAL" && synchronous !== "FULL") {
      return yield* new BatonConfigError({ field: "synchronous", reason: `is ${show(synchronous)}: it must be "NORMAL" or "FULL"` })
    }
    const busyRetries = yield* wholeNumber("busyRetries", options.busyRetries ?? 1000, 0, maxBusyRetries, "each retry may wait the busy timeout again")
    const statementCacheSize = yield* wholeNumber("statementCacheSize", options.statementCacheSize ?? 256, 1, maxStatementCacheSize)
    const walCheckpoint = options.walCheckpoint ?? "background"
    if (walCheckpoint !== "background" && walCheckpoint !== "inline") {
      return yield* new BatonConfigError({ field: "walCheckpoint", reason: `is ${show(walCheckpoint)}: it must be "background" or "inline"` })
    }
    const walCheckpointMillis = options.walCheckpointInterval === undefined ? 1000 : yield* durationMillis("walCheckpointInterval", options.walCheckpointInterval, {
      min: 10,
      max: 60 * 60 * 1000,
      why: "the log grows until the next checkpoint"
    })
    return { busyTimeoutMillis, synchronous, busyRetries, statementCacheSize, walCheckpoint, walCheckpointMillis } as const
  })

/**
 * Builds the client in the current scope. The connection opens on the first
 * statement; a failure to open is a `SqlError` (ConnectionError) naming the path.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqliteClientOptions = {}) =>
  Effect.gen(function*() {
    // A misspelt option fails the build naming it (with the field meant), as every Layer's does.
    yield* refuseUnknown(options, acceptedFields)
    const { path } = yield* resolvePath(options)
    const settings = yield* checkOptions(options)
    let connection: NodeSqliteConnection | undefined
    let closed = false
    const background = settings.walCheckpoint === "background" && path !== ":memory:" && !path.startsWith("file:")

    const open = Effect.suspend((): Effect.Effect<NodeSqliteConnection, SqlError> => {
      if (connection !== undefined) return Effect.succeed(connection)
      if (closed) {
        return Effect.fail(new SqlError({ reason: new ConnectionError({ cause: undefined, message: `SQLite database "${path}" is closed (its Layer's scope ended)`, operation: "open" }) }))
      }
      let db: DatabaseSync
      try {
        db = new (nodeSqlite().DatabaseSync)(path, { timeout: settings.busyTimeoutMillis })
      } catch (cause) {
        return Effect.fail(toSqlError(cause, "open", `cannot open SQLite database "${path}": ${cause instanceof Error ? cause.message : String(cause)}`))
      }
      const conn = new NodeSqliteConnection(db, settings.statementCacheSize, settings.busyRetries, new FileIdentity(path))
      return conn.attempt("open", "PRAGMA journal_mode = WAL", () => {
        db.exec("PRAGMA journal_mode = WAL")
        db.exec(`PRAGMA synchronous = ${settings.synchronous}`)
        if (background) db.exec(`PRAGMA wal_autocheckpoint = ${WalCheckpointer.fallbackPages}`)
      }).pipe(
        Effect.tapError(() => Effect.sync(() => db.close())),
        Effect.map(() => {
          connection = conn
          return conn
        })
      )
    })

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        if (connection !== undefined && connection.db.isOpen) {
          connection.cache.clear()
          connection.db.close()
        }
        connection = undefined
      })
    )

    const walCheckpointer = background
      ? yield* WalCheckpointer.make({
        path,
        synchronous: settings.synchronous,
        interval: Duration.millis(settings.walCheckpointMillis),
        ready: () => connection !== undefined && connection.db.isOpen && !connection.identity.detached
      })
      : undefined

    const acquirers = SqlClient.makeSqliteAcquirers({
      connection: open,
      semaphore: Semaphore.makeUnsafe(1),
      isTransaction: (conn) => conn.db.isOpen && conn.db.isTransaction
    })

    // How many fibers hold the connection right now (leased or borrowed): the
    // synchronous path runs only when none does.
    let holders = 0
    const held = <A, E, R>(lease: Effect.Effect<A, E, R>) =>
      Effect.tap(lease, () => Effect.acquireRelease(Effect.sync(() => holders++), () => Effect.sync(() => holders--)))
    const borrower: typeof acquirers.borrower = (f) =>
      acquirers.borrower((conn) =>
        Effect.suspend(() => {
          holders++
          return Effect.ensuring(f(conn), Effect.sync(() => holders--))
        })
      )
    const syncAccess: SyncCapable[typeof SyncAccess] = (f) => {
      if (holders > 0 || connection === undefined || !connection.db.isOpen || connection.db.isTransaction) return undefined
      const conn = connection
      return { value: f({ execute: (sql, params) => conn.executeSync(sql, params), run: (sql, params) => conn.runSync(sql, params) }) }
    }

    const client = yield* SqlClient.make({
      acquirer: held(acquirers.acquirer),
      borrower,
      transactionAcquirer: held(acquirers.transactionAcquirer),
      onCommitFailure: acquirers.onCommitFailure,
      isTransaction: acquirers.isTransaction,
      compiler: Statement.makeCompilerSqlite(),
      driver: "node-sqlite",
      beginTransaction: "BEGIN IMMEDIATE",
      prepareTransactionControls: true,
      spanAttributes: [["db.system.name", "sqlite"], ["db.namespace", path]]
    })

    return Object.assign(client, {
      [SyncAccess]: syncAccess,
      path,
      busyTimeoutMillis: settings.busyTimeoutMillis,
      synchronous: settings.synchronous,
      walCheckpoint: walCheckpointer?.checkpoint
    }) as SqliteClient
  })

/**
 * Provides `SqliteClient` and effect's `SqlClient` (one connection, closed with the Layer).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqliteClientOptions = {}): Layer.Layer<SqliteClient | SqlClient.SqlClient, BatonConfigError> =>
  Layer.effectContext(
    Effect.map(make(options), (client) => Context.make(SqliteClient, client).pipe(Context.add(SqlClient.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
