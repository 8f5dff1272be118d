/**
 * The names of baton's tables in one SQL database, under a table prefix.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { BatonConfigError } from "../../src/stores/Errors.ts"
import { show } from "./internal/config.ts"

/**
 * Options every SQL store Layer takes.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqlStoreOptions {
  /**
   * Prepended to every table name (default `"baton_"`), so baton's tables can
   * live beside an application's own, or two baton deployments in one database.
   * Empty, or letters, digits and `_` starting with a letter or `_`.
   */
  readonly tablePrefix?: string | undefined
}

/**
 * The table prefix when none is given: `"baton_"`.
 *
 * @category utils
 * @since 0.1.0
 */
export const defaultTablePrefix = "baton_"

/**
 * Every table baton keeps, by role.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqlTables {
  readonly prefix: string
  readonly migrations: string
  readonly threads: string
  readonly records: string
  readonly pauseAnswers: string
  readonly leases: string
  readonly pauses: string
  readonly tree: string
  readonly ledger: string
  readonly rateSlots: string
  readonly rateWindows: string
  readonly ratePauses: string
  readonly childQueue: string
  readonly checkpoints: string
  readonly checkpointWrites: string
  readonly checkpointBlobs: string
  /** SQLite: the view one checkpoint put is written through — checkpoint, its blobs and the fence in one statement (migration 19). */
  readonly checkpointPuts: string
  /** effect `RateLimiterStore` fixed-window counters (migration 6). */
  readonly limiterWindows: string
  /** effect `RateLimiterStore` buckets / adaptive states and `CircuitBreakerStore` entries, JSON per (kind, key) (migration 6). */
  readonly limiterStates: string
  readonly history: string
  readonly requests: string
  /** `TimerStore` timers (migration 13). */
  readonly timers: string
  /** `TimerStore` signals (migration 13). */
  readonly signals: string
  /** Schedules (migration 14). */
  readonly schedules: string
  /** Streamed events per thread (migration 16). */
  readonly events: string
  /** Concurrency keys: limit and next arrival number per (tenant, key) (migration 17). */
  readonly concurrencyKeys: string
  /** Concurrency key entries, one per execution (migration 17). */
  readonly concurrencyEntries: string
  /** Debounce windows (migration 18). */
  readonly debounces: string
}

const validPrefix = /^(?:[A-Za-z_][A-Za-z0-9_]{0,40})?$/

/**
 * The tables under `options.tablePrefix`; a prefix that is not a plain identifier is a `BatonConfigError`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlStoreOptions = {}): Effect.Effect<SqlTables, BatonConfigError> => {
  const prefix = options.tablePrefix ?? defaultTablePrefix
  if (typeof prefix !== "string" || !validPrefix.test(prefix)) {
    return Effect.fail(new BatonConfigError({
      field: "tablePrefix",
      reason: `is ${show(prefix)}: it must be empty or up to 41 letters, digits or "_", starting with a letter or "_"`
    }))
  }
  return Effect.succeed({
    prefix,
    migrations: `${prefix}migrations`,
    threads: `${prefix}threads`,
    records: `${prefix}records`,
    pauseAnswers: `${prefix}pause_answers`,
    leases: `${prefix}leases`,
    pauses: `${prefix}pauses`,
    tree: `${prefix}tree_keys`,
    ledger: `${prefix}ledger`,
    rateSlots: `${prefix}rate_slots`,
    rateWindows: `${prefix}rate_windows`,
    ratePauses: `${prefix}rate_pauses`,
    childQueue: `${prefix}child_queue`,
    checkpoints: `${prefix}checkpoints`,
    checkpointWrites: `${prefix}checkpoint_writes`,
    checkpointBlobs: `${prefix}checkpoint_blobs`,
    checkpointPuts: `${prefix}checkpoint_puts`,
    limiterWindows: `${prefix}limiter_windows`,
    limiterStates: `${prefix}limiter_states`,
    history: `${prefix}history`,
    requests: `${prefix}requests`,
    timers: `${prefix}timers`,
    signals: `${prefix}signals`,
    schedules: `${prefix}schedules`,
    events: `${prefix}events`,
    concurrencyKeys: `${prefix}concurrency_keys`,
    concurrencyEntries: `${prefix}concurrency_entries`,
    debounces: `${prefix}debounces`
  })
}
