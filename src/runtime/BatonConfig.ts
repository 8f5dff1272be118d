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
import { Config, Context, type Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { BatonConfigError } from "../stores/Errors.ts"
import type { InstanceId } from "../stores/Ids.ts"
import * as Options from "../stores/internal/options.ts"
import * as V from "../stores/internal/validate.ts"
import type { AnyWorkflow } from "./Workflow.ts"
import * as ChildConfig from "./internal/children/ChildConfig.ts"
import * as InputSize from "./internal/calls/InputSize.ts"
import * as Limits from "./internal/limits/QuotaConfig.ts"
import * as Budget from "./limits/Budget.ts"
import * as RetentionPolicy from "./internal/checkpoints/RetentionPolicy.ts"

/**
 * The options of one instance's runtime, every one optional (see `defaults`).
 *
 * @category models
 * @since 0.1.0
 */
export interface BatonConfigOptions extends ChildConfig.ChildOptions {
  /** This instance's id: 1–200 characters, no control characters; generated when absent. */
  readonly instanceId?: InstanceId | undefined
  /**
   * Lease length of a tree this instance moves: 1 second (renewals cannot
   * keep a shorter one) to 24 hours (a crashed holder blocks its trees that
   * long). Default 30 seconds. The same lease option as `Leader`,
   * `TenantQuota` and `ProviderSlots` take.
   */
  readonly lease?: Duration.Input | undefined
  /** How often the holder renews: at least 100 ms and shorter than the lease. Default a third of the lease (10 seconds). */
  readonly renewEvery?: Duration.Input | undefined
  /**
   * How often a call waiting for a held lease looks again (a release in this
   * process wakes it at once): 10 ms (more often only spins) to 2^31 − 1 ms
   * (the longest timer, about 24.8 days). Default 1 second.
   */
  readonly waitPoll?: Duration.Input | undefined
  /**
   * How often the recovery sweep looks for orphaned trees: 100 ms (each look
   * queries the stores) to 2^31 − 1 ms (the longest timer). Default 30 seconds.
   */
  readonly sweepInterval?: Duration.Input | undefined
  /** How long answered or withdrawn pauses are kept: 1 second to 2^53 − 1 ms. Default 24 hours. */
  readonly pauseRetention?: Duration.Input | undefined
  /** How long execution history snapshots are kept (with an `ExecutionHistoryStore`): 1 second to 2^53 − 1 ms. Default 30 days. */
  readonly historyRetention?: Duration.Input | undefined
  /**
   * How long a request idempotency key (`requestKey` of `start`, `execute`,
   * `resume`) is kept: a repeated call within it gets the first call's
   * execution; after it the key is free again. 1 second (a claim must
   * outlive the call that made it) to 366 days. Default 24 hours.
   */
  readonly requestRetention?: Duration.Input | undefined
  /** Records read per page by the sweep: a whole number from 1 to 10,000 (one query reads a page). Default 100. */
  readonly sweepPageSize?: number | undefined
  /**
   * How many steps (node visits, across trees and tenants) this instance
   * runs at once: a whole number from 1 to 2^53 − 1. A step without a free slot waits its
   * turn. Unset: no cap.
   */
  readonly maxConcurrentSteps?: number | undefined
  /**
   * How many recoveries the sweep of this instance runs at once: a look
   * starts at most this many, counting those earlier looks started that still
   * run, and leaves the other orphaned trees to the next look (woken when a
   * recovery ends). A whole number from 1 to 10,000 (each is a fiber with a
   * lease). Default 100.
   */
  readonly maxRecoveriesPerLook?: number | undefined
  /**
   * How many recoveries of one execution may fail (the graph or a store
   * failing it while its record stays Running) before the sweep marks it
   * Failed with the last cause: a whole number from 1 to 2^53 − 1. Default 5.
   */
  readonly maxRecoveryAttempts?: number | undefined
  /**
   * The wait before retrying a failed recovery; it doubles with each failure
   * of the same execution, up to `recoveryBackoffMax`: 10 ms to 2^31 − 1 ms.
   * Default 1 second.
   */
  readonly recoveryBackoff?: Duration.Input | undefined
  /** The longest wait between two recoveries of one execution: at least `recoveryBackoff`, at most 2^31 − 1 ms (the longest timer). Default 5 minutes. */
  readonly recoveryBackoffMax?: Duration.Input | undefined
  /**
   * A fleet-wide cap on the execution trees one tenant runs at once: a whole
   * number from 1 to 2^53 − 1 (unset: no cap). A permit is a lease held by the tree's holder
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
  /** The wait after a failed try of an undo; it doubles per try, up to `undoBackoffMax`: 10 ms to 1 hour. Default 1 second. */
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
  /**
   * One secret key for the pseudonyms of the whole application, instead of
   * a key made per execution tree: `ctx.pseudonymize(value)` then gives the
   * same token for the same value in every execution of a tenant (so tokens
   * can be joined across executions), and `ctx.reidentify` reads any token
   * of the tenant. Each tenant's tokens are made under a key of its own
   * (derived from this one), so a token never reads in another tenant.
   * Base64 of at least 32 random bytes (`openssl rand -base64 32`); give
   * every instance the same key, and keep it secret (a `Redacted` from
   * `Config.Redacted`, or `BATON_PSEUDONYM_KEY`). Unset: a key per tree,
   * shared by its children.
   */
  readonly pseudonymKey?: Redacted.Redacted<string> | string | undefined
  /**
   * Budgets of the whole application, given to every step as `ctx.budgets`
   * with its tree's root workflow's (see `Budget.DeclaredBudget`): a
   * `"tree"` budget caps every execution tree, a `"tenant"` one each
   * tenant. In code only: no `BATON_*` key.
   */
  readonly budgets?: ReadonlyArray<Budget.DeclaredBudget> | undefined
  /**
   * Live output (`Baton.stream`, the SSE route): each pass runs its graph as
   * a LangGraph stream and appends its step events (`values`, `updates`,
   * `custom`, message tokens) and status changes to the `EventStore`, under
   * its lease. It costs about a millisecond of CPU a step on SQLite, so it is
   * off unless asked for, here for every workflow or per workflow
   * (`Workflow.make({ liveOutput })`, which wins). Default false.
   */
  readonly liveOutput?: boolean | undefined
  /**
   * Checkpoint retention for every thread: keep the last N checkpoints of
   * each namespace of a thread (a whole number from 1 to 1,000,000); older
   * ones are deleted by the fleet's retention leader. A workflow's own
   * `checkpointKeepLast` wins. Unset: kept for ever.
   *
   * @since 0.1.0
   */
  readonly checkpointKeepLast?: number | undefined
  /**
   * Checkpoint retention for every thread: keep checkpoints younger than
   * this (1 second to 2^53 − 1 ms). With `checkpointKeepLast` too, a
   * checkpoint stays only while both keep it. The newest of each namespace
   * always stays. Unset: no age limit.
   *
   * @since 0.1.0
   */
  readonly checkpointKeepFor?: Duration.Input | undefined
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
  /** The application's pseudonym key, base64 (`undefined`: a key per execution tree). */
  readonly pseudonymKey?: Redacted.Redacted<string> | undefined
  /** The application's declared budgets (`undefined`: none). */
  readonly budgets?: ReadonlyArray<Budget.DeclaredBudget> | undefined
  /** Live output for every workflow that does not say (`undefined`: off). */
  readonly liveOutput?: boolean | undefined
  /** Checkpoints kept per namespace of a thread (`undefined`: no count limit). @since 0.1.0 */
  readonly checkpointKeepLast?: number | undefined
  /** How long checkpoints are kept (`undefined`: no age limit). @since 0.1.0 */
  readonly checkpointKeepForMillis?: number | undefined
}

/**
 * The runtime's configuration, as a service `Baton.layerWith` reads.
 *
 * @category services
 * @since 0.1.0
 */
export class BatonConfig extends Context.Service<BatonConfig, BatonConfigShape>()("baton/BatonConfig") {}

/**
 * The values used for options left out: a 30 s lease renewed every 10 s,
 * waits polled every second, a sweep every 30 s reading pages of 100
 * records and starting at most 100 recoveries a look, answered pauses and
 * request keys kept 24 hours, history 30 days, 5 recovery attempts 1 s
 * apart doubling up to 5 minutes, 5 tries of an undo 1 s apart doubling up
 * to 30 s; no step cap, no tenant quota.
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
  maxChildDepth: "BATON_MAX_CHILD_DEPTH",
  maxInputBytes: "BATON_MAX_INPUT_BYTES",
  pseudonymKey: "BATON_PSEUDONYM_KEY",
  liveOutput: "BATON_LIVE_OUTPUT",
  checkpointKeepLast: "BATON_CHECKPOINT_KEEP_LAST",
  checkpointKeepFor: "BATON_CHECKPOINT_KEEP_FOR"
} as const satisfies { readonly [K in keyof Required<Omit<BatonConfigOptions, "providers" | "budgets">>]: string }

type Field = keyof typeof configKeys

const optionFields = [...Object.keys(configKeys), "providers", "budgets"] as ReadonlyArray<Field | "providers" | "budgets">

const dayMillis = 24 * 60 * 60 * 1000
const timer = "the longest timer"

/** The check of every option but the lease, the instance id and the limit and child options (each of those has its own). */
const checks = {
  waitPoll: Options.pollPeriod,
  sweepInterval: Options.duration({ min: 100, max: Options.maxTimerMillis, minWhy: "each look queries the stores", maxWhy: timer }),
  pauseRetention: Options.duration({ min: 1_000, max: Number.MAX_SAFE_INTEGER }),
  historyRetention: Options.duration({ min: 1_000, max: Number.MAX_SAFE_INTEGER }),
  requestRetention: Options.duration({ min: 1_000, max: 366 * dayMillis, minWhy: "a claim must outlive the call that made it" }),
  sweepPageSize: Options.whole({ min: 1, max: 10_000, why: "one query reads a page" }),
  maxConcurrentSteps: Options.whole({ min: 1, max: Number.MAX_SAFE_INTEGER, unset: "unset for no cap" }),
  maxRecoveriesPerLook: Options.whole({ min: 1, max: 10_000, why: "each is a fiber holding a lease" }),
  maxRecoveryAttempts: Options.whole({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  recoveryBackoff: Options.duration({ min: 10, max: Options.maxTimerMillis, maxWhy: timer }),
  recoveryBackoffMax: Options.duration({ min: 10, max: Options.maxTimerMillis, maxWhy: timer }),
  undoAttempts: Options.whole({ min: 1, max: 100, why: "an undo that failed 100 times needs a person" }),
  undoBackoff: Options.duration({ min: 10, max: 60 * 60 * 1000, maxWhy: "the holder keeps the tree meanwhile" }),
  undoBackoffMax: Options.duration({ min: 10, max: 60 * 60 * 1000, maxWhy: "the holder keeps the tree meanwhile" })
} as const

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
    return Effect.fail(new BatonConfigError({
      field: "instanceId",
      reason: `must be a string of 1 to ${maxInstanceIdLength} characters when given (holder ids add up to 40 to it; got ${
        typeof id === "string" ? `${id.length} characters` : Options.show(id)
      })`
    }))
  }
  // deno-lint-ignore no-control-regex
  return /[\u0000-\u001f\u007f-\u009f]/.test(id)
    ? Effect.fail(new BatonConfigError({ field: "instanceId", reason: "must hold no NUL or other control characters: stores and logs cannot keep them" }))
    : !V.isWellFormed(id)
    ? Effect.fail(new BatonConfigError({ field: "instanceId", reason: V.illFormedReason }))
    : Effect.void
}

/** A backoff no longer than its cap (both already within their ranges). */
const capAtLeast = (field: Field, cap: number, base: Field, baseMillis: number) =>
  cap >= baseMillis
    ? Effect.void
    : Effect.fail(new BatonConfigError({ field, reason: `is ${cap} ms: it must be at least ${base} (${baseMillis} ms)` }))

/**
 * Checks a configuration's values against what the runtime, its timers and
 * the stores can hold: the same checks as `make` applies to options, on the
 * milliseconds of the shape.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = Effect.fnUntraced(function*(config: BatonConfigShape) {
  yield* checkInstanceId(config.instanceId)
  yield* Options.leaseTiming(config.leaseMillis, config.renewMillis)
  yield* Options.setting("waitPoll", config.waitPollMillis, checks.waitPoll, 0)
  yield* Options.setting("sweepInterval", config.sweepMillis, checks.sweepInterval, 0)
  yield* Options.setting("pauseRetention", config.pauseRetentionMillis, checks.pauseRetention, 0)
  yield* Options.setting("historyRetention", config.historyRetentionMillis, checks.historyRetention, 0)
  yield* Options.setting("requestRetention", config.requestRetentionMillis, checks.requestRetention, 0)
  yield* Options.setting("sweepPageSize", config.sweepPageSize, checks.sweepPageSize, 0)
  yield* Options.setting("maxConcurrentSteps", config.maxConcurrentSteps, checks.maxConcurrentSteps, undefined)
  yield* Options.setting("maxRecoveriesPerLook", config.maxRecoveriesPerLook, checks.maxRecoveriesPerLook, 0)
  yield* Options.setting("maxRecoveryAttempts", config.maxRecoveryAttempts, checks.maxRecoveryAttempts, 0)
  yield* Options.setting("recoveryBackoff", config.recoveryBackoffMillis, checks.recoveryBackoff, 0)
  yield* Options.setting("recoveryBackoffMax", config.recoveryBackoffMaxMillis, checks.recoveryBackoffMax, 0)
  yield* capAtLeast("recoveryBackoffMax", config.recoveryBackoffMaxMillis, "recoveryBackoff", config.recoveryBackoffMillis)
  yield* Limits.validate(config)
  yield* Options.setting("undoAttempts", config.undoAttempts, checks.undoAttempts, 0)
  yield* Options.setting("undoBackoff", config.undoBackoffMillis, checks.undoBackoff, 0)
  yield* Options.setting("undoBackoffMax", config.undoBackoffMaxMillis, checks.undoBackoffMax, 0)
  yield* capAtLeast("undoBackoffMax", config.undoBackoffMaxMillis, "undoBackoff", config.undoBackoffMillis)
  yield* ChildConfig.validate(config)
  yield* InputSize.validate(config.maxInputBytes)
  if (config.pseudonymKey !== undefined) yield* checkPseudonymKey(config.pseudonymKey)
  yield* Budget.validateDeclared("budgets", config.budgets)
  yield* RetentionPolicy.make(config.checkpointKeepLast, config.checkpointKeepForMillis)
  return config
})

/** The fewest bytes an application pseudonym key holds (AES-256 and HMAC-SHA-256 keys). */
const pseudonymKeyBytes = 32

/** A pseudonym key must be base64 of at least 32 bytes; the reason never shows the key. */
const checkPseudonymKey = (key: unknown): Effect.Effect<void, BatonConfigError> => {
  const text = Redacted.isRedacted(key) ? Redacted.value(key) : key
  const fail = (reason: string) => Effect.fail(new BatonConfigError({ field: "pseudonymKey", reason }))
  if (typeof text !== "string") return fail("must be a base64 text (or a Redacted one)")
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return fail("must be base64 (make one with `openssl rand -base64 32`)")
  const bytes = Buffer.from(text, "base64").length
  return bytes < pseudonymKeyBytes
    ? fail(`holds ${bytes} bytes: it must hold at least ${pseudonymKeyBytes} random bytes (make one with \`openssl rand -base64 32\`)`)
    : Effect.void
}

/** The checkpoint retention fields of the shape, present only when set. */
const checkpointRetention = Effect.fnUntraced(function*(options: BatonConfigOptions) {
  const policy = yield* RetentionPolicy.make(options.checkpointKeepLast, options.checkpointKeepFor)
  return {
    ...(policy?.keepLast === undefined ? {} : { checkpointKeepLast: policy.keepLast }),
    ...(policy?.keepForMillis === undefined ? {} : { checkpointKeepForMillis: policy.keepForMillis })
  }
})

/**
 * Checks options and answers the configuration they give; a bad value fails
 * with `BatonConfigError` naming the field and the range it may take.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(options: BatonConfigOptions = {}) {
  if (typeof options !== "object" || options === null) return yield* Effect.fail(new BatonConfigError({ field: "options", reason: "must be an object" }))
  yield* refuseUnknown(options, optionFields)
  yield* checkInstanceId(options.instanceId)
  const { leaseMillis, renewMillis } = yield* Options.leaseTiming(options.lease, options.renewEvery)
  const set = <K extends keyof typeof checks, D>(field: K, fallback: D) => Options.setting(field, options[field], checks[field], fallback)
  return yield* validate({
    instanceId: options.instanceId,
    leaseMillis,
    renewMillis,
    waitPollMillis: yield* set("waitPoll", defaults.waitPollMillis),
    sweepMillis: yield* set("sweepInterval", defaults.sweepMillis),
    pauseRetentionMillis: yield* set("pauseRetention", defaults.pauseRetentionMillis),
    historyRetentionMillis: yield* set("historyRetention", defaults.historyRetentionMillis),
    requestRetentionMillis: yield* set("requestRetention", defaults.requestRetentionMillis),
    sweepPageSize: yield* set("sweepPageSize", defaults.sweepPageSize),
    maxConcurrentSteps: yield* set("maxConcurrentSteps", undefined),
    maxRecoveriesPerLook: yield* set("maxRecoveriesPerLook", defaults.maxRecoveriesPerLook),
    maxRecoveryAttempts: yield* set("maxRecoveryAttempts", defaults.maxRecoveryAttempts),
    recoveryBackoffMillis: yield* set("recoveryBackoff", defaults.recoveryBackoffMillis),
    recoveryBackoffMaxMillis: yield* set("recoveryBackoffMax", defaults.recoveryBackoffMaxMillis),
    undoAttempts: yield* set("undoAttempts", defaults.undoAttempts),
    undoBackoffMillis: yield* set("undoBackoff", defaults.undoBackoffMillis),
    undoBackoffMaxMillis: yield* set("undoBackoffMax", defaults.undoBackoffMaxMillis),
    // the limit options appear only when set (unset: no quota, over quota waits, no providers)
    ...(options.tenantQuota === undefined ? {} : { tenantQuota: options.tenantQuota }),
    ...(options.onOverQuota === undefined ? {} : { onOverQuota: options.onOverQuota }),
    ...(options.providers === undefined ? {} : { providers: options.providers }),
    ...(options.maxClaimedChildren === undefined ? {} : { maxClaimedChildren: options.maxClaimedChildren }),
    ...(options.maxInlineChildren === undefined ? {} : { maxInlineChildren: options.maxInlineChildren }),
    ...(options.maxChildDepth === undefined ? {} : { maxChildDepth: options.maxChildDepth }),
    ...(options.maxInputBytes === undefined ? {} : { maxInputBytes: options.maxInputBytes }),
    ...(options.pseudonymKey === undefined ? {} : { pseudonymKey: redacted(options.pseudonymKey) }),
    ...(options.budgets === undefined ? {} : { budgets: options.budgets }),
    ...(options.liveOutput === undefined ? {} : { liveOutput: yield* Options.setting("liveOutput", options.liveOutput, Options.boolean, false) }),
    ...(yield* checkpointRetention(options))
  })
})

const redacted = (key: Redacted.Redacted<string> | string): Redacted.Redacted<string> =>
  Redacted.isRedacted(key) ? key : Redacted.make(key, { label: "pseudonymKey" })

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

/** A duration as config text: `"30 seconds"` (any unit `Duration` reads) or a number of milliseconds. */
const DurationText = Schema.Union([Schema.DurationFromString, Schema.FiniteFromString.pipe(Schema.decodeTo(Schema.DurationFromMillis))])

const durationKey = (key: string) => Config.schema(DurationText, key)

/** What each kind of key holds, for a value that is not one. */
const durationText = `a duration such as "30 seconds", or a number of milliseconds`
const intText = "a whole number"

/** The typed reader of each `BATON_*` key, with what a value of it looks like. */
const readers = {
  instanceId: [Config.String(configKeys.instanceId), "a text"],
  lease: [durationKey(configKeys.lease), durationText],
  renewEvery: [durationKey(configKeys.renewEvery), durationText],
  waitPoll: [durationKey(configKeys.waitPoll), durationText],
  sweepInterval: [durationKey(configKeys.sweepInterval), durationText],
  pauseRetention: [durationKey(configKeys.pauseRetention), durationText],
  historyRetention: [durationKey(configKeys.historyRetention), durationText],
  requestRetention: [durationKey(configKeys.requestRetention), durationText],
  sweepPageSize: [Config.Int(configKeys.sweepPageSize), intText],
  maxConcurrentSteps: [Config.Int(configKeys.maxConcurrentSteps), intText],
  maxRecoveriesPerLook: [Config.Int(configKeys.maxRecoveriesPerLook), intText],
  maxRecoveryAttempts: [Config.Int(configKeys.maxRecoveryAttempts), intText],
  recoveryBackoff: [durationKey(configKeys.recoveryBackoff), durationText],
  recoveryBackoffMax: [durationKey(configKeys.recoveryBackoffMax), durationText],
  tenantQuota: [Config.Int(configKeys.tenantQuota), intText],
  onOverQuota: [Config.Literals(["wait", "fail"], configKeys.onOverQuota), `"wait" or "fail"`],
  undoAttempts: [Config.Int(configKeys.undoAttempts), intText],
  undoBackoff: [durationKey(configKeys.undoBackoff), durationText],
  undoBackoffMax: [durationKey(configKeys.undoBackoffMax), durationText],
  maxClaimedChildren: [Config.Int(configKeys.maxClaimedChildren), intText],
  maxInlineChildren: [Config.Int(configKeys.maxInlineChildren), intText],
  maxChildDepth: [Config.Int(configKeys.maxChildDepth), intText],
  maxInputBytes: [Config.Int(configKeys.maxInputBytes), intText],
  pseudonymKey: [Config.Redacted(configKeys.pseudonymKey), "a base64 key"],
  liveOutput: [Config.Boolean(configKeys.liveOutput), "true or false"],
  checkpointKeepLast: [Config.Int(configKeys.checkpointKeepLast), intText],
  checkpointKeepFor: [durationKey(configKeys.checkpointKeepFor), durationText]
} as const satisfies { readonly [K in Field]: readonly [Config.Config<Required<BatonConfigOptions>[K]>, string] }

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> => Config.map(Config.option(config), Option.getOrUndefined)

/**
 * The options read from `BATON_*` keys (see `configKeys`) of the current
 * `ConfigProvider` — the environment by default — each typed as it is read
 * (`Config.Duration`-like durations, which also take a number of
 * milliseconds; `Config.Int` counts; `Config.Literals` choices); every key
 * is optional. Their ranges are checked by `make`, as for options in code.
 *
 * @category config
 * @since 0.1.0
 */
export const config: Config.Config<BatonConfigOptions> = Config.all(
  Object.fromEntries(Object.entries(readers).map(([field, [reader]]) => [field, optional(reader as Config.Config<unknown>)])) as {
    readonly [K in Field]: Config.Config<BatonConfigOptions[K]>
  }
)

/** The key a field was read from, added to a refusal of a value from config. */
const fromKey = (error: BatonConfigError) => {
  const key = (configKeys as Record<string, string>)[error.field]
  return key === undefined ? error : new BatonConfigError({ field: error.field, reason: `${error.reason} (read from ${key})` })
}

/** Reads the `BATON_*` keys one by one, so that a value of the wrong kind is refused naming its field and key. */
const readKeys = Effect.gen(function*() {
  const read: Record<string, unknown> = {}
  for (const [field, [reader, expected]] of Object.entries(readers) as Array<[Field, readonly [Config.Config<unknown>, string]]>) {
    read[field] = yield* optional(reader).pipe(
      Effect.catch((e: Config.ConfigError) =>
        optional(Config.String(configKeys[field])).pipe(
          Effect.orElseSucceed(() => undefined),
          Effect.flatMap((text) =>
            Effect.fail(
              new BatonConfigError({
                field,
                reason: text === undefined
                  ? `could not be read (${e.message.split("\n")[0]}; read from ${configKeys[field]})`
                  : `is ${Options.show(text)}: it must be ${expected} (read from ${configKeys[field]})`
              })
            )
          )
        )
      )
    )
  }
  return read as BatonConfigOptions
})

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
    if (options === config) return yield* make(yield* readKeys).pipe(Effect.mapError(fromKey))
    const read = yield* Effect.mapError(
      Effect.gen(function*() {
        return yield* options
      }),
      (e) => new BatonConfigError({ field: "config", reason: `could not be read: ${e.message}` })
    )
    return yield* make(read)
  }))
