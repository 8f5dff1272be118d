/**
 * The runtime's configuration as an Effect service, the way Effect's own
 * packages configure theirs (see `ShardingConfig` in `effect/cluster`):
 * `defaults`, `layer(options)` for values in code, and `layerConfig()` for
 * values from the environment or any `ConfigProvider` (`BATON_LEASE`,
 * `BATON_RENEW_EVERY`, …). Every value is checked when the Layer is built; a
 * value that cannot work fails it with `BatonConfigError` naming the field.
 *
 * The workflows are not configuration: they are given to `Baton.layerWith`
 * (or to `Baton.layer` together with these options).
 *
 * @since 0.1.0
 */
import { Config, Context, Duration, Effect, Layer, Option } from "effect"
import { BatonConfigError } from "../stores/Errors.ts"
import type { InstanceId } from "../stores/Ids.ts"
import * as Options from "../stores/internal/options.ts"
import * as V from "../stores/internal/validate.ts"
import type { AnyWorkflow } from "./Workflow.ts"
import * as ChildConfig from "./internal/children/ChildConfig.ts"
import * as InputSize from "./internal/calls/InputSize.ts"
import * as Limits from "./internal/limits/QuotaConfig.ts"

/**
 * The options of one instance's runtime, every one optional (see `defaults`).
 *
 * @category models
 * @since 0.1.0
 */
export interface BatonConfigOptions extends ChildConfig.ChildOptions {
  /** This instance's id: 1–200 characters, no control characters; generated when absent. */
  readonly instanceId?: InstanceId | undefined
  /** Lease length of a tree this instance moves: 1 s to 24 h. Default 30 seconds. */
  readonly lease?: Duration.Input | undefined
  /** How often the holder renews: at least 100 ms and shorter than the lease. Default a third of the lease. */
  readonly renewEvery?: Duration.Input | undefined
  /** How often a call waiting for a held lease looks again (a release in this process wakes it at once). Default 1 second. */
  readonly waitPoll?: Duration.Input | undefined
  /** How often the recovery sweep looks for orphaned trees. Default 30 seconds. */
  readonly sweepInterval?: Duration.Input | undefined
  /** How long answered or withdrawn pauses are kept. Default 24 hours. */
  readonly pauseRetention?: Duration.Input | undefined
  /** How long execution history snapshots are kept (with an `ExecutionHistoryStore`). Default 30 days. */
  readonly historyRetention?: Duration.Input | undefined
  /**
   * How long a request idempotency key (`requestKey` of `start`, `execute`,
   * `resume`) is kept: a repeated call within it gets the first call's
   * execution; after it the key is free again. Default 24 hours.
   */
  readonly requestRetention?: Duration.Input | undefined
  /** Records read per page by the sweep. Default 100. */
  readonly sweepPageSize?: number | undefined
  /**
   * How many steps (node visits, across trees and tenants) this instance
   * runs at once: a whole number ≥ 1. A step without a free slot waits its
   * turn. Unset: no cap.
   */
  readonly maxConcurrentSteps?: number | undefined
  /**
   * How many recoveries the sweep of this instance runs at once: a look
   * starts at most this many, counting those earlier looks started that still
   * run, and leaves the other orphaned trees to the next look (woken when a
   * recovery ends). A whole number ≥ 1. Default 100.
   */
  readonly maxRecoveriesPerLook?: number | undefined
  /**
   * How many recoveries of one execution may fail (the graph or a store
   * failing it while its record stays Running) before the sweep marks it
   * Failed with the last cause: a whole number ≥ 1. Default 5.
   */
  readonly maxRecoveryAttempts?: number | undefined
  /**
   * The wait before retrying a failed recovery; it doubles with each failure
   * of the same execution, up to `recoveryBackoffMax`. Default 1 second.
   */
  readonly recoveryBackoff?: Duration.Input | undefined
  /** The longest wait between two recoveries of one execution: at least `recoveryBackoff`. Default 5 minutes. */
  readonly recoveryBackoffMax?: Duration.Input | undefined
  /**
   * A fleet-wide cap on the execution trees one tenant runs at once: a whole
   * number ≥ 1 (unset: no cap). A permit is a lease held by the tree's holder
   * for its pass (see `TenantQuota`); the same value on every instance.
   */
  readonly tenantQuota?: number | undefined
  /**
   * A new execution over its tenant's quota: `"wait"` (default) for a permit,
   * in order, or `"fail"` at once (ended Failed, `TenantQuotaExceededError`).
   * Resumed and recovered trees always wait.
   */
  readonly onOverQuota?: "wait" | "fail" | undefined
  /**
   * Model providers whose circuit breaker readiness reports (one component
   * `provider:<key>` each, Degraded while open or half-open; never
   * Unhealthy). Needs a `CircuitBreakerStore` in context (every stores
   * bundle provides one). In code only: no `BATON_*` key.
   */
  readonly providers?: ReadonlyArray<Limits.ProviderDefinition> | undefined
  /**
   * How many times one undo is tried before it counts as failed (the
   * execution then ends Failed with both errors; the other undos still run):
   * a whole number from 1 to 100. Default 5.
   */
  readonly undoAttempts?: number | undefined
  /** The wait after a failed try of an undo; it doubles per try, up to `undoBackoffMax`. Default 1 second. */
  readonly undoBackoff?: Duration.Input | undefined
  /** The longest wait between two tries of an undo: at least `undoBackoff`, at most 1 hour. Default 30 seconds. */
  readonly undoBackoffMax?: Duration.Input | undefined
  /**
   * The largest start input and pause decision a call may hand the runtime, in
   * bytes of their JSON: a larger one is refused with `InvalidInputError`
   * before anything is written. A whole number from 1 to 256 MiB. Default
   * 1 MiB (1048576), as `baton/http`'s body limit.
   */
  readonly maxInputBytes?: number | undefined
}

