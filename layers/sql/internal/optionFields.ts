/**
 * The fields of the SQL Layers' option interfaces, each once: what the
 * Layers that take them check an options object against (an unknown field
 * is refused at build).
 */
import type { SqlCircuitBreakerStoreOptions } from "../SqlCircuitBreakerStore.ts"

/** The fields of `SqlCircuitBreakerStoreOptions`. */
export const circuitBreakerFields: { readonly [K in keyof Required<SqlCircuitBreakerStoreOptions>]: true } = {
  tablePrefix: true,
  probeLease: true,
  idleTimeToLive: true
}
