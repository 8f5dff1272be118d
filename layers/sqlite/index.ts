/**
 * SQLite store Layers: every contract in one database file over `node:sqlite`.
 *
 * @since 0.1.0
 * @module baton/sqlite
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../../src/internal/nodeVersion.ts"
export * as SqliteClient from "./SqliteClient.ts"
export * as SqliteLiveness from "./SqliteLiveness.ts"
export * as SqliteMigrations from "./SqliteMigrations.ts"
export * as SqliteStores from "./SqliteStores.ts"
export * as SqliteLimiters from "./SqliteLimiters.ts"
export * as SqliteWakeups from "./SqliteWakeups.ts"
export * as SqliteProbe from "./SqliteProbe.ts"