/**
 * What `Baton.layer` takes: the workflows this instance runs, and its
 * configuration options.
 *
 * @category models
 * @since 0.1.0
 */
export interface BatonOptions extends BatonConfigOptions {
  /** The workflows this instance can run, resume and recover (by name). */
  readonly workflows: ReadonlyArray<AnyWorkflow>
}

/**
 * The checked configuration of one instance, durations in milliseconds.
 *
 * @category models
 * @since 0.1.0
 */
export interface BatonConfigShape extends ChildConfig.ChildOptions {
  /** This instance's id; `undefined`: one is generated when the runtime starts. */
  readonly instanceId: InstanceId | undefined
  readonly leaseMillis: number
  readonly renewMillis: number
  readonly waitPollMillis: number
  readonly sweepMillis: number
  readonly pauseRetentionMillis: number
  readonly historyRetentionMillis: number
  /** How long a request idempotency key is kept. */
  readonly requestRetentionMillis: number
  readonly sweepPageSize: number
  /** The cap on steps running at once; `undefined`: no cap. */
  readonly maxConcurrentSteps: number | undefined
  /** Recoveries the sweep runs at once (a look starts at most this many minus those still running). */
  readonly maxRecoveriesPerLook: number
  /** Failed recoveries of one execution before it is marked Failed. */
  readonly maxRecoveryAttempts: number
  /** The first wait after a failed recovery; doubled per failure. */
  readonly recoveryBackoffMillis: number
  /** The cap of that wait. */
  readonly recoveryBackoffMaxMillis: number
  /** Trees one tenant runs at once, fleet-wide; `undefined`: no cap. */
  readonly tenantQuota?: number | undefined
  /** A new execution over quota waits (`undefined`, `"wait"`) or fails. */
  readonly onOverQuota?: "wait" | "fail" | undefined
  /** Providers whose breakers readiness reports (`undefined`: none). */
  readonly providers?: ReadonlyArray<Limits.ProviderDefinition> | undefined
  /** Tries of one undo before it counts as failed. */
  readonly undoAttempts: number
  /** The wait after a failed try of an undo; doubled per try. */
  readonly undoBackoffMillis: number
  /** The cap of that wait. */
  readonly undoBackoffMaxMillis: number
  /** The largest input or decision, in bytes of JSON (`undefined`: 1 MiB). */
  readonly maxInputBytes?: number | undefined
}

/**
 * The runtime's configuration, as a service `Baton.layerWith` reads.
 *
 * @category services
 * @since 0.1.0
 */
export class BatonConfig extends Context.Service<BatonConfig, BatonConfigShape>()("baton/BatonConfig") {}

/**
 * The values used for options left out.
 *
 * @category defaults
 * @since 0.1.0
 */
