/**
 * The `baton` command line, on `effect/cli`: an operator's look into a fleet's
 * shared stores, and the two controls a shell needs.
 *
 * - `status` — executions by status, live leases and who holds them.
 * - `list [--status S] [--tenant T] [--limit N]` — executions, newest first per tenant.
 * - `show <execution> [--tenant T]` — one execution: record, lease, pauses;
 *   without `--tenant`, looked up in every tenant (one that several tenants
 *   hold needs `--tenant`, and the message names them).
 * - `leases` — the leases of Running trees: holder, epoch, expiry, live or not.
 * - `pauses [--tenant T]` — pending pauses with their payloads.
 * - `resume <pauseId> <json> [--tenant T]` — records the decision once; the
 *   fleet continues the tree (a stranded decision is taken by the next sweep
 *   of any instance, within its sweep interval). The CLI has no workflow
 *   code, so the workflow's decision schema is not checked here: answer
 *   through `BatonHttp` where it matters.
 * - `cancel <thread> [--tenant T] [--owner O]` — cancels the thread's active
 *   execution (ended at once when paused; a running one is asked to stop
 *   through a durable request its holder reads within one renewal).
 * - `signal <thread> <name> <json> [--tenant T] [--owner O]` — sends a signal
 *   to the thread's running or paused execution; a wait for it is woken by
 *   the fleet. As for `resume`, the workflow's signal schema is not checked
 *   here (no workflow code): send through `BatonHttp` where it matters.
 * - `checkpoints <thread> [--tenant T] [--owner O] [--ns NS] [--limit N] [--cursor C]`
 *   — the thread's state history, newest first, a page at a time.
 * - `sweep` — one look now, as a sweep sees the fleet: orphaned Running trees
 *   (lease free or expired: an instance recovers them) and stranded decisions.
 *   Read-only: recovering a tree needs its workflow code, which instances have.
 * - `migrate` — brings the store schema to the latest version (every command
 *   does so before it runs; this one only reports it).
 * - `schedules list [--tenant T]`, `schedules show <id>`, `schedules pause <id>`,
 *   `schedules resume <id>`, `schedules delete <id>` (each `[--tenant T] [--owner O]`) —
 *   the fleet's schedules: next tick, last tick's outcome; pause, resume, delete.
 *   (A schedule is created from the API or over HTTP, where the workflow's code is.)
 * - `describe` — the runtime options the `BATON_*` variables and the defaults
 *   give, each with its source, and the stores named (see `Diagnostics`).
 * - `check [--instances N]` — warnings with stable ids for a configuration
 *   that runs but not as intended; exit code 6 when there are any.
 * - `replay <execution> --workflows MODULE [--tenant T] [--call-unrecorded]`
 *   — replays a recorded execution against the workflows the module exports
 *   (see `Evaluation`: model answers and pause decisions from the record,
 *   everything else run for real, on scratch stores in memory); exit code 1
 *   when its output differs from the record's, with the diff.
 * - `golden <execution> --out FILE [--tenant T] [--name N]` — writes the
 *   recorded execution's golden case (no workflow code needed).
 * - `eval <file-or-folder>… --workflows MODULE [--call-unrecorded]` — runs
 *   each golden case against the current workflows: PASS or FAIL with the
 *   diff; exit code 1 when any fails.
 *
 * Global flags: `--sqlite PATH`, `--pg URL` or `--shards FILE` (`BATON_SQLITE` or `BATON_SQLITE_PATH` /
 * `BATON_PG_URL` / `BATON_SHARDS`; a shards file names the databases of a
 * fleet whose tenants are spread over several, and the tenant → shard rule,
 * as `ShardedStores.layer` takes them: each command then routes by tenant and
 * a fleet-wide list fans out, warning on stderr of a shard it could not read),
 * `--schema` for Postgres (`BATON_PG_SCHEMA`), `--prefix`
 * for the app's table prefix (`BATON_TABLE_PREFIX`), `--json` (fields named
 * as in the API and over HTTP: `tenantId`, `executionId`, `rootExecutionId`,
 * `threadId`, `workflowName`, `pauseId`, `instanceId`, `createdAt`, …).
 * Exit codes: 0 done (every replayed case passed), 1 unexpected failure or
 * a replay that does not match (or cannot run: an unrecorded model call or
 * decision), 2 bad usage (stores named wrongly, a workflows module or case
 * file that is not one, included), 3 not found, 4 conflict (already answered, nothing to
 * cancel), 5 a store failed, 6 `check` found warnings.
 *
 * The backends are given by the caller (`src/cli/main.ts` wires SQLite and
 * Postgres), so this module speaks only to the store contracts and the
 * public runtime.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Config, Console, Context, Effect, Exit, Layer, Logger, Option, References } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import type { BatonStores } from "../runtime/Baton.ts"
import type { ExecutionRecord, ExecutionStatus, RecordCursor } from "../stores/ExecutionRecord.ts"
import { BatonConfigError } from "../stores/Errors.ts"
import { defaultTenant } from "../stores/Ids.ts"
import { LeaseStore } from "../stores/LeaseStore.ts"
import { instanceOfHolder } from "../stores/Lease.ts"
import type { Pause } from "../stores/Pause.ts"
import { PauseStore, type RootCursor } from "../stores/PauseStore.ts"
import { RecordStore } from "../stores/RecordStore.ts"
import { TimerStore, type TimerStoreShape } from "../stores/TimerStore.ts"
import { ThreadNotRunningError, ThreadOwnerError, UnknownThreadError } from "../runtime/Errors.ts"
import { ScheduleStore } from "../stores/ScheduleStore.ts"
import type { ScheduleView, SchedulesShape } from "../runtime/Schedules.ts"
import type { StoreProbe } from "../stores/StoreProbe.ts"
import * as Diagnose from "./internal/Diagnose.ts"
import * as Evaluate from "./internal/Evaluate.ts"
import * as Targets from "./internal/Target.ts"
import * as Evaluation from "../runtime/evaluation/Evaluation.ts"
import type { IdGenerator } from "../stores/Ids.ts"
import type { StoreServices } from "../stores/StoreServices.ts"

/**
 * Which shared stores the command works on: a SQLite file, a Postgres
 * database, or the shards of a fleet whose tenants are spread over several
 * (`--shards FILE`; see `ShardedStores`).
 *
 * @category models
 * @since 0.1.0
 */
export type Target = Targets.Target

