/**
 * A lean way to run store operations on hot paths (the checkpoint saver).
 *
 * An operation is written once, as a generator that yields the statements it
 * runs (built with the client's `sql` tag, so placeholders and identifiers
 * follow the dialect) and receives their rows; `Begin` / `Commit` mark a
 * transaction (`BEGIN IMMEDIATE` on SQLite, so the write lock is taken first).
 * Throwing inside the generator fails the operation and rolls back an open
 * transaction. Two interpreters run it:
 *
 * - on a client that offers {@link SyncAccess} (our `node:sqlite` client) and
 *   whose connection no fiber holds at the moment: synchronously, in one go —
 *   no fiber, no scope, no per-statement span. No other code can touch the
 *   connection meanwhile, since JavaScript runs one thing at a time;
 * - otherwise: on a connection reserved with `sql.reserve`, statement by
 *   statement, uninterruptibly.
 *
 * What both skip is the per-statement span, transformer lookup and borrow of
 * effect's `Statement`, and `withTransaction`'s machinery — on SQLite those
 * cost more than the statements themselves. Statements run here are not traced.
 */
import { Effect, Exit } from "effect"
import type { SqlClient } from "effect/sql"
import type { Connection } from "effect/sql/SqlConnection"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { Statement } from "effect/sql/Statement"

/** Starts a transaction (yield it). */
export const Begin = { _tag: "Begin" } as const
/** Commits the open transaction (yield it). */
export const Commit = { _tag: "Commit" } as const

