/**
 * Postgres store Layers: every contract in one database (or schema) over
 * `@effect/sql-pg`, migrations under an advisory lock, and LISTEN/NOTIFY
 * wake-ups between instances.
 *
 * @since 0.1.0
 * @module baton/pg
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../../src/internal/nodeVersion.ts"
export * as PgClient from "./PgClient.ts"
export * as PgLiveness from "./PgLiveness.ts"
export * as PgMigrations from "./PgMigrations.ts"
export * as PgStores from "./PgStores.ts"
export * as PgWakeups from "./PgWakeups.ts"
export * as PgLimiters from "./PgLimiters.ts"
export * as PgProbe from "./PgProbe.ts"
export * as PgEventWakeups from "./PgEventWakeups.ts"