/**
 * One database of a target: a SQLite file or a Postgres URL (a shard's, over shards).
 *
 * @category models
 * @since 0.1.0
 */
export type Database = Targets.Database

/**
 * How the executable reaches a target: the store Layer (its build migrates), and the schema version it migrates to.
 *
 * @category models
 * @since 0.1.0
 */
export interface Backends {
  readonly stores: (target: Target) => Layer.Layer<BatonStores, unknown>
  readonly schemaVersion: () => Promise<number>
  /**
   * The `StoreProbe` of a database, for `baton check` (without it, check looks at the configuration only);
   * over shards, each shard's database is probed.
   */
  readonly probe?: ((database: Database) => Layer.Layer<StoreProbe, unknown>) | undefined
  /**
   * Fresh in-memory stores for a replay's scratch runtime (`MemoryStores.layer`),
   * for `baton replay` and `baton eval` (without it, they fail saying so).
   *
   * @since 0.1.0
   */
  readonly scratch?: (() => Layer.Layer<StoreServices | IdGenerator, unknown>) | undefined
}

/**
 * The exit codes scripts can rely on.
 *
 * @category models
 * @since 0.1.0
 */
export const ExitCode = { ok: 0, failed: 1, usage: 2, notFound: 3, conflict: 4, store: 5, warnings: 6 } as const

/** A failure the CLI explains itself, with its exit code. */
class CliFailure extends Error {
  readonly code: number
  constructor(code: number, message: string) {
    super(message)
    this.code = code
  }
}

/** An argument's text read as JSON; text that is not JSON is a usage failure naming the argument. */
const jsonFlag = (name: string, text: string): Effect.Effect<unknown, CliFailure> =>
  Effect.try({ try: () => JSON.parse(text) as unknown, catch: (e) => new CliFailure(ExitCode.usage, `the ${name} is not JSON: ${(e as Error).message}`) })

const statuses = ["Running", "Paused", "Finished", "Failed", "Cancelled"] as const satisfies ReadonlyArray<ExecutionStatus>
const pageSize = 500
const rowCap = 100_000

/** A flag of the stores' connection; when it is not given, `config` (an environment variable) gives it. */
const storeFlag = (name: string, description: string, config: Config.Config<string>) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.withFallbackConfig(config), Flag.optional)

// BATON_SQLITE_PATH is what the app's SqliteStores.layerConfig() reads: the CLI finds the same file with it.
const sqlite = storeFlag(
  "sqlite",
  "SQLite file of the fleet's stores",
  Config.String("BATON_SQLITE").pipe(Config.orElse(() => Config.String("BATON_SQLITE_PATH")))
)
const pg = storeFlag("pg", "Postgres URL of the fleet's stores", Config.String("BATON_PG_URL"))
const shards = storeFlag(
  "shards",
  "JSON file naming the shards of a fleet whose tenants are spread over several databases, and its route",
  Config.String("BATON_SHARDS")
)
const schema = storeFlag("schema", "Postgres schema of the stores", Config.String("BATON_PG_SCHEMA"))
const prefix = storeFlag("prefix", "table prefix of the stores (the app's tablePrefix; default baton_)", Config.String("BATON_TABLE_PREFIX"))
const json = Flag.Boolean("json").pipe(Flag.withDescription("print JSON for scripts"), Flag.withDefault(false))
const tenant = Flag.String("tenant").pipe(Flag.withDescription("the tenant (default: every tenant where it applies)"), Flag.optional)

const root = Command.make("baton").pipe(
  Command.withSharedFlags({ sqlite, pg, shards, schema, prefix, json }),
  Command.withDescription("Look into and control a baton fleet over its shared stores")
)

/** The backends of the executable, for the handlers. */
class CliBackends extends Context.Service<CliBackends, Backends>()("baton/cli/Backends") {}

/** The global flags that name the stores. */
interface StoresFlags {
  readonly sqlite: Option.Option<string>
  readonly pg: Option.Option<string>
  readonly shards: Option.Option<string>
  readonly schema: Option.Option<string>
  readonly prefix: Option.Option<string>
}

/** The target the global flags name: exactly one of --sqlite, --pg and --shards. */
const targetOf = (flags: StoresFlags): Effect.Effect<Target, CliFailure> =>
  Effect.flatMap(
    namedTarget(flags),
    (target) =>
      target === undefined
        ? Effect.fail(
          new CliFailure(
            ExitCode.usage,
            "no stores: give --sqlite PATH or --pg URL, or --shards FILE for tenants over several databases (or set BATON_SQLITE or BATON_SQLITE_PATH / BATON_PG_URL / BATON_SHARDS)"
          )
        )
        : Effect.succeed(target)
  )

/** The target the global flags name, or undefined when they name none. */
const namedTarget = (flags: StoresFlags): Effect.Effect<Target | undefined, CliFailure> => {
  const named = [flags.sqlite, flags.pg, flags.shards].filter(Option.isSome).length
  if (named > 1) {
    return Effect.fail(
      new CliFailure(ExitCode.usage, "give one of --sqlite, --pg and --shards, not several (BATON_SQLITE or BATON_SQLITE_PATH, BATON_PG_URL and BATON_SHARDS name them too: unset the others)")
    )
  }
  const tablePrefix = Option.getOrUndefined(flags.prefix)
  const schemaName = Option.getOrUndefined(flags.schema)
  if (Option.isSome(flags.sqlite)) return Effect.succeed({ _tag: "Sqlite", path: flags.sqlite.value, tablePrefix })
  if (Option.isSome(flags.pg)) return Effect.succeed({ _tag: "Pg", url: flags.pg.value, schema: schemaName, tablePrefix })
  if (Option.isSome(flags.shards)) {
    return Effect.mapError(Targets.readShards(flags.shards.value, { schema: schemaName, tablePrefix }), (e) => new CliFailure(ExitCode.usage, e.message))
  }
  return Effect.succeed(undefined)
}

/**
 * The logger of a command over shards: the router's warnings (a shard that is down, a fan-out that
 * answered without a shard) and any other warning or error, on stderr as `baton: warning: …` or
 * `baton: error: …`; the shards a fan-out answered without go to `unread`.
 */
const shardLogger = (unread: Set<string>) =>
  Logger.layer([
    Logger.make(({ fiber, logLevel, message }) => {
      const text = (Array.isArray(message) ? message : [message]).join(" ")
      const without = /answers without shard "([^"]+)"/.exec(text)
      if (without !== null) {
        // One line per shard a command could not read, however many of its pages asked.
        if (unread.has(without[1]!)) return
        unread.add(without[1]!)
      }
      fiber.getRef(Console.Console).error(`baton: ${logLevel === "Warn" ? "warning" : logLevel.toLowerCase()}: ${text}`)
    })
  ])

