/**
 * Which `StoreErrorKind` a database failure is: from effect's `SqlError.reason`
 * union, refined by the driver's own code (a Postgres SQLSTATE, a SQLite
 * result code, a Node socket error code) where effect's union is too coarse.
 */
import type { SqlError, SqlErrorReason } from "effect/sql/SqlError"
import type { StoreErrorKind } from "../../../src/stores/Errors.ts"

const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"])

/** The kind of a Postgres SQLSTATE, or undefined when its class says nothing. */
const pgKind = (code: string): StoreErrorKind | undefined => {
  if (!/^[0-9A-Z]{5}$/.test(code)) return undefined
  const klass = code.slice(0, 2)
  if (klass === "08" || code === "57P01" || code === "57P02" || code === "57P03") return "Connection"
  if (klass === "40" || klass === "55" || klass === "53" || code === "57014") return "Busy"
  if (klass === "23") return "Constraint"
  if (klass === "22" || klass === "54") return "Data"
  if (klass === "28" || klass === "42" || klass === "3D" || klass === "3F" || klass === "25" && code === "25006") return "Config"
  return undefined
}

/** The kind of a SQLite (extended) result code, or undefined when it says nothing. */
const sqliteKind = (errcode: number, message: string): StoreErrorKind | undefined => {
  switch (errcode & 0xff) {
    case 5: // BUSY
    case 6: // LOCKED
      return "Busy"
    case 19: // CONSTRAINT
      return "Constraint"
    case 18: // TOOBIG
    case 20: // MISMATCH
    case 25: // RANGE
      return "Data"
    case 3: // PERM
    case 8: // READONLY
    case 10: // IOERR
    case 11: // CORRUPT
    case 13: // FULL
    case 14: // CANTOPEN
    case 23: // AUTH
    case 26: // NOTADB
      return "Config"
    case 1: // ERROR: a missing table or column is a schema that does not match
      return /no such (table|column)|has no column/i.test(message) ? "Config" : undefined
    default:
      return undefined
  }
}

const byReason = (reason: SqlErrorReason): StoreErrorKind => {
  switch (reason._tag) {
    case "ConnectionError":
      return "Connection"
    case "LockTimeoutError":
    case "DeadlockError":
    case "SerializationError":
    case "StatementTimeoutError":
      return "Busy"
    case "UniqueViolation":
    case "ConstraintError":
      return "Constraint"
    case "AuthenticationError":
    case "AuthorizationError":
    case "SqlSyntaxError":
      return "Config"
    default:
      return "Other"
  }
}

/** The kind of a driver error that is not (or not yet) a `SqlError`. */
export const kindOfCause = (cause: unknown): StoreErrorKind | undefined => {
  if (cause === null || typeof cause !== "object") return undefined
  const c = cause as { readonly code?: unknown; readonly errcode?: unknown; readonly errno?: unknown; readonly message?: unknown }
  const message = typeof c.message === "string" ? c.message : ""
  if (typeof c.errcode === "number") return sqliteKind(c.errcode, message)
  if (typeof c.code === "string") {
    if (c.code === "BATON_SQLITE_DETACHED") return "Config"
    if (socketCodes.has(c.code)) return "Connection"
    // node:sqlite refuses a value it cannot bind (a bigint beyond 64 bits, an object).
    if (c.code === "ERR_OUT_OF_RANGE" || c.code === "ERR_INVALID_ARG_TYPE" || c.code === "ERR_INVALID_ARG_VALUE") return "Data"
    return pgKind(c.code)
  }
  return undefined
}

/** The kind of a `SqlError`: the driver's code when it tells more, else effect's reason. */
export const kindOf = (error: SqlError): StoreErrorKind => {
  const fromCause = kindOfCause(error.reason.cause)
  if (fromCause !== undefined) {
    // effect calls SQLite's CANTOPEN a connection error; on a local file it is the path or the file.
    return fromCause
  }
  return byReason(error.reason)
}
