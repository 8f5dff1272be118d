/**
 * Shared by the SQL stores: SqlError → StoreError, and reading column values
 * the same way whatever the driver returns (SQLite numbers, Postgres bigints).
 */
import { Cause, Effect, Option } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { StoreError } from "../../../src/stores/Errors.ts"
import { kindOf } from "./classify.ts"

/** Maps the driver's `SqlError` to the contract's `StoreError` for `store.operation`. */
export const storeError = (store: string, operation: string) => (error: SqlError): StoreError =>
  new StoreError({ store, operation, reason: `${error.reason._tag}: ${sqlErrorDetail(error)}`, kind: kindOf(error), cause: error })

/**
 * The driver's message plus the database's own when the driver's is generic
 * (`@effect/sql-pg` says "PgConnection: Query failed" and keeps Postgres's
 * message on the cause).
 */
export const sqlErrorDetail = (error: SqlError): string => {
  const cause = error.reason.cause
  const inner = cause instanceof Error ? cause.message : undefined
  return inner !== undefined && inner !== "" && !error.message.includes(inner) ? `${error.message} (${inner})` : error.message
}

/**
 * A store operation, built only when run (a contract's `make` builds the
 * backend's effect before its argument checks pass), with `SqlError` turned
 * into `StoreError`.
 */
export const run = <A, E, R>(store: string, operation: string, effect: () => Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError> | StoreError, R> =>
  Effect.mapError(Effect.suspend(effect), (e) => isSqlError(e) ? storeError(store, operation)(e) : e as Exclude<E, SqlError>)

/**
 * `sql.withTransaction`, with a lost connection answered as the failure it is.
 * When the connection dies under a transaction the server rolls it back, but
 * the client's ROLLBACK on the dead connection fails too, and effect's
 * transaction reports the body's failure and the rollback's as defects. Such
 * a cause fails with the body's own typed failure when it had one (a lease
 * refusal stays a refusal), else with the lost connection: a transient
 * `SqlError`, turned into a `StoreError` by `run` like any other. A COMMIT cut
 * the same way may or may not have landed; the caller learns only that the
 * connection was lost.
 */
export const transaction = <A, E, R>(sql: SqlClient, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchCause(sql.withTransaction(effect), (cause) => {
    const lost = cause.reasons.find((r) => isLostConnection(valueOf(r)))
    if (lost === undefined || Cause.hasInterrupts(cause)) return Effect.failCause(cause)
    // The body's outcome comes first in the cause, the rollback's after it.
    const first = valueOf(cause.reasons[0]!)
    return Effect.fail(isTagged(first) && !isLostConnection(first) ? first as E : valueOf(lost) as SqlError)
  })

const valueOf = (reason: Cause.Reason<unknown>): unknown =>
  Cause.isDieReason(reason) ? reason.defect : Cause.isFailReason(reason) ? reason.error : undefined

const isLostConnection = (value: unknown): boolean => isSqlError(value) && value.reason._tag === "ConnectionError"

/** A typed failure (every error of the contracts is tagged), not a stray defect. */
const isTagged = (value: unknown): boolean => value instanceof Error && typeof (value as { _tag?: unknown })._tag === "string"

/** A numeric column (SQLite gives numbers, Postgres BIGINT gives bigints). */
export const num = (value: unknown): number => typeof value === "number" ? value : Number(value)

/** A nullable numeric column. */
export const numOrNull = (value: unknown): number | null => value === null || value === undefined ? null : num(value)

/** A nullable text column. */
export const textOrNull = (value: unknown): string | null => value === null || value === undefined ? null : String(value)

/** A JSON text column; SQL NULL reads as null. */
export const fromJson = (value: unknown): unknown => value === null || value === undefined ? null : JSON.parse(String(value))

/** A JSON value to store as text (`undefined` stores as JSON null). */
export const toJson = (value: unknown): string => JSON.stringify(value === undefined ? null : value)

/** A binary column as a Uint8Array (Postgres drivers may hand back a Buffer, which is one). */
export const bytes = (value: unknown): Uint8Array =>
  value instanceof Uint8Array ? value : typeof value === "string" ? new TextEncoder().encode(value) : new Uint8Array(0)

/** The first of the rows a statement answered, read by `to`; none when it answered none. */
export const firstOf = <A>(to: (row: any) => A) => (rows: ReadonlyArray<any>): Option.Option<A> =>
  rows.length === 0 ? Option.none() : Option.some(to(rows[0]))