/**
 * A shard's bundle refusing its options (`BatonConfigError` on `shards[i].layer: …`, e.g. a Postgres
 * database that does not exist), said in the shards file's words: the file and the shard to fix.
 */
const inShardsFile = <E>(target: Targets.Sharded, error: E): E | CliFailure => {
  const field = error instanceof BatonConfigError ? /^shards\[(\d+)\]\.layer: (.*)$/.exec(error.field) : null
  if (field === null) return error
  const shard = target.shards[Number(field[1])]
  const option = shard?.database._tag === "Sqlite" && field[2] === "path" ? "sqlite" : shard?.database._tag === "Pg" && field[2] === "url" ? "pg" : field[2]
  return new CliFailure(
    ExitCode.usage,
    `shards file ${target.file}: shards[${field[1]}]${shard === undefined ? "" : ` ("${shard.name}")`}: \`${option}\` ${(error as BatonConfigError).reason}`
  )
}

/**
 * Runs a command's body over the stores of the target the flags name, built (and migrated) when it
 * runs. Over shards, the router's warnings reach stderr, and a command whose answer lacks a shard
 * that could not be read exits 5 after printing what it read (a "not found" then too: the execution
 * may be on that shard): scripts can tell a partial answer from the fleet's.
 */
const withStores = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const backends = yield* CliBackends
    const target = yield* targetOf(yield* root)
    const body = Effect.provide(self, backends.stores(target))
    if (target._tag !== "Sharded") return yield* body
    const unread = new Set<string>()
    const exit = yield* body.pipe(
      Effect.provideService(References.MinimumLogLevel, "Warn"),
      Effect.provide(shardLogger(unread)),
      Effect.mapError((e) => inShardsFile(target, e)),
      Effect.exit
    )
    const failure = Exit.isFailure(exit) ? failureOf(exit.cause) : undefined
    const notFound = failure?.code === ExitCode.notFound
    if (unread.size === 0 || (failure !== undefined && !notFound)) return yield* exit
    const what = notFound ? `${failure!.message}, on the shards that could be read` : "the answer above is not the whole fleet's"
    const shards = [...unread].map((name) => `"${name}"`).join(", ")
    return yield* Effect.fail(new CliFailure(ExitCode.store, `${what}: shard ${shards} could not be read; run the command again once it is reachable`))
  })

const time = (ms: number | null | undefined) => (ms === null || ms === undefined ? "" : new Date(ms).toISOString())
const short = (value: unknown, max = 60) => {
  const text = JSON.stringify(value) ?? ""
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/**
 * The short header a table gives a field (its rows and `--json` use the API's field names).
 *
 * @category output
 * @since 0.1.0
 */
export const columnHeaders: Readonly<Record<string, string>> = {
  tenantId: "tenant",
  executionId: "execution",
  rootExecutionId: "root",
  threadId: "thread",
  workflowName: "workflow",
  pauseId: "pause",
  instanceId: "instance",
  updatedAt: "updated",
  createdAt: "created",
  expiresAt: "expires",
  checkpointId: "checkpoint",
  parentCheckpointId: "parent",
  parentExecutionId: "parent",
  workflowVersion: "version"
}

/** A cell for people: a time (a field named `…At`, epoch milliseconds as `--json` gives it) as ISO text. */
const cellOf = (field: string, value: unknown): string =>
  typeof value === "number" && field.endsWith("At") ? time(value) : String(value ?? "")

/**
 * A table for people: a header row and aligned columns (`columns` are the rows' fields; the
 * header of each is its short name in `columnHeaders`).
 *
 * @category output
 * @since 0.1.0
 */
export const table = (rows: ReadonlyArray<Record<string, unknown>>, columns: ReadonlyArray<string>): string => {
  if (rows.length === 0) return "(none)"
  const cells = rows.map((r) => columns.map((c) => cellOf(c, r[c])))
  const headers = columns.map((c) => (columnHeaders[c] ?? c).toUpperCase())
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)))
  const line = (values: ReadonlyArray<string>) => values.map((v, i) => v.padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(headers), ...cells.map(line)].join("\n")
}

/** Prints `value` as JSON with --json, else `human()`. */
const output = (value: unknown, human: () => string) =>
  Effect.flatMap(root, (flags) => Console.log(flags.json ? JSON.stringify(value, null, 2) : human()))

/** Every record a paged read answers, page by page from no cursor until it gives none (at most `rowCap`). */
const allPages = <C, E, R>(
  read: (cursor: C | undefined) => Effect.Effect<{ readonly records: ReadonlyArray<ExecutionRecord>; readonly next: C | undefined }, E, R>
) =>
  Effect.gen(function*() {
    const out: Array<ExecutionRecord> = []
    let cursor: C | undefined = undefined
    do {
      const page: { readonly records: ReadonlyArray<ExecutionRecord>; readonly next: C | undefined } = yield* read(cursor)
      out.push(...page.records)
      cursor = page.next
    } while (cursor !== undefined && out.length < rowCap)
    return out
  })

/** Every record in `status`, across tenants. */
const allIn = Effect.fnUntraced(function*(status: ExecutionStatus) {
  const records = yield* RecordStore
  return yield* allPages((after: RecordCursor | undefined) =>
    Effect.map(records.findByStatus(status, pageSize, Option.fromUndefinedOr(after)), (page) => ({
      records: page,
      next: page.length < pageSize ? undefined : { tenantId: page[page.length - 1]!.tenantId, executionId: page[page.length - 1]!.executionId }
    })))
})

const summary = (r: ExecutionRecord) => ({
  tenantId: r.tenantId,
  executionId: r.executionId,
  rootExecutionId: r.rootExecutionId,
  threadId: r.threadId,
  workflowName: r.workflowName,
  status: r.status,
  updatedAt: r.updatedAt,
  error: r.error ?? null
})

/** The record as `show` lists it for people: the summary's fields and where it sits, which version, when it began (`--json` gives every field). */
const detail = (r: ExecutionRecord) => ({
  ...summary(r),
  parentExecutionId: r.parentExecutionId,
  depth: r.depth,
  workflowVersion: r.workflowVersion,
  createdAt: r.createdAt
})