export const defaults: BatonConfigShape = {
  instanceId: undefined,
  leaseMillis: 30_000,
  renewMillis: 10_000,
  waitPollMillis: 1_000,
  sweepMillis: 30_000,
  pauseRetentionMillis: 24 * 60 * 60 * 1000,
  historyRetentionMillis: 30 * 24 * 60 * 60 * 1000,
  requestRetentionMillis: 24 * 60 * 60 * 1000,
  sweepPageSize: 100,
  maxConcurrentSteps: undefined,
  maxRecoveriesPerLook: 100,
  maxRecoveryAttempts: 5,
  recoveryBackoffMillis: 1_000,
  recoveryBackoffMaxMillis: 5 * 60 * 1000,
  undoAttempts: 5,
  undoBackoffMillis: 1_000,
  undoBackoffMaxMillis: 30_000
}

/**
 * The option each `BATON_*` key of `config` sets.
 *
 * @category config
 * @since 0.1.0
 */
export const configKeys = {
  instanceId: "BATON_INSTANCE_ID",
  lease: "BATON_LEASE",
  renewEvery: "BATON_RENEW_EVERY",
  waitPoll: "BATON_WAIT_POLL",
  sweepInterval: "BATON_SWEEP_INTERVAL",
  pauseRetention: "BATON_PAUSE_RETENTION",
  historyRetention: "BATON_HISTORY_RETENTION",
  requestRetention: "BATON_REQUEST_RETENTION",
  sweepPageSize: "BATON_SWEEP_PAGE_SIZE",
  maxConcurrentSteps: "BATON_MAX_CONCURRENT_STEPS",
  maxRecoveriesPerLook: "BATON_MAX_RECOVERIES_PER_LOOK",
  maxRecoveryAttempts: "BATON_MAX_RECOVERY_ATTEMPTS",
  recoveryBackoff: "BATON_RECOVERY_BACKOFF",
  recoveryBackoffMax: "BATON_RECOVERY_BACKOFF_MAX",
  tenantQuota: "BATON_TENANT_QUOTA",
  onOverQuota: "BATON_ON_OVER_QUOTA",
  undoAttempts: "BATON_UNDO_ATTEMPTS",
  undoBackoff: "BATON_UNDO_BACKOFF",
  undoBackoffMax: "BATON_UNDO_BACKOFF_MAX",
  maxClaimedChildren: "BATON_MAX_CLAIMED_CHILDREN",
  maxInlineChildren: "BATON_MAX_INLINE_CHILDREN",
  maxInputBytes: "BATON_MAX_INPUT_BYTES"
} as const satisfies { readonly [K in keyof Required<Omit<BatonConfigOptions, "providers">>]: string }

type Field = keyof typeof configKeys

const optionFields = [...Object.keys(configKeys), "providers"] as ReadonlyArray<Field | "providers">

const maxTimerMillis = 2 ** 31 - 1
const dayMillis = 24 * 60 * 60 * 1000

/** A value as a reader should see it: NaN and Infinity as themselves (JSON would print null). */
const show = (value: unknown): string =>
  typeof value === "number" || typeof value === "bigint" ? String(value) : typeof value === "string" ? JSON.stringify(value) : typeof value === "object" ? JSON.stringify(value) ?? String(value) : String(value)

const refuse = (field: string, reason: string) => Effect.fail(new BatonConfigError({ field, reason }))

/**
 * Fails on any field of `options` not in `known`, naming it, the known field
 * it is closest to (a likely misspelling) and the fields there are. The same
 * check refuses unknown options of the store and limiter Layers.
 *
 * @category utils
 * @since 0.1.0
 */
export const refuseUnknown = (options: object, known: ReadonlyArray<string>): Effect.Effect<void, BatonConfigError> =>
  Options.refuseUnknown(options, known)

const millis = (field: Field, input: Duration.Input | undefined, fallback: number) =>
  Effect.suspend((): Effect.Effect<number, BatonConfigError> => {
    if (input === undefined) return Effect.succeed(fallback)
    const d = Duration.fromInput(input)
    if (Option.isNone(d)) return refuse(field, `is not a duration such as "30 seconds" or a number of milliseconds (got ${show(input)})`)
    const ms = Duration.toMillis(d.value)
    return Number.isFinite(ms) && ms > 0
      ? Effect.succeed(ms)
      : refuse(field, `must be a finite duration greater than 0 (got ${show(input)})`)
  })

