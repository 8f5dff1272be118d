/**
 * baton's schema on SQLite: the migrations of `layers/sql` (`SqlMigrations`)
 * as a Layer that runs them once when built and provides
 * `SqlMigrations.Migrated`, which every SQL store Layer requires.
 *
 * Two processes opening a new file at once are safe: the migration runs in a
 * `BEGIN IMMEDIATE` transaction, so the second waits for the write lock, then
 * finds nothing to do.
 *
 * @since 0.1.0
 */
import type { Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import * as SqlMigrations from "../sql/SqlMigrations.ts"

/**
 * Migrates the SQLite database of the `SqlClient` in context (a
 * `SqliteClient.layer`) once, at build; provides `SqlMigrations.Migrated`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlMigrations.MigrateOptions = {}): Layer.Layer<
  SqlMigrations.Migrated,
  StoreError | BatonConfigError,
  SqlClient.SqlClient
> => SqlMigrations.layer(options)