/** The lease of a Running root as the CLI shows it. */
const leaseRow = Effect.fnUntraced(function*(r: ExecutionRecord, now: number) {
  const lease = yield* (yield* LeaseStore).get(r.tenantId, r.rootExecutionId)
  return Option.match(lease, {
    onNone: () => ({ tenantId: r.tenantId, rootExecutionId: r.rootExecutionId, holder: null, instanceId: null, epoch: null, expiresAt: null, live: false }),
    onSome: (l) => ({
      tenantId: r.tenantId,
      rootExecutionId: r.rootExecutionId,
      holder: l.holder,
      instanceId: instanceOfHolder(l.holder),
      epoch: l.epoch,
      expiresAt: l.expiresAt,
      live: l.expiresAt > now
    })
  })
})

const runningLeases = Effect.gen(function*() {
  const now = yield* Clock.currentTimeMillis
  const running = (yield* allIn("Running")).filter((r) => r.executionId === r.rootExecutionId)
  return yield* Effect.forEach(running, (r) => leaseRow(r, now))
})

const status = Command.make("status", {}, () =>
  withStores(Effect.gen(function*() {
    const counts: Record<string, number> = {}
    for (const s of statuses) counts[s] = (yield* allIn(s)).length
    const leases = yield* runningLeases
    const byInstance: Record<string, number> = {}
    for (const l of leases) if (l.live && l.instanceId !== null) byInstance[l.instanceId] = (byInstance[l.instanceId] ?? 0) + 1
    const orphans = leases.filter((l) => !l.live).length
    yield* output({ executions: counts, liveLeases: leases.length - orphans, orphans, treesByInstance: byInstance }, () =>
      [
        table(statuses.map((s) => ({ status: s, executions: counts[s] })), ["status", "executions"]),
        "",
        table(Object.entries(byInstance).map(([instanceId, trees]) => ({ instanceId, trees })), ["instanceId", "trees"]),
        "",
        `live leases: ${leases.length - orphans}, Running trees without a live lease (a sweep recovers them): ${orphans}`
      ].join("\n"))
  }))).pipe(Command.withDescription("Executions by status, live leases and who holds them"))

/** One tenant's Paused executions (on its own shard over shards). */
const pausedIn = Effect.fnUntraced(function*(tenantId: string) {
  const records = yield* RecordStore
  return yield* allPages((cursor: string | undefined) =>
    Effect.map(records.list({ tenantId, status: "Paused", limit: pageSize, cursor }), (page) => ({ records: page.records, next: page.next ?? undefined })))
})

const list = Command.make("list", {
  status: Flag.Literals("status", statuses).pipe(Flag.optional),
  tenant,
  limit: Flag.Int("limit").pipe(
    Flag.filter((n) => n >= 1, (n) => `a whole number ≥ 1 (got ${n})`),
    Flag.withDefault(50)
  )
}, (flags) =>
  withStores(Effect.gen(function*() {
    const records = yield* RecordStore
    let rows: ReadonlyArray<ExecutionRecord>
    if (Option.isSome(flags.tenant)) {
      rows = (yield* records.list({ tenantId: flags.tenant.value, status: Option.getOrUndefined(flags.status), limit: Math.min(flags.limit, 1000) })).records
    } else {
      const wanted = Option.isSome(flags.status) ? [flags.status.value] : statuses
      const all: Array<ExecutionRecord> = []
      for (const s of wanted) all.push(...(yield* allIn(s)))
      rows = all.sort((a, b) => b.createdAt - a.createdAt).slice(0, flags.limit)
    }
    const out = rows.map(summary)
    yield* output(out, () => table(out, ["tenantId", "executionId", "threadId", "workflowName", "status", "updatedAt", "error"]))
  }))).pipe(Command.withDescription("Executions, newest first"))

const pendingOf = (r: ExecutionRecord) =>
  Effect.map(PauseStore.use((p) => p.listByRoot(r.tenantId, r.rootExecutionId, ["Pending"])), (ps) => ps.map(pauseRow))

const pauseRow = (p: Pause) => ({
  pauseId: p.pauseId,
  tenantId: p.tenantId,
  threadId: p.threadId,
  executionId: p.executionId,
  createdAt: p.createdAt,
  payload: p.payload
})

/**
 * The execution `executionId`: in `tenant` when given; else in whichever tenant holds it, when
 * only one does (ids are unique per tenant, not across them). None: not found (3); several: the
 * tenants that hold it, to pick one with --tenant (usage, 2).
 */
const findExecution = Effect.fnUntraced(function*(executionId: string, tenant: Option.Option<string>) {
  const records = yield* RecordStore
  if (Option.isSome(tenant)) {
    const record = yield* records.getRecord(tenant.value, executionId)
    if (Option.isNone(record)) return yield* Effect.fail(new CliFailure(ExitCode.notFound, `no execution ${executionId} in tenant ${tenant.value}`))
    return record.value
  }
  const found: Array<ExecutionRecord> = []
  for (const s of statuses) found.push(...(yield* allIn(s)).filter((r) => r.executionId === executionId))
  if (found.length === 0) return yield* Effect.fail(new CliFailure(ExitCode.notFound, `no execution ${executionId} in any tenant`))
  if (found.length > 1) {
    const tenants = found.map((r) => r.tenantId).sort()
    return yield* Effect.fail(
      new CliFailure(ExitCode.usage, `execution ${executionId} is in ${tenants.length} tenants (${tenants.join(", ")}): give --tenant T to pick one`)
    )
  }
  return found[0]!
})

const show = Command.make("show", { execution: Argument.String("execution"), tenant }, (flags) =>
  withStores(Effect.gen(function*() {
    const r = yield* findExecution(flags.execution, flags.tenant)
    const tenantId = r.tenantId
    const lease = r.status === "Running" ? yield* leaseRow(r, yield* Clock.currentTimeMillis) : null
    const pauses = r.status === "Paused" ? yield* pendingOf(r) : []
    const answers = yield* (yield* RecordStore).listPauseAnswers(tenantId, r.executionId)
    yield* output({ ...r, lease, pendingPauses: pauses, pauseAnswers: answers }, () =>
      [
        table(Object.entries(detail(r)).map(([field, value]) => ({ field: columnHeaders[field] ?? field, value: value === null ? "-" : cellOf(field, value) })), ["field", "value"]),
        ...(lease === null ? [] : ["", table([lease], ["holder", "epoch", "expiresAt", "live"])]),
        ...(pauses.length === 0 ? [] : ["", table(pauses.map((p) => ({ ...p, payload: short(p.payload) })), ["pauseId", "createdAt", "payload"])])
      ].join("\n"))
  }))).pipe(Command.withDescription("One execution: record, lease, pending pauses"))

