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

export type Step = Statement<any> | Query | typeof Begin | typeof Commit

/** An operation: yields steps, receives each statement's rows, returns its answer. */
export type Op<A> = Generator<Step, A, ReadonlyArray<any>>

/** The key under which a client offers synchronous access to its connection. */
export const SyncAccess: unique symbol = Symbol.for("baton/sql/SyncAccess") as any

/** A connection usable synchronously; `execute` throws a `SqlError`. */
export interface SyncConnection {
  readonly execute: (sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<any>
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
  /** The effect path alone. */
  readonly effect: <A>(op: () => Op<A>) => Effect.Effect<A, unknown>
}

export const make = (sql: SqlClient.SqlClient): Direct => {
  const begin = sql.onDialectOrElse({ sqlite: () => "BEGIN IMMEDIATE", orElse: () => "BEGIN" })
  const syncAccess = (sql as Partial<SyncCapable>)[SyncAccess]

  const runSync = <A>(conn: SyncConnection, op: Op<A>): A => {
    let inTransaction = false
    try {
      let next = op.next(undefined as any)
      while (!next.done) {
        const step = next.value
        let rows: ReadonlyArray<any> = []
        if (step === Begin) {
          conn.execute(begin, [])
          inTransaction = true
        } else if (step === Commit) {
          conn.execute("COMMIT", [])
          inTransaction = false
        } else if ((step as Query)._tag === "Query") {
          rows = conn.execute((step as Query).sql, (step as Query).params)
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
      const [text, params] = (step as Statement<any>).compile()
      return Effect.flatMap(conn.execute(text, params, undefined), resume)
    }
    return Effect.uninterruptible(
      Effect.onExit(Effect.suspend(() => resume(undefined)), (exit) =>
        Exit.isFailure(exit) && inTransaction ? rollback(conn) : Effect.void)
    )
  }

  const effect = <A>(op: () => Op<A>) => Effect.scoped(Effect.flatMap(sql.reserve, (conn) => runEffect(conn, op())))

  return {
    effect,
    run: (op, runPromise, mapError) => {
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
  }
}