const wholeNumber = (field: Field, value: unknown, fallback: number | undefined, unset: string) =>
  Effect.suspend((): Effect.Effect<number | undefined, BatonConfigError> => {
    if (value === undefined) return Effect.succeed(fallback)
    return typeof value === "number" && Number.isSafeInteger(value) && value >= 1
      ? Effect.succeed(value)
      : refuse(field, `must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}${unset} (got ${show(value)})`)
  })

/**
 * The longest `instanceId`: a holder id adds `#` and up to 39 characters to
 * it (`instanceId#incarnation.n`, `instanceId/retention#incarnation`) and
 * must stay within the stores' 200.
 *
 * @category models
 * @since 0.1.0
 */
export const maxInstanceIdLength = 160

const checkInstanceId = (id: unknown) => {
  if (id === undefined) return Effect.void
  if (typeof id !== "string" || id.length === 0 || id.length > maxInstanceIdLength) {
    return refuse(
      "instanceId",
      `must be a string of 1 to ${maxInstanceIdLength} characters when given (holder ids add up to 40 to it; got ${typeof id === "string" ? `${id.length} characters` : show(id)})`
    )
  }
  // deno-lint-ignore no-control-regex
  return /[\u0000-\u001f\u007f-\u009f]/.test(id)
    ? refuse("instanceId", "must hold no NUL or other control characters: stores and logs cannot keep them")
    : !V.isWellFormed(id)
    ? refuse("instanceId", V.illFormedReason)
    : Effect.void
}

const atMost = (field: Field, ms: number, ceiling: number, what: string) =>
  ms <= ceiling ? Effect.void : refuse(field, `must be at most ${what} (got ${ms} ms)`)

/** A request key is kept at least 1 s (a claim must outlive the call that made it) and at most a year. */
const checkRequestRetention = (ms: number) =>
  Number.isFinite(ms) && ms >= 1_000
    ? atMost("requestRetention", ms, 366 * dayMillis, "366 days")
    : refuse("requestRetention", `must be a finite duration of at least 1 second (got ${show(ms)} ms)`)

/** The recovery limits: a whole number of attempts, a positive backoff no longer than its cap, a cap a timer can hold. */
const checkRecovery = Effect.fnUntraced(function*(config: BatonConfigShape) {
  yield* wholeNumber("maxRecoveryAttempts", config.maxRecoveryAttempts, undefined, "")
  const { recoveryBackoffMaxMillis: cap, recoveryBackoffMillis: base } = config
  if (!(Number.isFinite(base) && base > 0)) return yield* refuse("recoveryBackoff", `must be a finite duration greater than 0 (got ${show(base)} ms)`)
  yield* atMost("recoveryBackoffMax", cap, maxTimerMillis, `${maxTimerMillis} ms (the longest timer)`)
  if (!(cap >= base)) return yield* refuse("recoveryBackoffMax", `must be at least recoveryBackoff (${base} ms) (got ${show(cap)} ms)`)
})

/** The undo retries: 1 to 100 tries, a positive backoff no longer than its cap, a cap of at most an hour. */
const checkUndo = Effect.fnUntraced(function*(config: BatonConfigShape) {
  const attempts = yield* wholeNumber("undoAttempts", config.undoAttempts, undefined, "")
  if (attempts! > 100) return yield* refuse("undoAttempts", `must be at most 100: an undo that failed 100 times needs a person (got ${attempts})`)
  const { undoBackoffMaxMillis: cap, undoBackoffMillis: base } = config
  if (!(Number.isFinite(base) && base > 0)) return yield* refuse("undoBackoff", `must be a finite duration greater than 0 (got ${show(base)} ms)`)
  yield* atMost("undoBackoffMax", cap, 60 * 60 * 1000, "1 hour: the holder keeps the tree meanwhile")
  if (!(cap >= base)) return yield* refuse("undoBackoffMax", `must be at least undoBackoff (${base} ms) (got ${show(cap)} ms)`)
})

