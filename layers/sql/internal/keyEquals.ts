/**
 * A bound key value for `column = value` in a statement that also sorts
 * (`ORDER BY`, `MIN` / `MAX`), written so that SQLite compiles the statement
 * once.
 *
 * Why: the SQLite in Node 24's `node:sqlite` (3.54) lets the query planner
 * look at the values bound to such equality terms when the statement sorts,
 * and marks the statement as depending on them. Each new binding then
 * expires the prepared statement, and every run compiles it again (parse,
 * plan) before stepping: measured, 40 % of the time of a newest-checkpoint
 * read (`ORDER BY checkpoint_id DESC LIMIT 1`), which made it about twice as
 * slow as the same read on better-sqlite3's SQLite 3.53
 * (`bench/sqliteDriver.ts`). Statements without a sort are not affected.
 * `? COLLATE BINARY` hides the parameter from the planner (it is no longer a
 * bare parameter) and compares exactly as the key columns do (their
 * collation is BINARY), so the plan — the primary key's prefix — stays the
 * same. Postgres has no such cost: the value is bound as is.
 */
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"

/** For `sql`: answers the fragment to write on the right of `key_column =`. */
export const keyEquals = (sql: SqlClient.SqlClient): (value: string) => Fragment =>
  sql.onDialectOrElse({
    sqlite: () => (value: string) => sql`${value} COLLATE BINARY`,
    orElse: () => (value: string) => sql`${value}`
  })