const leases = Command.make("leases", {}, () =>
  withStores(Effect.gen(function*() {
    const rows = yield* runningLeases
    yield* output(rows, () => table(rows, ["tenantId", "rootExecutionId", "instanceId", "holder", "epoch", "expiresAt", "live"]))
  }))).pipe(Command.withDescription("Leases of Running trees: holder, epoch, expiry, live or not"))

const pauses = Command.make("pauses", { tenant }, (flags) =>
  withStores(Effect.gen(function*() {
    const paused = (Option.isSome(flags.tenant) ? yield* pausedIn(flags.tenant.value) : yield* allIn("Paused")).filter((r) => r.executionId === r.rootExecutionId)
    const rows = (yield* Effect.forEach(paused, pendingOf)).flat()
    yield* output(rows, () => table(rows.map((p) => ({ ...p, payload: short(p.payload) })), ["pauseId", "tenantId", "threadId", "executionId", "createdAt", "payload"]))
  }))).pipe(Command.withDescription("Pending pauses with their payloads"))

const resume = Command.make("resume", { pauseId: Argument.String("pauseId"), decision: Argument.String("json"), tenant }, (flags) =>
  withStores(Effect.gen(function*() {
    const tenantId = Option.getOrElse(flags.tenant, () => defaultTenant)
    const decision = yield* jsonFlag("decision", flags.decision)
    const pauses = yield* PauseStore
    const now = yield* Clock.currentTimeMillis
    const resolved = yield* pauses.resolve({ tenantId, pauseId: flags.pauseId, decision, resolvedBy: "cli", now })
    yield* (yield* RecordStore).savePauseAnswer({ tenantId, executionId: resolved.executionId, pauseId: flags.pauseId, answeredBy: "cli", answeredAt: now })
    yield* output({ recorded: true, pauseId: flags.pauseId, executionId: resolved.executionId }, () =>
      `decision recorded for pause ${flags.pauseId} of execution ${resolved.executionId}; an instance continues the tree at its next sweep`)
  }))).pipe(Command.withDescription("Record a decision for a pending pause (the fleet continues the tree)"))

const cancel = Command.make("cancel", { thread: Argument.String("thread"), tenant, owner: Flag.String("owner").pipe(Flag.optional) }, (flags) =>
  withStores(Effect.gen(function*() {
    const tenantId = Option.getOrElse(flags.tenant, () => defaultTenant)
    // The runtime (LangGraph with it) is loaded only by the command that needs it.
    const Baton = yield* Effect.promise(() => import("../runtime/Baton.ts"))
    const result = yield* Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const result = yield* baton.cancel(flags.thread, { tenantId, ownerId: Option.getOrUndefined(flags.owner) })
      yield* baton.close({ timeout: 0 })
      return result
    }).pipe(
      // The CLI's own instance runs no workflow and lives for this call only: a long sweep interval.
      Effect.provide(Baton.layer({ workflows: [], sweepInterval: "1 hour" }))
    )
    if (!result.cancelled) {
      yield* output({ cancelled: false, threadId: flags.thread }, () =>
        `thread ${flags.thread}: nothing was cancelled here (a running execution was asked to stop, or nothing was active)`)
      return yield* Effect.fail(new CliFailure(ExitCode.conflict, ""))
    }
    yield* output({ cancelled: true, threadId: flags.thread }, () => `thread ${flags.thread}: cancelled`)
  }))).pipe(Command.withDescription("Cancel the thread's running or paused execution"))

/**
 * A signal as `Baton.signal` sends it, less the workflow's schema (no
 * workflow code here): the thread and owner checked, its running or paused
 * root found, the signal kept; one whose tree ended before a wait took it is
 * dropped and refused.
 */
const sendSignal = Effect.fnUntraced(function*(timers: TimerStoreShape, tenantId: string, threadId: string, name: string, payload: unknown, ownerId: string | undefined) {
  const records = yield* RecordStore
  const thread = yield* records.getThread(tenantId, threadId)
  if (Option.isNone(thread)) return yield* new UnknownThreadError({ tenantId, threadId })
  if (thread.value.ownerId !== null && thread.value.ownerId !== ownerId) return yield* new ThreadOwnerError({ tenantId, threadId, ownerId })
  const root = yield* records.findActiveRoot(tenantId, threadId)
  if (Option.isNone(root)) return yield* new ThreadNotRunningError({ tenantId, threadId })
  const { rootExecutionId } = root.value
  const sent = yield* timers.send({ tenantId, threadId, rootExecutionId, name, payload, sentAt: yield* Clock.currentTimeMillis })
  const after = yield* records.getRecord(tenantId, rootExecutionId)
  const over = Option.isNone(after) || ["Finished", "Failed", "Cancelled"].includes(after.value.status)
  if (over && (yield* timers.discard(tenantId, rootExecutionId, sent.seq))) return yield* new ThreadNotRunningError({ tenantId, threadId })
  return sent
})

const signal = Command.make("signal", {
  thread: Argument.String("thread"),
  name: Argument.String("name"),
  payload: Argument.String("json"),
  tenant,
  owner: Flag.String("owner").pipe(Flag.optional)
}, (flags) =>
  withStores(Effect.gen(function*() {
    const tenantId = Option.getOrElse(flags.tenant, () => defaultTenant)
    const payload = yield* jsonFlag("payload", flags.payload)
    const timers = yield* Effect.serviceOption(TimerStore)
    if (Option.isNone(timers)) return yield* Effect.fail(new CliFailure(ExitCode.usage, "these stores have no TimerStore: signals need one"))
    const sent = yield* sendSignal(timers.value, tenantId, flags.thread, flags.name, payload, Option.getOrUndefined(flags.owner))
    yield* output({ sent: true, threadId: flags.thread, executionId: sent.rootExecutionId, name: flags.name, seq: sent.seq }, () =>
      `signal ${flags.name} sent to thread ${flags.thread} (execution ${sent.rootExecutionId}, #${sent.seq}); a wait for it is woken by the fleet`)
  }))).pipe(Command.withDescription("Send a signal to the thread's running or paused execution"))