/** A statement already compiled for the client's dialect (see {@link texts}). */
export interface Query {
  readonly _tag: "Query"
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

export const query = (sql: string, params: ReadonlyArray<unknown>): Query => ({ _tag: "Query", sql, params })

/**
 * A statement that returns no rows, run for the number of rows it changed:
 * the generator receives `[{ changes }]`. SQLite only (`RETURNING` costs
 * two to three times the statement there; a change count is free).
 */
export interface Changes {
  readonly _tag: "Changes"
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

export const changes = (sql: string, params: ReadonlyArray<unknown>): Changes => ({ _tag: "Changes", sql, params })

/**
 * A statement that returns no rows and that a trigger may refuse with
 * `RAISE(ABORT, refusal)`: the generator receives `[{ changes: 1 }]` when it
 * ran, `[{ changes: 0 }]` when it was refused — then it wrote nothing, and
 * an open transaction stays open. Any other failure fails the operation.
 * SQLite only.
 */
export interface Refusable {
  readonly _tag: "Refusable"
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
  readonly refusal: string
}

export const refusable = (sql: string, params: ReadonlyArray<unknown>, refusal: string): Refusable => ({ _tag: "Refusable", sql, params, refusal })

/**
 * Whether `error` is the refusal a {@link Refusable}'s trigger raises. The
 * trigger's text is the driver's message, which clients keep in different
 * places — baton's SQLite client in the `SqlError`'s reason, effect's own
 * SQLite clients only in the reason's `cause` — so the cause chain (the
 * `SqlError`, its reason, the driver's error) is read.
 */
const isRefusal = (error: unknown, refusal: string): boolean => {
  if (!isSqlError(error)) return false
  for (let at: unknown = error, depth = 0; depth < 4 && at instanceof Error; at = at.cause, depth++) {
    if (at.message.includes(refusal)) return true
  }
  return false
}

/**
 * The SQL text of a statement shape, compiled once per key (e.g. per number
 * of rows): `build` gets the key and returns the statement with any values;
 * only the text is kept. The caller passes the parameters in the order the
 * statement interpolates them.
 */
export const texts = <K>(build: (key: K) => Statement<any>) => {
  const cache = new Map<K, string>()
  return (key: K): string => {
    let text = cache.get(key)
    if (text === undefined) cache.set(key, text = build(key).compile()[0])
    return text
  }
}

export type Step = Statement<any> | Query | Changes | Refusable | typeof Begin | typeof Commit

/** An operation: yields steps, receives each statement's rows, returns its answer. */
export type Op<A> = Generator<Step, A, ReadonlyArray<any>>

/** The key under which a client offers synchronous access to its connection. */
export const SyncAccess: unique symbol = Symbol.for("baton/sql/SyncAccess") as any

/** A connection usable synchronously; `execute` and `run` (answers the rows changed) throw a `SqlError`. */
export interface SyncConnection {
  readonly execute: (sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<any>
  readonly run: (sql: string, params: ReadonlyArray<unknown>) => number
}

/** A client offering synchronous access: runs `f` now if the connection is free, else answers undefined. */
export interface SyncCapable {
  readonly [SyncAccess]: <A>(f: (conn: SyncConnection) => A) => { readonly value: A } | undefined
}

const noTransaction = /no transaction is active/i
const nested = /within a transaction/i

export interface Direct {
  /**
   * Runs the operation (a fresh generator from `op`) and answers a promise:
   * the synchronous path when the client offers it and its connection is free
   * (a busy database falls back to the effect path, which waits and retries),
   * else the effect path. Failures are the generator's own errors or
   * `SqlError`s, mapped by `mapError`.
   */
  readonly run: <A, E>(op: () => Op<A>, runPromise: <X>(effect: Effect.Effect<X, E>) => Promise<X>, mapError: (e: SqlError) => E) => Promise<A>
  /**
   * `run` for a write, on a client with synchronous access: joins the writes
   * queued in the same turn of the event loop in one transaction (group
   * commit, see `make`). Elsewhere the same as `run`.
   */
  readonly write: <A, E>(op: () => Op<A>, runPromise: <X>(effect: Effect.Effect<X, E>) => Promise<X>, mapError: (e: SqlError) => E) => Promise<A>
  /**
   * `write` for background work (retention's prune batches): it never joins
   * a step's writes, so they do not wait for it. It runs in a transaction of
   * its own, in a turn of the event loop in which no other write is queued;
   * a turn that has one goes first (and its writers are answered first),
   * at most {@link backgroundYields} turns in a row, so a busy instance still
   * prunes. Elsewhere the same as `run`.
   */
  readonly background: <A, E>(op: () => Op<A>, runPromise: <X>(effect: Effect.Effect<X, E>) => Promise<X>, mapError: (e: SqlError) => E) => Promise<A>
  /** The effect path alone. */
  readonly effect: <A>(op: () => Op<A>) => Effect.Effect<A, unknown>
  /**
   * For a store's own Effect API: runs the operation synchronously now when
   * the client offers it and its connection is free — answering `{ value }`
   * — else answers undefined (also for a locked database) and the caller
   * takes its usual effect path (which uses a transaction the fiber holds,
   * and waits for a lock). Throws the generator's errors or a `SqlError`.
   */
  readonly trySync: <A>(op: () => Op<A>) => { readonly value: A } | undefined
}

/** How many turns in a row a background write lets queued writes go first. */
export const backgroundYields = 8

export const make = (sql: SqlClient.SqlClient): Direct => {
  const begin = sql.onDialectOrElse({ sqlite: () => "BEGIN IMMEDIATE", orElse: () => "BEGIN" })
  const syncAccess = (sql as Partial<SyncCapable>)[SyncAccess]

  /** Runs a {@link Refusable}: 1 when it ran, 0 when its trigger refused it. */
  const runRefusable = (conn: SyncConnection, step: Refusable): number => {
    try {
      conn.run(step.sql, step.params)
      return 1
    } catch (error) {
      if (isRefusal(error, step.refusal)) return 0
      throw error
    }
  }

  /** Runs `op` synchronously; `nested`: inside a group commit's savepoint, where its own `Begin` / `Commit` do nothing. */
  const runSync = <A>(conn: SyncConnection, op: Op<A>, nested = false): A => {
    let inTransaction = false
    try {
      let next = op.next(undefined as any)
      while (!next.done) {
        const step = next.value
        let rows: ReadonlyArray<any> = []
        if (step === Begin) {
          if (!nested) conn.execute(begin, [])
          inTransaction = !nested
        } else if (step === Commit) {
          if (!nested) conn.execute("COMMIT", [])
          inTransaction = false
        } else if ((step as Query)._tag === "Query") {
          rows = conn.execute((step as Query).sql, (step as Query).params)
        } else if ((step as Changes)._tag === "Changes") {
          rows = [{ changes: conn.run((step as Changes).sql, (step as Changes).params) }]
        } else if ((step as Refusable)._tag === "Refusable") {
          rows = [{ changes: runRefusable(conn, step as Refusable) }]
        } else {
          const [text, params] = (step as Statement<any>).compile()
          rows = conn.execute(text, params)
        }
        next = op.next(rows)
      }
      return next.value
    } catch (error) {
      if (inTransaction) {
        try {
          conn.execute("ROLLBACK", [])
        } catch {
          // Nothing open any more: SQLite ended it itself.
        }
      }
      throw error
    }
  }

  const control = (conn: Connection, text: string) => conn.execute(text, [], undefined)
  const rollback = (conn: Connection) =>
    Effect.ignore(Effect.catchIf(Effect.asVoid(control(conn, "ROLLBACK")), (e) => noTransaction.test(e.message), () => Effect.void))
  // A transaction left open by a failed cleanup is rolled back before ours begins.
  const start = (conn: Connection) =>
    Effect.catchIf(control(conn, begin), (e) => nested.test(e.message), () => Effect.andThen(rollback(conn), control(conn, begin)))

  const runEffect = <A>(conn: Connection, op: Op<A>): Effect.Effect<A, unknown> => {
    let inTransaction = false
    const resume = (rows: ReadonlyArray<any> | undefined): Effect.Effect<A, unknown> => {
      let next: IteratorResult<Step, A>
      try {
        next = op.next(rows as any)
      } catch (error) {
        return Effect.fail(error)
      }
      if (next.done) return Effect.succeed(next.value)
      const step = next.value
      if (step === Begin) {
        return Effect.flatMap(start(conn), () => {
          inTransaction = true
          return resume([])
        })
      }
      if (step === Commit) {
        return Effect.flatMap(control(conn, "COMMIT"), () => {
          inTransaction = false
          return resume([])
        })
      }
      if ((step as Query)._tag === "Query") {
        return Effect.flatMap(conn.execute((step as Query).sql, (step as Query).params, undefined), resume)
      }
      if ((step as Changes)._tag === "Changes") {
        // The driver's raw answer for a statement without rows: node:sqlite's `{ changes }`.
        return Effect.flatMap(conn.executeRaw((step as Changes).sql, (step as Changes).params), (raw: any) => resume([{ changes: Number(raw?.changes ?? 0) }]))
      }
      if ((step as Refusable)._tag === "Refusable") {
        const { params, refusal, sql } = step as Refusable
        return Effect.flatMap(
          Effect.catchIf(Effect.as(conn.executeRaw(sql, params), 1), (e) => isRefusal(e, refusal), () => Effect.succeed(0)),
          (changes) => resume([{ changes }])
        )
      }
      const [text, params] = (step as Statement<any>).compile()
      return Effect.flatMap(conn.execute(text, params, undefined), resume)
    }
    return Effect.uninterruptible(
      Effect.onExit(Effect.suspend(() => resume(undefined)), (exit) =>
        Exit.isFailure(exit) && inTransaction ? rollback(conn) : Effect.void)
    )
  }

  const effect = <A>(op: () => Op<A>) => Effect.scoped(Effect.flatMap(sql.reserve, (conn) => runEffect(conn, op())))

  const run: Direct["run"] = (op, runPromise, mapError) => {
      if (syncAccess !== undefined) {
        let outcome: { readonly value: any } | undefined
        try {
          outcome = syncAccess((conn) => runSync(conn, op()))
        } catch (error) {
          // A locked database: the effect path waits for it (and retries) without blocking.
          if (!(isSqlError(error) && error.reason._tag === "LockTimeoutError")) {
            return Promise.reject(isSqlError(error) ? mapError(error) : error)
          }
        }
        if (outcome !== undefined) return Promise.resolve(outcome.value)
      }
      return runPromise(Effect.mapError(effect(op), (e) => (isSqlError(e) ? mapError(e) : e)) as any)
  }

  /**
   * Group commit. Writes queued during one turn of the event loop run at its
   * end in ONE transaction (`BEGIN IMMEDIATE` … `COMMIT`) and are answered
   * only once the `COMMIT` succeeded. They run first one after another with
   * nothing between them (an operation that throws is rare: a refused fence,
   * a failed statement); when one throws, the transaction is rolled back and
   * the batch runs again with each operation in its own savepoint, so the
   * one that throws is rolled back to its savepoint and rejected alone while
   * the others commit together. If the shared transaction cannot start, is
   * lost or cannot commit, every operation of the batch runs again alone
   * (`run`), as if there had been no batch. A lone write runs as `run` would,
   * one turn later.
   */
  interface Queued {
    readonly op: () => Op<any>
    readonly runPromise: <X>(effect: Effect.Effect<X, any>) => Promise<X>
    readonly mapError: (e: SqlError) => unknown
    readonly resolve: (value: any) => void
    readonly reject: (error: unknown) => void
  }
  type Outcome = { readonly ok: boolean; readonly value: unknown }
  let queue: Array<Queued> = []
  const alone = (q: Queued) => run(q.op, q.runPromise, q.mapError).then(q.resolve, q.reject)
  /** Runs `body` in one transaction; rolls it back and rethrows when it throws. */
  const inTransaction = <A>(conn: SyncConnection, body: () => A): A => {
    conn.execute(begin, [])
    try {
      const value = body()
      conn.execute("COMMIT", [])
      return value
    } catch (error) {
      try {
        conn.execute("ROLLBACK", [])
      } catch {
        // Nothing open any more.
      }
      throw error
    }
  }
  /** The batch with a savepoint around each operation: one that throws is rolled back alone. */
  const guarded = (conn: SyncConnection, items: ReadonlyArray<Queued>) =>
    inTransaction(conn, () =>
      items.map((q): Outcome => {
        conn.execute("SAVEPOINT baton_write", [])
        try {
          const value = runSync(conn, q.op(), true)
          conn.execute("RELEASE baton_write", [])
          return { ok: true, value }
        } catch (error) {
          // Fails when SQLite already ended the whole transaction: then the batch is retried, each alone.
          conn.execute("ROLLBACK TO baton_write", [])
          conn.execute("RELEASE baton_write", [])
          return { ok: false, value: error }
        }
      }))
  const batch = (conn: SyncConnection, items: ReadonlyArray<Queued>): ReadonlyArray<Outcome> => {
    // Whether an operation threw (its transaction is rolled back: the batch runs again guarded), not the COMMIT.
    let failed = false
    try {
      return inTransaction(conn, () =>
        items.map((q): Outcome => {
          try {
            return { ok: true, value: runSync(conn, q.op(), true) }
          } catch (error) {
            failed = true
            throw error
          }
        }))
    } catch (error) {
      if (!failed) throw error
      return guarded(conn, items)
    }
  }

  const flush = () => {
    const items = queue
    queue = []
    if (items.length === 1) return void alone(items[0]!)
    let done: { readonly value: ReadonlyArray<Outcome> } | undefined
    try {
      done = syncAccess!((conn) => batch(conn, items))
    } catch {
      done = undefined
    }
    if (done === undefined) return void items.forEach(alone)
    done.value.forEach((outcome, i) => {
      const q = items[i]!
      if (outcome.ok) q.resolve(outcome.value)
      else q.reject(isSqlError(outcome.value) ? q.mapError(outcome.value) : outcome.value)
    })
  }

  let later: Array<Queued> = []
  let yielded = 0
  const flushLater = () => {
    if (queue.length > 0 && yielded < backgroundYields) {
      // Writes queued in this turn go first: their flush runs before the next turn's.
      yielded++
      return void setImmediate(flushLater)
    }
    const items = later
    later = []
    yielded = 0
    items.forEach(alone)
  }

  const trySync: Direct["trySync"] = (op) => {
    if (syncAccess === undefined) return undefined
    try {
      return syncAccess((conn) => runSync(conn, op()))
    } catch (error) {
      if (isSqlError(error) && error.reason._tag === "LockTimeoutError") return undefined
      throw error
    }
  }

  return {
    effect,
    trySync,
    run,
    write: (op, runPromise, mapError) => {
      if (syncAccess === undefined) return run(op, runPromise, mapError)
      return new Promise((resolve, reject) => {
        if (queue.length === 0) setImmediate(flush)
        queue.push({ op, runPromise, mapError, resolve, reject })
      })
    },
    background: (op, runPromise, mapError) => {
      if (syncAccess === undefined) return run(op, runPromise, mapError)
      return new Promise((resolve, reject) => {
        if (later.length === 0) setImmediate(flushLater)
        later.push({ op, runPromise, mapError, resolve, reject })
      })
    }
  }
}