/**
 * Checks a configuration's values against what the runtime, its timers and
 * the stores can hold.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = Effect.fnUntraced(function*(config: BatonConfigShape) {
  yield* checkInstanceId(config.instanceId)
  const { leaseMillis, pauseRetentionMillis, renewMillis, sweepMillis, waitPollMillis } = config
  if (leaseMillis < 1_000) return yield* refuse("lease", `must be at least 1 second: renewals cannot keep a shorter lease (got ${leaseMillis} ms)`)
  yield* atMost("lease", leaseMillis, dayMillis, "24 hours")
  if (renewMillis < 100) return yield* refuse("renewEvery", `must be at least 100 ms (got ${renewMillis} ms)`)
  if (renewMillis >= leaseMillis) {
    return yield* refuse("renewEvery", `must be shorter than the lease (${leaseMillis} ms), or the lease expires between renewals`)
  }
  yield* atMost("waitPoll", waitPollMillis, maxTimerMillis, `${maxTimerMillis} ms (the longest timer)`)
  yield* atMost("sweepInterval", sweepMillis, maxTimerMillis, `${maxTimerMillis} ms (the longest timer)`)
  yield* atMost("pauseRetention", pauseRetentionMillis, Number.MAX_SAFE_INTEGER, `${Number.MAX_SAFE_INTEGER} ms`)
  yield* atMost("historyRetention", config.historyRetentionMillis, Number.MAX_SAFE_INTEGER, `${Number.MAX_SAFE_INTEGER} ms`)
  yield* checkRequestRetention(config.requestRetentionMillis)
  yield* wholeNumber("sweepPageSize", config.sweepPageSize, undefined, "")
  yield* wholeNumber("maxConcurrentSteps", config.maxConcurrentSteps, undefined, ", or unset for no cap")
  yield* wholeNumber("maxRecoveriesPerLook", config.maxRecoveriesPerLook, undefined, "")
  yield* checkRecovery(config)
  yield* Limits.validate(config)
  yield* checkUndo(config)
  yield* ChildConfig.validate(config)
  yield* InputSize.validate(config.maxInputBytes)
  return config
})

/**
 * Checks options and answers the configuration they give; a bad value fails
 * with `BatonConfigError` naming the field.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(options: BatonConfigOptions = {}) {
  if (typeof options !== "object" || options === null) return yield* refuse("options", "must be an object")
  yield* refuseUnknown(options, optionFields)
  yield* checkInstanceId(options.instanceId)
  const leaseMillis = yield* millis("lease", options.lease, defaults.leaseMillis)
  return yield* validate({
    instanceId: options.instanceId,
    leaseMillis,
    renewMillis: yield* millis("renewEvery", options.renewEvery, leaseMillis / 3),
    waitPollMillis: yield* millis("waitPoll", options.waitPoll, defaults.waitPollMillis),
    sweepMillis: yield* millis("sweepInterval", options.sweepInterval, defaults.sweepMillis),
    pauseRetentionMillis: yield* millis("pauseRetention", options.pauseRetention, defaults.pauseRetentionMillis),
    historyRetentionMillis: yield* millis("historyRetention", options.historyRetention, defaults.historyRetentionMillis),
    requestRetentionMillis: yield* millis("requestRetention", options.requestRetention, defaults.requestRetentionMillis),
    sweepPageSize: (yield* wholeNumber("sweepPageSize", options.sweepPageSize, defaults.sweepPageSize, ""))!,
    maxConcurrentSteps: yield* wholeNumber("maxConcurrentSteps", options.maxConcurrentSteps, undefined, ", or unset for no cap"),
    maxRecoveriesPerLook: (yield* wholeNumber("maxRecoveriesPerLook", options.maxRecoveriesPerLook, defaults.maxRecoveriesPerLook, ""))!,
    maxRecoveryAttempts: (yield* wholeNumber("maxRecoveryAttempts", options.maxRecoveryAttempts, defaults.maxRecoveryAttempts, ""))!,
    recoveryBackoffMillis: yield* millis("recoveryBackoff", options.recoveryBackoff, defaults.recoveryBackoffMillis),
    recoveryBackoffMaxMillis: yield* millis("recoveryBackoffMax", options.recoveryBackoffMax, defaults.recoveryBackoffMaxMillis),
    undoAttempts: (yield* wholeNumber("undoAttempts", options.undoAttempts, defaults.undoAttempts, ""))!,
    undoBackoffMillis: yield* millis("undoBackoff", options.undoBackoff, defaults.undoBackoffMillis),
    undoBackoffMaxMillis: yield* millis("undoBackoffMax", options.undoBackoffMax, defaults.undoBackoffMaxMillis),
    // the limit options appear only when set (unset: no quota, over quota waits, no providers)
    ...(options.tenantQuota === undefined ? {} : { tenantQuota: options.tenantQuota }),
    ...(options.onOverQuota === undefined ? {} : { onOverQuota: options.onOverQuota }),
    ...(options.providers === undefined ? {} : { providers: options.providers }),
    ...(options.maxClaimedChildren === undefined ? {} : { maxClaimedChildren: options.maxClaimedChildren }),
    ...(options.maxInlineChildren === undefined ? {} : { maxInlineChildren: options.maxInlineChildren }),
    ...(options.maxInputBytes === undefined ? {} : { maxInputBytes: options.maxInputBytes })
  })
})

/**
 * A `BatonConfig` from options given in code (unset ones take `defaults`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options?: BatonConfigOptions): Layer.Layer<BatonConfig, BatonConfigError> =>
  Layer.effect(BatonConfig)(make(options))

/**
 * A `BatonConfig` with every default.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerDefaults: Layer.Layer<BatonConfig> = Layer.succeed(BatonConfig)(defaults)

/** A number as text becomes that number; anything else stays text, for the check to report as it was written. */
const numberOrText = (text: string): number | string => {
  const trimmed = text.trim()
  return trimmed !== "" && /^[-+0-9.eE]+$/.test(trimmed) && !Number.isNaN(Number(trimmed)) ? Number(trimmed) : text
}

