/**
 * What an operator asks before a fleet goes live: which configuration an
 * instance runs with, and whether it can work as intended.
 *
 * - `describe(code)` — the effective value of every `BatonConfig` option and
 *   where it came from: `"code"` (given in `code`), `"environment"` (a
 *   `BATON_*` key of the current `ConfigProvider`), or `"default"`. Code wins
 *   over the environment, the environment over the defaults.
 * - `check(options)` — warnings with stable ids (`warningIds`) for
 *   configurations that run but not as meant: in-memory stores shared by
 *   several processes, a SQLite file on a network file system, a sweep
 *   slower than the lease, renewals too rare for the lease, children without
 *   a shared queue, Postgres behind a pooler in transaction mode, server
 *   keepalives slower than the lease, request keys kept longer than
 *   answered pauses. The stores are looked at through the `StoreProbe` in
 *   context (`MemoryProbe.layer`, `SqliteProbe.layer`, `PgProbe.layer`).
 *
 * The `baton describe` and `baton check` commands print the same.
 *
 * @since 0.1.0
 */
import { Config, Context, Duration, Effect, Option } from "effect"
import { ChildQueueStore } from "../stores/ChildQueueStore.ts"
import { BatonConfigError, type StoreError } from "../stores/Errors.ts"
import { type StoreFacts, StoreProbe } from "../stores/StoreProbe.ts"
import * as BatonConfig from "./BatonConfig.ts"

/**
 * Where an effective value came from.
 *
 * @category models
 * @since 0.1.0
 */
export type Source = "default" | "environment" | "code"

/**
 * One option as an instance runs with it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Setting {
  /** The option's name, as `BatonConfigOptions` spells it. */
  readonly field: string
  /** The `BATON_*` key that sets it; `undefined` for options set in code only. */
  readonly key: string | undefined
  /** The effective value: milliseconds for durations, the number or word otherwise; `undefined` when unset. */
  readonly value: unknown
  /** The value for people (`30 seconds`, `unset: …`). */
  readonly shown: string
  readonly source: Source
}

/**
 * The effective configuration, option by option, and the checked shape it gives.
 *
 * @category models
 * @since 0.1.0
 */
export interface Description {
  readonly settings: ReadonlyArray<Setting>
  readonly config: BatonConfig.BatonConfigShape
}

/** The shape field of each duration option. */
const durationFields = {
  lease: "leaseMillis",
  renewEvery: "renewMillis",
  waitPoll: "waitPollMillis",
  sweepInterval: "sweepMillis",
  pauseRetention: "pauseRetentionMillis",
  historyRetention: "historyRetentionMillis",
  requestRetention: "requestRetentionMillis",
  recoveryBackoff: "recoveryBackoffMillis",
  recoveryBackoffMax: "recoveryBackoffMaxMillis",
  undoBackoff: "undoBackoffMillis",
  undoBackoffMax: "undoBackoffMaxMillis"
} as const satisfies Partial<Record<keyof BatonConfig.BatonConfigOptions, keyof BatonConfig.BatonConfigShape>>

/** What an option left unset means. */
const unsetMeaning: Partial<Record<keyof BatonConfig.BatonConfigOptions, string>> = {
  instanceId: "generated when the runtime starts",
  maxConcurrentSteps: "no cap",
  tenantQuota: "no quota",
  onOverQuota: "wait",
  providers: "none",
  maxClaimedChildren: "the free step slots with maxConcurrentSteps, else 16",
  maxInlineChildren: "16",
  maxInputBytes: "1 MiB",
  liveOutput: "off",
  pseudonymKey: "a key per execution tree",
  budgets: "none"
}

const showValue = (field: string, value: unknown): string => {
  if (value === undefined) return `unset: ${unsetMeaning[field as keyof BatonConfig.BatonConfigOptions] ?? "default"}`
  if (field in durationFields) return Duration.format(Duration.millis(value as number))
  if (field === "providers") return (value as ReadonlyArray<{ readonly key: string }>).map((p) => p.key).join(", ")
  if (field === "budgets") {
    return (value as ReadonlyArray<{ readonly scope: string; readonly limit: number; readonly window?: string }>)
      .map((b) => `${b.scope} ${b.limit} (${b.window ?? (b.scope === "tree" ? "lifetime" : "day")})`).join(", ")
  }
  // a Redacted (the pseudonym key) shows as <redacted>
  return String(value)
}

/** The value of `field` in a checked configuration. */
const valueOf = (config: BatonConfig.BatonConfigShape, field: string): unknown =>
  (config as unknown as Record<string, unknown>)[(durationFields as Record<string, string>)[field] ?? field]

/** `config` read from the current `ConfigProvider`. */
const read = <A>(config: Config.Config<A>): Effect.Effect<A, Config.ConfigError> =>
  Effect.gen(function*() {
    return yield* config
  })

