/**
 * The SQLite client's options: their interface (re-exported by
 * `SqliteClient`), their fields (with the circuit breaker's, as on
 * Postgres), and the client's own out of a bundle's options object.
 */
import type { Duration } from "effect"
import { circuitBreakerFields } from "../../sql/internal/optionFields.ts"

/**
 * Where the SQLite file is and how the connection is opened.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteClientOptions {
  /** A file path, or `":memory:"`. Default: the `BATON_SQLITE_PATH` config. */
  readonly path?: string | undefined
  /** How long a statement waits for another connection's write lock: 0 to 60 seconds (node:sqlite waits synchronously). Default 5 seconds. */
  readonly busyTimeout?: Duration.Input | undefined
  /** `"NORMAL"` (default: safe against a process crash) or `"FULL"` (also against power loss; an fsync per commit). */
  readonly synchronous?: "NORMAL" | "FULL" | undefined
  /**
   * How many times a statement that found the database locked outside a
   * transaction is retried after yielding the fiber. Default 1000 — cheap, and
   * what one-process tests with `busyTimeout: 0` rely on. A whole number
   * from 0 to 100,000.
   */
  readonly busyRetries?: number | undefined
  /** Prepared statements kept per connection (the oldest prepared goes first): 1 to 100,000. Default 256. */
  readonly statementCacheSize?: number | undefined
  /**
   * Who copies the write-ahead log back into the file. `"background"`
   * (default for a file): a second connection in a worker thread, every
   * `walCheckpointInterval` on the Clock, so that no commit on this
   * connection stops for a checkpoint (SQLite's own checkpoint then runs only
   * if the log passes 10,000 pages). `"inline"`: SQLite's default, the
   * commit that grows the log past 1,000 pages checkpoints it. A
   * `":memory:"` or `file:` database is always `"inline"`.
   */
  readonly walCheckpoint?: "background" | "inline" | undefined
  /** How often the background checkpoint runs: 10 milliseconds to 1 hour. Default 1 second. */
  readonly walCheckpointInterval?: Duration.Input | undefined
}

/**
 * The fields of `SqliteClientOptions`, each once (what the Layers that take
 * them check an options object against).
 */
export const clientFields: { readonly [K in keyof Required<SqliteClientOptions>]: true } = {
  path: true,
  busyTimeout: true,
  synchronous: true,
  busyRetries: true,
  statementCacheSize: true,
  walCheckpoint: true,
  walCheckpointInterval: true
}

/** The client's fields and the circuit breaker store's: what a Layer that opens its own client takes. */
export const clientAndBreakerFields = { ...clientFields, ...circuitBreakerFields }

/**
 * The client's own options out of a bundle's options object (which the
 * bundle checked itself), for the client a bundle opens.
 */
export const clientOptions = (options: SqliteClientOptions): SqliteClientOptions => {
  const picked: Record<string, unknown> = {}
  for (const field of Object.keys(clientFields)) {
    const value = (options as Record<string, unknown>)[field]
    if (value !== undefined) picked[field] = value
  }
  return picked as SqliteClientOptions
}