const optionalText = (key: string) => Config.option(Config.String(key)).pipe(Config.map(Option.getOrUndefined))

/**
 * The options read from `BATON_*` keys (see `configKeys`) of the current
 * `ConfigProvider` — the environment by default. A duration is text such as
 * `30 seconds` or a number of milliseconds; every key is optional.
 *
 * @category config
 * @since 0.1.0
 */
export const config: Config.Config<BatonConfigOptions> = Config.all({
  instanceId: optionalText(configKeys.instanceId),
  lease: optionalText(configKeys.lease).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  renewEvery: optionalText(configKeys.renewEvery).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  waitPoll: optionalText(configKeys.waitPoll).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  sweepInterval: optionalText(configKeys.sweepInterval).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  pauseRetention: optionalText(configKeys.pauseRetention).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  historyRetention: optionalText(configKeys.historyRetention).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  requestRetention: optionalText(configKeys.requestRetention).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  sweepPageSize: optionalText(configKeys.sweepPageSize).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  maxConcurrentSteps: optionalText(configKeys.maxConcurrentSteps).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  maxRecoveriesPerLook: optionalText(configKeys.maxRecoveriesPerLook).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  maxRecoveryAttempts: optionalText(configKeys.maxRecoveryAttempts).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  recoveryBackoff: optionalText(configKeys.recoveryBackoff).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  recoveryBackoffMax: optionalText(configKeys.recoveryBackoffMax).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  tenantQuota: optionalText(configKeys.tenantQuota).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  onOverQuota: optionalText(configKeys.onOverQuota).pipe(Config.map((t) => t as "wait" | "fail" | undefined)),
  undoAttempts: optionalText(configKeys.undoAttempts).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  undoBackoff: optionalText(configKeys.undoBackoff).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  undoBackoffMax: optionalText(configKeys.undoBackoffMax).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as Duration.Input)),
  maxClaimedChildren: optionalText(configKeys.maxClaimedChildren).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  maxInlineChildren: optionalText(configKeys.maxInlineChildren).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number)),
  maxInputBytes: optionalText(configKeys.maxInputBytes).pipe(Config.map((t) => t === undefined ? t : numberOrText(t) as number))
})

/** The key a field was read from, added to a refusal of a value from config. */
const fromKey = (error: BatonConfigError) => {
  const key = (configKeys as Record<string, string>)[error.field]
  return key === undefined ? error : new BatonConfigError({ field: error.field, reason: `${error.reason} (read from ${key})` })
}

/**
 * A `BatonConfig` from `Config` (by default `config`: the `BATON_*` keys of
 * the current `ConfigProvider`, which is the environment unless one is
 * provided). A bad value fails with `BatonConfigError` naming the field and,
 * for the `BATON_*` keys, the key; a provider that fails to answer fails
 * with a `BatonConfigError` on field `config`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = (
  options: Config.Config<BatonConfigOptions> = config
): Layer.Layer<BatonConfig, BatonConfigError> =>
  Layer.effect(BatonConfig)(Effect.gen(function*() {
    const read = yield* Effect.mapError(
      Effect.gen(function*() {
        return yield* options
      }),
      (e) => new BatonConfigError({ field: "config", reason: `could not be read: ${e.message}` })
    )
    return yield* make(read).pipe(Effect.mapError(options === config ? fromKey : (e) => e))
  }))