const checkpoints = Command.make("checkpoints", {
  thread: Argument.String("thread"),
  tenant,
  owner: Flag.String("owner").pipe(Flag.optional),
  ns: Flag.String("ns").pipe(Flag.withDescription("the namespace (default: the graph's own checkpoints)"), Flag.optional),
  limit: Flag.Int("limit").pipe(Flag.withDescription("checkpoints per page (1 to 1000)"), Flag.withDefault(20)),
  cursor: Flag.String("cursor").pipe(Flag.withDescription("a page's next cursor"), Flag.optional)
}, (flags) =>
  withStores(Effect.gen(function*() {
    const Baton = yield* Effect.promise(() => import("../runtime/Baton.ts"))
    const page = yield* Effect.gen(function*() {
      const baton = yield* Baton.Baton
      const page = yield* baton.checkpoints(flags.thread, {
        tenantId: Option.getOrElse(flags.tenant, () => defaultTenant),
        ownerId: Option.getOrUndefined(flags.owner),
        checkpointNs: Option.getOrUndefined(flags.ns),
        cursor: Option.getOrUndefined(flags.cursor),
        limit: flags.limit
      })
      yield* baton.close({ timeout: 0 })
      return page
    }).pipe(Effect.provide(Baton.layer({ workflows: [], sweepInterval: "1 hour" })))
    const rows = page.checkpoints.map((c) => ({ ...c, nodes: c.nodes.join(","), parentCheckpointId: c.parentCheckpointId ?? "" }))
    yield* output(page, () =>
      `${table(rows, ["checkpointId", "step", "source", "nodes", "createdAt", "executionId", "parentCheckpointId"])}${page.next === null ? "" : `\n\nmore: --cursor ${page.next}`}`)
  }))).pipe(Command.withDescription("A thread's checkpoints (its state history), newest first"))

const sweep = Command.make("sweep", {}, () =>
  withStores(Effect.gen(function*() {
    const orphans = (yield* runningLeases).filter((l) => !l.live)
    const pausesStore = yield* PauseStore
    const stranded: Array<RootCursor> = []
    let after = Option.none<RootCursor>()
    while (stranded.length < rowCap) {
      const page = yield* pausesStore.findResolvedRoots(pageSize, after)
      stranded.push(...page)
      if (page.length < pageSize) break
      after = Option.some(page[page.length - 1]!)
    }
    const rows = [
      ...orphans.map((o) => ({ tenantId: o.tenantId, rootExecutionId: o.rootExecutionId, finding: "Running without a live lease: an instance recovers it" })),
      ...stranded.map((s) => ({ tenantId: s.tenantId, rootExecutionId: s.rootExecutionId, finding: "a decision recorded, not yet taken: an instance continues it" }))
    ]
    yield* output({ orphans: orphans.length, strandedDecisions: stranded.length, findings: rows }, () =>
      `${table(rows, ["tenantId", "rootExecutionId", "finding"])}\n\n${orphans.length} orphaned, ${stranded.length} with a stranded decision`)
  }))).pipe(Command.withDescription("One look now, as the recovery sweep sees the fleet (read-only)"))

/** What `eachShard` answers of one shard: `f`'s answer, or why its database could not be opened or `f` failed. */
type ShardOutcome<A> =
  | { readonly name: string; readonly ok: true; readonly value: A }
  | { readonly name: string; readonly ok: false; readonly error: string; readonly code: number }

/**
 * Runs `f` on each shard's database on its own, opened (and so migrated) as a one-database command
 * opens it, apart from the router (which takes a shard it cannot build for down and goes on): what
 * `migrate` and `check` need to speak of every shard, a shard that fails reported, not a stop.
 */
const eachShard = <A, E, R>(target: Targets.Sharded, f: (database: Database) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const backends = yield* CliBackends
    return yield* Effect.forEach(target.shards, (shard) =>
      Effect.map(Effect.exit(Effect.andThen(Effect.provide(Effect.void, backends.stores(shard.database)), f(shard.database))), (exit): ShardOutcome<A> => {
        if (Exit.isSuccess(exit)) return { name: shard.name, ok: true, value: exit.value }
        const failure = failureOf(exit.cause)
        return { name: shard.name, ok: false, error: failure.message, code: failure.code }
      }))
  })

/**
 * The shards of `outcomes` that failed (none: undefined), whether one of them is named wrongly (a
 * folder or database that does not exist: fixed in the file, not waited for), and `others` said of
 * the rest when some are left.
 */
const failedShards = (outcomes: ReadonlyArray<ShardOutcome<unknown>>, others: string) => {
  const failed = outcomes.filter((o) => !o.ok)
  if (failed.length === 0) return undefined
  return {
    names: failed.map((o) => o.name),
    misnamed: failed.some((o) => !o.ok && o.code === ExitCode.usage),
    others: failed.length === outcomes.length ? "" : `; the others ${others}`
  }
}

const migrateShards = (target: Targets.Sharded, version: number) =>
  Effect.gen(function*() {
    const outcomes = yield* eachShard(target, () => Effect.void)
    const shards = outcomes.map((o) => (o.ok ? { name: o.name, migrated: true } : { name: o.name, migrated: false, error: o.error }))
    yield* output({ migrated: shards.every((shard) => shard.migrated), version, shards }, () =>
      shards.map((shard) => shard.migrated ? `shard ${shard.name}: migrated to version ${version}` : `shard ${shard.name}: not migrated: ${shard.error}`).join("\n"))
    const failed = failedShards(outcomes, `are at version ${version}`)
    if (failed === undefined) return
    return yield* Effect.fail(
      new CliFailure(
        failed.misnamed ? ExitCode.usage : ExitCode.store,
        `${failed.names.length} of ${outcomes.length} shard(s) not migrated (${failed.names.join(", ")}): ${
          failed.misnamed ? "fix what each one's error names, then run migrate again" : "run migrate again once they are reachable"
        }${failed.others}`
      )
    )
  })

const migrate = (version: () => Promise<number>) =>
  Command.make("migrate", {}, () =>
    Effect.gen(function*() {
      const target = yield* targetOf(yield* root)
      const v = yield* Effect.promise(version)
      if (target._tag === "Sharded") return yield* migrateShards(target, v)
      yield* withStores(output({ migrated: true, version: v }, () => `stores migrated to version ${v}`))
    })).pipe(Command.withDescription("Bring the stores' schema to the latest version (over shards: every shard's database)"))