/** Whether the current `ConfigProvider` has `key`. */
const hasKey = (key: string) =>
  Effect.map(Effect.orElseSucceed(read(Config.option(Config.String(key))), () => Option.none<string>()), Option.isSome)

/**
 * The configuration an instance runs with when its options are `code` over
 * the `BATON_*` keys of the current `ConfigProvider` (code wins), each value
 * with its source. Values that cannot work fail with `BatonConfigError`
 * naming the field, as the Layers do.
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const describe = Effect.fnUntraced(function*(code: BatonConfig.BatonConfigOptions = {}) {
  const environment = yield* read(BatonConfig.config).pipe(
    Effect.mapError((e: Config.ConfigError) => new BatonConfigError({ field: "config", reason: `could not be read: ${e.message.split("\n")[0]}` }))
  )
  const given = Object.fromEntries(Object.entries(code).filter(([, v]) => v !== undefined))
  const config = yield* BatonConfig.make({ ...Object.fromEntries(Object.entries(environment).filter(([, v]) => v !== undefined)), ...given })
  const fields = [...Object.keys(BatonConfig.configKeys), "providers", "budgets"]
  const settings: Array<Setting> = []
  for (const field of fields) {
    const key = (BatonConfig.configKeys as Record<string, string>)[field]
    const source: Source = field in given ? "code" : key !== undefined && (yield* hasKey(key)) ? "environment" : "default"
    const value = valueOf(config, field)
    settings.push({ field, key, value, shown: showValue(field, value), source })
  }
  return { settings, config } satisfies Description
})

/**
 * The ids `check` gives its warnings; stable across versions (scripts may
 * match them).
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const warningIds = {
  memoryStoresSeveralProcesses: "memory-stores-several-processes",
  sqliteNetworkFileSystem: "sqlite-network-filesystem",
  sweepSlowerThanLease: "sweep-interval-exceeds-lease",
  renewTooRare: "renew-at-least-half-lease",
  childrenWithoutSharedQueue: "children-without-shared-queue",
  pgbouncerTransactionMode: "pgbouncer-transaction-mode",
  pgKeepalivesSlowerThanLease: "pg-keepalives-exceed-lease",
  requestRetentionOverPauseRetention: "request-retention-exceeds-pause-retention"
} as const

/**
 * One of the ids in `warningIds`.
 *
 * @category models
 * @since 0.1.0
 */
export type WarningId = (typeof warningIds)[keyof typeof warningIds]

/**
 * A configuration that runs, but not as intended: what is wrong, and what to do.
 *
 * @category models
 * @since 0.1.0
 */
export interface Warning {
  readonly id: WarningId
  readonly message: string
}

/**
 * What `check` found: the warnings (none: nothing known to be wrong), what
 * the store probe answered (`undefined`: no `StoreProbe` in context, so the
 * stores were not looked at), and the configuration checked.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckReport {
  readonly warnings: ReadonlyArray<Warning>
  readonly stores: StoreFacts | undefined
  readonly config: BatonConfig.BatonConfigShape
  readonly instances: number | undefined
}

/**
 * What `check` takes; every field optional.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckOptions {
  /** The configuration to check: default the `BatonConfig` in context, else `describe()`'s (environment and defaults). */
  readonly config?: BatonConfig.BatonConfigShape | undefined
  /**
   * How many processes the deployment runs over these stores (the stores
   * cannot tell it for in-memory ones). Default: the `BATON_INSTANCES` key,
   * else unknown.
   */
  readonly instances?: number | undefined
}

/**
 * The key `check` reads the deployment's process count from when `instances` is not given.
 *
 * @category config
 * @since 0.1.0
 */
export const instancesKey = "BATON_INSTANCES"

/**
 * File system types on which SQLite's locks cannot be relied on (network
 * and distributed file systems); `fuse.*` ones of those services too.
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const networkFileSystems: ReadonlyArray<string> = [
  "nfs",
  "nfs4",
  "cifs",
  "smb3",
  "smbfs",
  "9p",
  "afs",
  "ceph",
  "glusterfs",
  "lustre",
  "gpfs",
  "beegfs",
  "davfs",
  "fuse.sshfs",
  "fuse.glusterfs",
  "fuse.cephfs",
  "fuse.s3fs",
  "fuse.rclone",
  "fuse.davfs2",
  "fuse.gcsfuse",
  "fuse.juicefs"
]

const seconds = (ms: number) => Duration.format(Duration.millis(ms))

/** The warnings about the timing options alone. */
const timingWarnings = (config: BatonConfig.BatonConfigShape): Array<Warning> => {
  const out: Array<Warning> = []
  if (config.sweepMillis > config.leaseMillis) {
    out.push({
      id: warningIds.sweepSlowerThanLease,
      message: `sweepInterval (${seconds(config.sweepMillis)}) is longer than the lease (${seconds(config.leaseMillis)}): a crashed instance's trees wait for the next look after their lease expired, up to ${
        seconds(config.leaseMillis + config.sweepMillis)
      }; set sweepInterval at most the lease`
    })
  }
  if (config.renewMillis * 2 >= config.leaseMillis) {
    out.push({
      id: warningIds.renewTooRare,
      message: `renewEvery (${seconds(config.renewMillis)}) is at least half the lease (${seconds(config.leaseMillis)}): one slow or failed renewal lets the lease expire under a live holder, and another instance takes its trees; renew every third of the lease or more often`
    })
  }
  if (config.requestRetentionMillis > config.pauseRetentionMillis) {
    out.push({
      id: warningIds.requestRetentionOverPauseRetention,
      message: `requestRetention (${seconds(config.requestRetentionMillis)}) is longer than pauseRetention (${
        seconds(config.pauseRetentionMillis)
      }): a keyed resume repeated after its answered pause was deleted, while its key is still kept, can fail with NotPausedError instead of answering the first call's output; keep requestRetention at most pauseRetention`
    })
  }
  return out
}

