/**
 * The bodies of `baton describe` and `baton check`: `Diagnostics` over the
 * CLI's target, and their text for people.
 *
 * @since 0.2.0
 */
import { Config, Effect, Option } from "effect"
import * as Diagnostics from "../../runtime/Diagnostics.ts"
import type { StoreFacts } from "../../stores/StoreProbe.ts"

/** The CLI's target (as `BatonCli.Target`). */
type Target =
  | { readonly _tag: "Sqlite"; readonly path: string; readonly tablePrefix: string | undefined }
  | { readonly _tag: "Pg"; readonly url: string; readonly schema: string | undefined; readonly tablePrefix: string | undefined }

/**
 * The stores the command line was pointed at, and where that came from.
 *
 * @category models
 * @since 0.2.0
 */
export interface StoresSetting {
  readonly backend: "sqlite" | "pg"
  /** The file, or the URL without its password. */
  readonly location: string
  readonly schema: string | undefined
  readonly tablePrefix: string | undefined
  /** `"flag"` when given on the command line, `"environment"` when read from a variable. */
  readonly source: "flag" | "environment"
}

/**
 * What `baton describe` prints.
 *
 * @category models
 * @since 0.2.0
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

/** Where the target came from: a variable holding the same value, else the flag. */
const storesOf = Effect.fnUntraced(function*(target: Target) {
  const keys = target._tag === "Sqlite" ? ["BATON_SQLITE", "BATON_SQLITE_PATH"] : ["BATON_PG_URL"]
  const value = target._tag === "Sqlite" ? target.path : target.url
  let source: "flag" | "environment" = "flag"
  for (const key of keys) if ((yield* envValue(key)) === value) source = "environment"
  return {
    backend: target._tag === "Sqlite" ? "sqlite" : "pg",
    location: target._tag === "Sqlite" ? target.path : withoutPassword(target.url),
    schema: target._tag === "Pg" ? target.schema : undefined,
    tablePrefix: target.tablePrefix,
    source
  } satisfies StoresSetting
})

/**
 * The configuration of the `BATON_*` keys (the CLI has no code), with the stores named.
 *
 * @category diagnostics
 * @since 0.2.0
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
 * @since 0.2.0
 */
export const describeText = (described: Described): string => {
  const rows = [["OPTION", "KEY", "VALUE", "SOURCE"], ...described.settings.map((s) => [s.field, s.key ?? "(code only)", s.shown, s.source])]
  const stores = described.stores === undefined
    ? "stores: none named (--sqlite PATH or --pg URL, or BATON_SQLITE / BATON_PG_URL)"
    : `stores: ${described.stores.backend} ${described.stores.location}${described.stores.schema === undefined ? "" : ` schema ${described.stores.schema}`}${
      described.stores.tablePrefix === undefined ? "" : ` prefix ${described.stores.tablePrefix}`
    } (${described.stores.source})`
  return `${pad(rows)}\n\n${stores}`
}

/**
 * The check of the `BATON_*` configuration over the stores (and their probe) in context.
 *
 * @category diagnostics
 * @since 0.2.0
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
 * @since 0.2.0
 */
export const checkText = (report: Diagnostics.CheckReport): string =>
  [
    storesLine(report.stores),
    "",
    ...(report.warnings.length === 0 ? ["no warnings"] : report.warnings.map((w) => `warning ${w.id}: ${w.message}`))
  ].join("\n")
