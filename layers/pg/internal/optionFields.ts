/**
 * The fields of `PgClientOptions`, each once, and with them the circuit
 * breaker's: what the Postgres Layers over one client check an options
 * object against (an unknown field is refused at build).
 */
import { circuitBreakerFields } from "../../sql/internal/optionFields.ts"
import type { PgClientOptions } from "../PgClient.ts"

/** The fields of `PgClientOptions`. */
export const clientFields: { readonly [K in keyof Required<PgClientOptions>]: true } = {
  url: true,
  schema: true,
  maxConnections: true,
  connectTimeout: true,
  applicationName: true,
  ssl: true
}

/** The client's fields and the circuit breaker store's: what a Layer that opens its own client takes. */
export const clientAndBreakerFields = { ...clientFields, ...circuitBreakerFields }
