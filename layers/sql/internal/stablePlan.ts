/**
 * Values written into a statement so that SQLite compiles it once.
 *
 * `node:sqlite` keeps each prepared statement; SQLite itself compiles one
 * again (parse, plan) when the statement's plan depends on a bound value and
 * that parameter is bound anew — which is every call. Measured with Node 24's
 * SQLite 3.54 (`bench/sqliteDriver.ts`; `bench/traceCompiles.ts` lists the
 * statements it hits in a program), two cases reach the stores:
 *
 * - a statement that sorts (`ORDER BY`, `MIN` / `MAX`) with bound keys in
 *   `column = ?`: its planner looks at the bound values, so each run compiled
 *   it again — 40 % of a newest-checkpoint read, about twice as slow as the
 *   same read on better-sqlite3's SQLite 3.53. {@link keyEquals} writes the
 *   value `? COLLATE BINARY`: it compares exactly as the key columns do (their
 *   collation is BINARY) and keeps the plan (the key's prefix), but is no bare
 *   parameter the planner reads;
 * - a bound `LIMIT ?` (any SQLite: the planner reads an integer limit).
 *   {@link literalLimit} writes a whole number into the text instead; a
 *   page size is configured once, so that is one statement per setting.
 *
 * Postgres has neither cost: values are bound as they are (the limit is
 * written the same way on both, for one code path).
 */
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"

/** For `sql`: what to write on the right of `key_column =` in a statement that sorts. */
export const keyEquals = (sql: SqlClient.SqlClient): (value: string) => Fragment =>
  sql.onDialectOrElse({
    sqlite: () => (value: string) => sql`${value} COLLATE BINARY`,
    orElse: () => (value: string) => sql`${value}`
  })

/** For `sql`: a `LIMIT` value, written into the text when it is a whole number (else bound). */
export const literalLimit = (sql: SqlClient.SqlClient) => (limit: number): Fragment =>
  Number.isSafeInteger(limit) && limit >= 0 ? sql.literal(String(limit)) : sql`${limit}`
