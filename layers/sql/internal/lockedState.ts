/**
 * A JSON state per (kind, key), read and written under a row lock, so a
 * read-modify-write is atomic per key across connections and instances:
 * Postgres `SELECT … FOR UPDATE` (the row is inserted empty first when
 * missing), SQLite `BEGIN IMMEDIATE` (one writer at a time).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { transaction } from "./rows.ts"

/** What a step does with the state: keep it (`next` undefined), replace it, or clear it (`null`). */
export interface Step<S, A> {
  readonly next?: S | null | undefined
  readonly result: A
}

export interface LockedState {
  /** Runs `step` on the state of (kind, key) in one transaction holding its row lock. */
  readonly update: <S, A>(kind: string, key: string, step: (state: S | undefined) => Step<S, A>) => Effect.Effect<A, SqlError>
  /** The state of (kind, key) as last committed (no lock). */
  readonly read: <S>(kind: string, key: string) => Effect.Effect<S | undefined, SqlError>
}

const parse = <S>(rows: ReadonlyArray<Record<string, unknown>>): S | undefined => {
  const value = rows[0]?.state
  return value === null || value === undefined ? undefined : JSON.parse(String(value)) as S
}

export const make = (sql: SqlClient.SqlClient, tableName: string): LockedState => {
  const table = sql(tableName)
  const lockRow = (kind: string, key: string) =>
    sql.onDialectOrElse({
      pg: () => sql`SELECT state FROM ${table} WHERE kind = ${kind} AND limiter_key = ${key} FOR UPDATE`,
      orElse: () => sql`SELECT state FROM ${table} WHERE kind = ${kind} AND limiter_key = ${key}`
    })
  const locked = (kind: string, key: string) =>
    Effect.flatMap(lockRow(kind, key), (rows) =>
      rows.length > 0
        ? Effect.succeed(rows)
        : Effect.andThen(
          sql`INSERT INTO ${table} (kind, limiter_key, state) VALUES (${kind}, ${key}, NULL) ON CONFLICT (kind, limiter_key) DO NOTHING`,
          lockRow(kind, key)
        ))
  return {
    update: <S, A>(kind: string, key: string, step: (state: S | undefined) => Step<S, A>) =>
      transaction(sql, Effect.gen(function*() {
        const { next, result } = step(parse<S>(yield* locked(kind, key)))
        if (next !== undefined) {
          yield* sql`UPDATE ${table} SET state = ${next === null ? null : JSON.stringify(next)}
                     WHERE kind = ${kind} AND limiter_key = ${key}`
        }
        return result
      })),
    read: <S>(kind: string, key: string) =>
      Effect.map(sql`SELECT state FROM ${table} WHERE kind = ${kind} AND limiter_key = ${key}`, parse<S>)
  }
}