/** The schedules API over the store of the target (a bundle without a ScheduleStore is refused). */
const schedulesApi = Effect.gen(function*() {
  const store = yield* Effect.serviceOption(ScheduleStore)
  if (Option.isNone(store)) return yield* Effect.fail(new CliFailure(ExitCode.usage, "these stores keep no schedules (no ScheduleStore)"))
  // Loaded only by the commands that need it, like the runtime for `cancel`.
  const { makeWith } = yield* Effect.promise(() => import("../runtime/Schedules.ts"))
  return makeWith(store.value)
})

const owner = Flag.String("owner").pipe(Flag.withDescription("the owner the schedule was created with"), Flag.optional)
const scopeOf = (flags: { readonly tenant: Option.Option<string>; readonly owner: Option.Option<string> }) => ({
  tenantId: Option.getOrElse(flags.tenant, () => defaultTenant),
  ownerId: Option.getOrUndefined(flags.owner)
})

/** A schedule as a table row. */
const scheduleRow = (v: ScheduleView) => ({
  tenantId: v.tenantId,
  scheduleId: v.scheduleId,
  workflow: v.workflow,
  timing: v.timing._tag === "Cron" ? `${v.timing.expression} (${v.timing.timeZone})` : `every ${v.timing.everyMillis} ms`,
  paused: v.paused,
  next: time(v.nextFireAt),
  last: v.lastTickAt === null ? "" : `${time(v.lastTickAt)} ${v.lastOutcome ?? ""}`,
  started: v.started
})

const scheduleColumns = ["scheduleId", "tenantId", "workflow", "timing", "paused", "next", "last", "started"]

const scheduleList = Command.make("list", { tenant, owner }, (flags) =>
  withStores(Effect.gen(function*() {
    const api = yield* schedulesApi
    const views: Array<ScheduleView> = []
    let cursor: string | undefined
    do {
      const page = yield* api.list({ ...scopeOf(flags), cursor, limit: 1000 })
      views.push(...page.schedules)
      cursor = page.next ?? undefined
    } while (cursor !== undefined && views.length < rowCap)
    yield* output(views, () => table(views.map(scheduleRow), scheduleColumns))
  }))).pipe(Command.withDescription("The tenant's schedules: timing, next tick, last tick's outcome"))

/** A command on one schedule: `f` with the API, printing the view it answers. */
const onSchedule = (name: string, description: string, f: (api: SchedulesShape, id: string, scope: ReturnType<typeof scopeOf>) => Effect.Effect<ScheduleView | { readonly deleted: true }, unknown>) =>
  Command.make(name, { schedule: Argument.String("schedule"), tenant, owner }, (flags) =>
    withStores(Effect.gen(function*() {
      const answer = yield* f(yield* schedulesApi, flags.schedule, scopeOf(flags))
      yield* output(answer, () => ("deleted" in answer ? `schedule ${flags.schedule}: deleted` : table([scheduleRow(answer)], scheduleColumns)))
    }))).pipe(Command.withDescription(description))

const schedules = Command.make("schedules").pipe(
  Command.withDescription("The fleet's schedules: list, show, pause, resume, delete"),
  Command.withSubcommands([
    scheduleList,
    onSchedule("show", "One schedule", (api, id, scope) => api.get(id, scope)),
    onSchedule("pause", "Stop firing the schedule (kept with its state)", (api, id, scope) => api.pause(id, scope)),
    onSchedule("resume", "Fire again from the next tick", (api, id, scope) => api.resume(id, scope)),
    onSchedule("delete", "Delete the schedule (executions it started go on)", (api, id, scope) => api.delete(id, scope))
  ])
)

/** The exit code and the message of a failed run. */
const failureOf = (cause: Cause.Cause<unknown>): { readonly code: number; readonly message: string } => {
  const error = Cause.squash(cause) as { readonly _tag?: string; readonly message?: string; readonly code?: number }
  if (error instanceof CliFailure) return { code: error.code, message: error.message }
  switch (error?._tag) {
    case "UnknownPauseError":
    case "UnknownThreadError":
    case "UnknownExecutionError":
    case "UnknownScheduleError":
      return { code: ExitCode.notFound, message: error.message ?? error._tag }
    case "NotPausedError":
    case "ThreadNotRunningError":
    case "ThreadBusyError":
    case "ThreadOwnerError":
    case "ScheduleOwnerError":
    case "ScheduleExistsError":
      return { code: ExitCode.conflict, message: error.message ?? error._tag }
    case "StoreError":
      return { code: ExitCode.store, message: error.message ?? error._tag }
    case "ExecutionNotRecordedError":
    case "HistoryOffError":
      return { code: ExitCode.notFound, message: error.message ?? error._tag }
    case "WorkflowsModuleError":
    case "CaseFileError":
    case "GoldenCaseError":
      return { code: ExitCode.usage, message: error.message ?? error._tag }
    // A replay that could not finish, as `eval` counts it: a failure (1), said in one line.
    case "NotReplayableError":
    case "UnrecordedModelCallError":
    case "UnrecordedDecisionError":
      return { code: ExitCode.failed, message: error.message ?? error._tag }
    // Stores named wrongly (a path in no folder, a malformed URL) are fixed in the command line, like a bad flag.
    case "BatonConfigError":
    case "InvalidInputError":
      return { code: ExitCode.usage, message: error.message ?? error._tag }
  }
  // effect/cli printed its own message (a bad flag, a missing argument, an unknown command).
  if (CliError.isCliError(error)) return { code: ExitCode.usage, message: "" }
  return { code: ExitCode.failed, message: Cause.pretty(cause) }
}

/**
 * Runs the command line `args` (without the node and script paths) over
 * `backends`; answers the exit code. Help and parse errors are printed by
 * `effect/cli`; other failures by this function, on stderr.
 *
 * @category running
 * @since 0.1.0
 */
export const run = (args: ReadonlyArray<string>, backends: Backends) => {
  const commands = root.pipe(
    Command.withSubcommands([status, list, show, leases, pauses, resume, cancel, sweep, migrate(backends.schemaVersion), signal, schedules, describeCommand, checkCommand, checkpoints, replayCommand, goldenCommand, evalCommand])
  )
  return Command.runWith(commands, { version: "0.1.0" })(args).pipe(
    Effect.provideService(CliBackends, backends),
    Effect.exit,
    Effect.flatMap((exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed(ExitCode.ok as number)
      const { code, message } = failureOf(exit.cause)
      return Effect.as(message === "" ? Effect.void : Console.error(`baton: ${message}`), code)
    }),
    Effect.provideService(References.MinimumLogLevel, "Error")
  )
}