/** The warnings about the stores the probe saw. */
const storeWarnings = (facts: StoreFacts, config: BatonConfig.BatonConfigShape, instances: number | undefined): Array<Warning> => {
  switch (facts._tag) {
    case "Memory":
      return instances !== undefined && instances > 1
        ? [{
          id: warningIds.memoryStoresSeveralProcesses,
          message: `in-memory stores with ${instances} processes: each process has stores of its own, so they neither share executions nor fence each other; use SqliteStores (one machine) or PgStores`
        }]
        : []
    case "Sqlite":
      return facts.fileSystem !== undefined && networkFileSystems.includes(facts.fileSystem)
        ? [{
          id: warningIds.sqliteNetworkFileSystem,
          message: `the SQLite file ${facts.path} is on a ${facts.fileSystem} network file system (mounted at ${facts.mountPoint}): SQLite's locks and WAL do not hold across machines there, so writes can be lost or the file corrupted; put it on a local disk, or use PgStores for instances on several machines`
        }]
        : []
    case "Postgres": {
      const out: Array<Warning> = []
      if (facts.pooling === "transaction") {
        out.push({
          id: warningIds.pgbouncerTransactionMode,
          message: "the Postgres connections go through a pooler in transaction mode (pgbouncer pool_mode=transaction or statement): the stores work, but no session outlives a transaction, so a crashed instance's trees move only at lease expiry and cross-instance wake-ups fall back to polling; connect directly or through a session-mode pool for crash takeover"
        })
      }
      if (facts.keepaliveSeconds !== undefined && facts.keepaliveSeconds * 1000 > config.leaseMillis) {
        out.push({
          id: warningIds.pgKeepalivesSlowerThanLease,
          message: `the server notices a vanished client after ${facts.keepaliveSeconds} s (tcp_keepalives_idle + interval × count), longer than the lease (${
            seconds(config.leaseMillis)
          }): when a machine is lost (not just its process), its liveness lock stays held and its trees move only at lease expiry; set the server's tcp_keepalives_idle, tcp_keepalives_interval and tcp_keepalives_count so that their sum is below the lease`
        })
      }
      return out
    }
  }
}

const readInstances = Effect.orElseSucceed(read(Config.option(Config.Int(instancesKey))), () => Option.none<number>())

/**
 * Looks at the configuration and the stores in context and answers what
 * cannot work as intended. The stores are looked at through the
 * `StoreProbe` in context (none: only the configuration is checked; the
 * report's `stores` is `undefined`); children through whether a
 * `ChildQueueStore` is in context. Fails only when the probe cannot reach
 * its backend (`StoreError`) or the configuration cannot work at all
 * (`BatonConfigError`).
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const check: (options?: CheckOptions) => Effect.Effect<CheckReport, StoreError | BatonConfigError> = Effect.fnUntraced(function*(
  options: CheckOptions = {}
) {
  const context = yield* Effect.context<never>()
  const config = options.config ??
    Option.getOrUndefined(Context.getOption(context, BatonConfig.BatonConfig)) ??
    (yield* describe()).config
  const instances = options.instances ?? Option.getOrUndefined(yield* readInstances)
  const probe = Option.getOrUndefined(Context.getOption(context, StoreProbe))
  const stores: StoreFacts | undefined = probe === undefined ? undefined : yield* probe.probe
  const warnings = [
    ...(stores === undefined ? [] : storeWarnings(stores, config, instances)),
    ...timingWarnings(config),
    ...(Context.getOption(context, ChildQueueStore)._tag === "None"
      ? [{
        id: warningIds.childrenWithoutSharedQueue,
        message: "no ChildQueueStore is provided: children launched with placement \"any\" fail, and no other instance can take a child; provide one shared by the instances (the MemoryStores, SqliteStores and PgStores bundles include one)"
      } satisfies Warning]
      : [])
  ]
  return { warnings, stores, config, instances } satisfies CheckReport
})
