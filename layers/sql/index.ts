/**
 * Every store contract written once over effect's `SqlClient`, for SQLite and
 * Postgres alike (dialect branches only where they differ). The client Layer
 * comes from `layers/sqlite` or `layers/pg`.
 *
 * @since 0.1.0
 * @module baton/sql
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../../src/internal/nodeVersion.ts"
export * as SqlCheckpointStore from "./SqlCheckpointStore.ts"
export * as SqlChildQueueStore from "./SqlChildQueueStore.ts"
export * as SqlEventStore from "./SqlEventStore.ts"
export * as SqlExecutionHistoryStore from "./SqlExecutionHistoryStore.ts"
export * as SqlLeaseStore from "./SqlLeaseStore.ts"
export * as SqlLedgerStore from "./SqlLedgerStore.ts"
export * as SqlMigrations from "./SqlMigrations.ts"
export * as SqlPauseStore from "./SqlPauseStore.ts"
export * as SqlRateLimitStore from "./SqlRateLimitStore.ts"
export * as SqlRecordStore from "./SqlRecordStore.ts"
export * as SqlRequestStore from "./SqlRequestStore.ts"
export * as SqlScheduleStore from "./SqlScheduleStore.ts"
export * as SqlConcurrencyKeyStore from "./SqlConcurrencyKeyStore.ts"
export * as SqlDebounceStore from "./SqlDebounceStore.ts"
export * as SqlStores from "./SqlStores.ts"
export * as SqlTables from "./SqlTables.ts"
export * as SqlTreeStore from "./SqlTreeStore.ts"
export * as SqlCircuitBreakerStore from "./SqlCircuitBreakerStore.ts"
export * as SqlRateLimiterStore from "./SqlRateLimiterStore.ts"
export * as SqlLimiterStores from "./SqlLimiterStores.ts"
export * as SqlTimerStore from "./SqlTimerStore.ts"
