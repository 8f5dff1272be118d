/**
 * The bodies of `baton describe` and `baton check`: `Diagnostics` over the
 * CLI's target, and their text for people.
 *
 * @since 0.1.0
 */
import { Config, Effect, Option } from "effect"
import * as Diagnostics from "../../runtime/Diagnostics.ts"
import type { StoreFacts } from "../../stores/StoreProbe.ts"
import type { Database, Target } from "./Target.ts"

/**
 * The stores the command line was pointed at, and where that came from.
 *
 * @category models
 * @since 0.1.0
 */
export interface StoresSetting {
  readonly backend: "sqlite" | "pg" | "sharded"
  /** The file, or the URL without its password. */
  readonly location: string
  readonly schema: string | undefined
  readonly tablePrefix: string | undefined
  /** `"flag"` when given on the command line, `"environment"` when read from a variable. */
  readonly source: "flag" | "environment"
  /**
   * Over shards (`backend: "sharded"`, `location` the shards file): each shard's database, and the rule.
   *
   * @since 0.1.0
   */
  readonly shards?: ReadonlyArray<ShardSetting> | undefined
  /** @since 0.1.0 */
  readonly route?: { readonly tenants: Readonly<Record<string, string>>; readonly default: string } | undefined
}

/**
 * One shard of a sharded target, as `describe` prints it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ShardSetting {
  readonly name: string
  readonly backend: "sqlite" | "pg"
  readonly location: string
  readonly schema: string | undefined
  readonly tablePrefix: string | undefined
}

/**
 * What `baton describe` prints.
 *
 * @category models
 * @since 0.1.0
 */
export interface Described {
  readonly settings: ReadonlyArray<Diagnostics.Setting>
  readonly stores: StoresSetting | undefined
}

/** A URL with its password replaced. */
const withoutPassword = (url: string) => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(not a URL)"
  }
}

const envValue = (key: string) =>
  Effect.map(
    Effect.orElseSucceed(Effect.gen(function*() {
      return yield* Config.option(Config.String(key))
    }), () => Option.none<string>()),
    Option.getOrUndefined
  )

/** One database as `describe` prints it. */
const databaseSetting = (database: Database) => ({
  backend: database._tag === "Sqlite" ? "sqlite" as const : "pg" as const,
  location: database._tag === "Sqlite" ? database.path : withoutPassword(database.url),
  schema: database._tag === "Pg" ? database.schema : undefined,
  tablePrefix: database.tablePrefix
})

/** Where the target came from: a variable holding the same value, else the flag. */
const storesOf = Effect.fnUntraced(function*(target: Target) {
  const keys = target._tag === "Sqlite" ? ["BATON_SQLITE", "BATON_SQLITE_PATH"] : target._tag === "Pg" ? ["BATON_PG_URL"] : ["BATON_SHARDS"]
  const value = target._tag === "Sqlite" ? target.path : target._tag === "Pg" ? target.url : target.file
  let source: "flag" | "environment" = "flag"
  for (const key of keys) if ((yield* envValue(key)) === value) source = "environment"
  if (target._tag !== "Sharded") return { ...databaseSetting(target), source } satisfies StoresSetting
  return {
    backend: "sharded",
    location: target.file,
    schema: undefined,
    tablePrefix: undefined,
    source,
    shards: target.shards.map((shard) => ({ name: shard.name, ...databaseSetting(shard.database) })),
    route: target.route
  } satisfies StoresSetting
})

/**
 * The configuration of the `BATON_*` keys (the CLI has no code), with the stores named.
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const describe = Effect.fnUntraced(function*(target: Target | undefined) {
  const { settings } = yield* Diagnostics.describe()
  return { settings, stores: target === undefined ? undefined : yield* storesOf(target) } satisfies Described
})

const pad = (rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n")
}

/**
 * `describe`'s answer for people: one line per option, then the stores.
 *
 * @category output
 * @since 0.1.0
 */
export const describeText = (described: Described): string => {
  const rows = [["OPTION", "KEY", "VALUE", "SOURCE"], ...described.settings.map((s) => [s.field, s.key ?? "(code only)", s.shown, s.source])]
  return `${pad(rows)}\n\n${storesText(described.stores)}`
}

/** One database's line: backend, location, schema and prefix. */
const databaseText = (stores: Pick<StoresSetting, "backend" | "location" | "schema" | "tablePrefix">) =>
  `${stores.backend} ${stores.location}${stores.schema === undefined ? "" : ` schema ${stores.schema}`}${stores.tablePrefix === undefined ? "" : ` prefix ${stores.tablePrefix}`}`

const storesText = (stores: StoresSetting | undefined) => {
  if (stores === undefined) return "stores: none named (--sqlite PATH, --pg URL or --shards FILE, or BATON_SQLITE / BATON_PG_URL / BATON_SHARDS)"
  if (stores.shards === undefined) return `stores: ${databaseText(stores)} (${stores.source})`
  const route = stores.route === undefined ? [] : [
    ...Object.entries(stores.route.tenants).map(([tenant, shard]) => `  tenant ${tenant} → ${shard}`),
    `  any other tenant → ${stores.route.default}`
  ]
  return [`stores: sharded by ${stores.location} (${stores.source})`, ...stores.shards.map((shard) => `  shard ${shard.name}: ${databaseText(shard)}`), ...route].join("\n")
}

/**
 * The check of the `BATON_*` configuration over the stores (and their probe) in context.
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const check = (instances: number | undefined) => Diagnostics.check({ instances })

const storesLine = (facts: StoreFacts | undefined) => {
  if (facts === undefined) return "stores: not probed"
  switch (facts._tag) {
    case "Memory":
      return "stores: in memory (this process only)"
    case "Sqlite":
      return `stores: SQLite ${facts.path} on ${facts.fileSystem ?? "an unknown file system"}${facts.mountPoint === undefined ? "" : ` (${facts.mountPoint})`}`
    case "Postgres":
      return `stores: Postgres ${facts.serverVersion}, ${facts.pooling === "direct" ? "direct connections" : `through a pooler in ${facts.pooling} mode`}, keepalives ${
        facts.keepaliveSeconds === undefined ? "not reported" : `${facts.keepaliveSeconds} s`
      }`
  }
}

/**
 * `check`'s answer for people: what was probed, then one line per warning (`id: message`).
 *
 * @category output
 * @since 0.1.0
 */
export const checkText = (report: Diagnostics.CheckReport): string =>
  [
    storesLine(report.stores),
    "",
    ...(report.warnings.length === 0 ? ["no warnings"] : report.warnings.map((w) => `warning ${w.id}: ${w.message}`))
  ].join("\n")