/** Where the global flags' target came from, for `describe` (none: no stores named). */
const targetSource = Effect.flatMap(root, namedTarget)

const describeCommand = Command.make("describe", {}, () =>
  Effect.gen(function*() {
    const target = yield* targetSource
    const described = yield* Diagnose.describe(target)
    yield* output(described, () => Diagnose.describeText(described))
  })).pipe(Command.withDescription("The effective configuration (BATON_* keys and defaults) and where each value came from"))

const checkCommand = Command.make("check", {
  instances: Flag.Int("instances").pipe(
    Flag.withDescription("how many processes run over these stores (default BATON_INSTANCES)"),
    Flag.filter((n) => n >= 1, (n) => `a whole number ≥ 1 (got ${n})`),
    Flag.optional
  )
}, (flags) =>
  Effect.gen(function*() {
    const backends = yield* CliBackends
    const target = yield* targetOf(yield* root)
    const checkOn = (database: Database) => {
      const body = Diagnose.check(Option.getOrUndefined(flags.instances))
      return backends.probe === undefined ? body : Effect.provide(body, backends.probe(database))
    }
    if (target._tag !== "Sharded") {
      const report = yield* withStores(checkOn(target))
      yield* output(report, () => Diagnose.checkText(report))
      if (report.warnings.length > 0) return yield* Effect.fail(new CliFailure(ExitCode.warnings, ""))
      return
    }
    // Each shard is its own database (no router built): its probe, its warnings.
    const outcomes = yield* eachShard(target, checkOn)
    const shards = outcomes.map((o) => (o.ok ? { name: o.name, ...o.value } : { name: o.name, error: o.error }))
    yield* output({ shards }, () =>
      outcomes.map((o) => `shard ${o.name}\n${o.ok ? Diagnose.checkText(o.value) : `not checked: ${o.error}`}`).join("\n\n"))
    const failed = failedShards(outcomes, "were: their reports are above")
    if (failed !== undefined) {
      return yield* Effect.fail(new CliFailure(ExitCode.store, `shard ${failed.names.map((name) => `"${name}"`).join(", ")} could not be checked${failed.others}`))
    }
    if (outcomes.some((o) => o.ok && o.value.warnings.length > 0)) return yield* Effect.fail(new CliFailure(ExitCode.warnings, ""))
  })).pipe(Command.withDescription("Warnings (stable ids) for a configuration that cannot work as intended; exit code 6 when there are any"))

const workflowsFlag = Flag.String("workflows").pipe(Flag.withDescription("module exporting the app's workflows (.js; .ts on Node 24)"))
const callUnrecorded = Flag.Boolean("call-unrecorded").pipe(
  Flag.withDescription("make a model call the record has no answer for, for real (default: the replay fails)"),
  Flag.withDefault(false)
)

/** The run options of a replay: scratch stores in memory from the executable. */
const runOptions = (callForReal: boolean) =>
  Effect.gen(function*() {
    const backends = yield* CliBackends
    if (backends.scratch === undefined) return yield* Effect.fail(new CliFailure(ExitCode.usage, "this executable has no scratch stores for a replay (Backends.scratch)"))
    return { scratch: backends.scratch(), onUnrecorded: callForReal ? "call" : "fail" } satisfies Evaluation.RunOptions as Evaluation.RunOptions
  })

const replayCommand = Command.make("replay", { execution: Argument.String("execution"), tenant, workflows: workflowsFlag, callUnrecorded }, (flags) =>
  withStores(Effect.gen(function*() {
    const workflows = yield* Evaluate.loadWorkflows(flags.workflows)
    const record = yield* findExecution(flags.execution, flags.tenant)
    const c = yield* Evaluation.fromExecution(flags.execution, { tenantId: record.tenantId })
    const workflow = yield* Evaluate.workflowFor(workflows, c, flags.workflows)
    // The CLI provides no service of the app's: the workflows' Effect steps may need none (see docs/evaluation.md).
    const result = yield* (Evaluation.run(workflow, c, yield* runOptions(flags.callUnrecorded)) as Effect.Effect<Evaluation.Result, Evaluation.ReplayError>)
    yield* output(result, () => Evaluate.resultText(result))
    if (!result.passed) return yield* Effect.fail(new CliFailure(ExitCode.failed, ""))
  }))).pipe(Command.withDescription("Replay a recorded execution against the current workflows: model answers and decisions from the record, the rest run for real"))

const goldenCommand = Command.make("golden", {
  execution: Argument.String("execution"),
  tenant,
  out: Flag.String("out").pipe(Flag.withDescription("the golden case file to write")),
  name: Flag.String("name").pipe(Flag.withDescription("the case's name (default: the execution id)"), Flag.optional)
}, (flags) =>
  withStores(Effect.gen(function*() {
    const record = yield* findExecution(flags.execution, flags.tenant)
    const c = yield* Evaluation.fromExecution(flags.execution, { tenantId: record.tenantId, name: Option.getOrUndefined(flags.name) })
    yield* Evaluate.writeCase(flags.out, c)
    const summary = { file: flags.out, name: c.name, workflowName: c.workflowName, answers: c.answers.length, decisions: c.decisions.length, status: c.expected.status }
    yield* output(summary, () => `wrote ${flags.out}: case ${c.name} of ${c.workflowName}, ${c.answers.length} model answer(s), ${c.decisions.length} decision(s), ${c.expected.status}`)
  }))).pipe(Command.withDescription("Write a recorded execution's golden case (input, model answers, decisions, expected output) to a file"))

const evalCommand = Command.make("eval", {
  cases: Argument.String("cases").pipe(Argument.withDescription("golden case files, or folders of them (*.json)"), Argument.atLeast(1)),
  workflows: workflowsFlag,
  callUnrecorded
}, (flags) =>
  Effect.gen(function*() {
    const workflows = yield* Evaluate.loadWorkflows(flags.workflows)
    const cases = yield* Evaluate.readCases(flags.cases)
    const report = yield* (Evaluation.evaluate(workflows, cases, yield* runOptions(flags.callUnrecorded)) as Effect.Effect<Evaluation.Report>)
    yield* output(report, () => [...report.results.map(Evaluate.resultText), `${report.passed} passed, ${report.failed} failed`].join("\n"))
    if (report.failed > 0) return yield* Effect.fail(new CliFailure(ExitCode.failed, ""))
  })).pipe(Command.withDescription("Run golden cases against the current workflows: PASS or FAIL with a diff of the outputs"))
