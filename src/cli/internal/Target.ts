/**
 * The stores the command line works on, and the shards file of a fleet
 * whose tenants are spread over several databases (`--shards FILE`).
 *
 * The file is JSON:
 *
 * ```json
 * {
 *   "shards": [
 *     { "name": "a", "pg": "postgres://127.0.0.1:5432/baton_a" },
 *     { "name": "b", "pg": "postgres://127.0.0.1:5432/baton_b", "schema": "baton" },
 *     { "name": "c", "sqlite": "c.sqlite" }
 *   ],
 *   "route": { "tenants": { "acme": "b" }, "default": "a" }
 * }
 * ```
 *
 * the same shards and rule the app gives `ShardedStores.layer`. A shard
 * names one of `sqlite` (a path, relative to the file's folder) and `pg`
 * (a URL), and may name its own `schema` (Postgres) and `prefix` (table
 * prefix); the global `--schema` and `--prefix` are the default of a shard
 * that names none.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { readFile } from "node:fs/promises"
import * as Path from "node:path"

/**
 * One database: a SQLite file or a Postgres URL (with its schema).
 *
 * @category models
 * @since 0.1.0
 */
export type Database =
  | { readonly _tag: "Sqlite"; readonly path: string; readonly tablePrefix: string | undefined }
  | { readonly _tag: "Pg"; readonly url: string; readonly schema: string | undefined; readonly tablePrefix: string | undefined }

/**
 * Tenants over several databases: each shard's database, and the rule that
 * maps a tenant to a shard (a table with a default, as `ShardedStores.Route`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Sharded {
  readonly _tag: "Sharded"
  /** The shards file, as given. */
  readonly file: string
  readonly shards: ReadonlyArray<{ readonly name: string; readonly database: Database }>
  readonly route: { readonly tenants: Readonly<Record<string, string>>; readonly default: string }
}

/**
 * Which shared stores the command works on.
 *
 * @category models
 * @since 0.1.0
 */
export type Target = Database | Sharded

/**
 * The shards file was not one: `reason` names the field and what to write.
 *
 * @category errors
 * @since 0.1.0
 */
export class ShardsFileError extends Schema.TaggedError<ShardsFileError>()("ShardsFileError", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `shards file ${this.file}: ${this.reason}`
  }
}

const ShardEntry = Schema.Struct({
  name: Schema.String,
  sqlite: Schema.optional(Schema.String),
  pg: Schema.optional(Schema.String),
  schema: Schema.optional(Schema.String),
  prefix: Schema.optional(Schema.String)
})
const ShardsFile = Schema.Struct({
  shards: Schema.Array(ShardEntry),
  route: Schema.Struct({
    tenants: Schema.optional(Schema.Record(Schema.String, Schema.String)),
    default: Schema.String
  })
})
const decodeShardsFile = (input: unknown) => Schema.decodeUnknownEffect(ShardsFile)(input, { errors: "first", onExcessProperty: "error" })

/** One shard's database, or why it is not one. */
const databaseOf = (
  entry: typeof ShardEntry.Type,
  at: string,
  folder: string,
  defaults: { readonly schema: string | undefined; readonly tablePrefix: string | undefined }
): Database | string => {
  const tablePrefix = entry.prefix ?? defaults.tablePrefix
  if ((entry.sqlite === undefined) === (entry.pg === undefined)) return `${at}: give one of "sqlite" (a file) and "pg" (a URL)`
  if (entry.sqlite !== undefined) {
    if (entry.schema !== undefined) return `${at}.schema: a schema is for a Postgres shard; this one is a SQLite file`
    return { _tag: "Sqlite", path: Path.resolve(folder, entry.sqlite), tablePrefix }
  }
  return { _tag: "Pg", url: entry.pg!, schema: entry.schema ?? defaults.schema, tablePrefix }
}

/** Whether two databases hold the same tables (the same file, or the same URL and schema, and the same prefix; no prefix is the default). */
const sameTables = (a: Database, b: Database): boolean =>
  (a.tablePrefix ?? "baton_") === (b.tablePrefix ?? "baton_") &&
  (a._tag === "Sqlite" ? b._tag === "Sqlite" && a.path === b.path : b._tag === "Pg" && a.url === b.url && a.schema === b.schema)

/** The shards and rule of a decoded file, or why they cannot work. */
const shardedOf = (
  file: string,
  parsed: typeof ShardsFile.Type,
  defaults: { readonly schema: string | undefined; readonly tablePrefix: string | undefined }
): Sharded | string => {
  if (parsed.shards.length === 0) return "shards: give at least one shard"
  const folder = Path.dirname(Path.resolve(file))
  const names = new Set<string>()
  const shards: Array<Sharded["shards"][number]> = []
  for (const [i, entry] of parsed.shards.entries()) {
    if (entry.name === "") return `shards[${i}].name: give the shard a non-empty name`
    if (names.has(entry.name)) return `shards[${i}].name: shard "${entry.name}" is named twice`
    names.add(entry.name)
    const database = databaseOf(entry, `shards[${i}]`, folder, defaults)
    if (typeof database === "string") return database
    const twin = shards.findIndex((shard) => sameTables(shard.database, database))
    if (twin >= 0) {
      return `shards[${i}]: the same tables as shards[${twin}] ("${shards[twin]!.name}"), so every row would be read twice: give each shard its own database, schema or prefix`
    }
    shards.push({ name: entry.name, database })
  }
  const tenants = parsed.route.tenants ?? {}
  if (!names.has(parsed.route.default)) return `route.default: "${parsed.route.default}" is not a shard (the shards are ${[...names].join(", ")})`
  for (const [tenant, shard] of Object.entries(tenants)) {
    if (!names.has(shard)) return `route.tenants.${tenant}: "${shard}" is not a shard (the shards are ${[...names].join(", ")})`
  }
  return { _tag: "Sharded", file, shards, route: { tenants, default: parsed.route.default } }
}

/**
 * Reads the shards file: fails with `ShardsFileError` naming the field when
 * it cannot be read, is not JSON, or names shards that cannot work (none,
 * a name given twice, a shard with neither or both of `sqlite` and `pg`, two
 * shards on the same tables, a rule naming a shard that is not one, an
 * unknown field).
 *
 * @category constructors
 * @since 0.1.0
 */
export const readShards = (
  file: string,
  defaults: { readonly schema: string | undefined; readonly tablePrefix: string | undefined }
): Effect.Effect<Sharded, ShardsFileError> =>
  Effect.gen(function*() {
    const fail = (reason: string) => new ShardsFileError({ file, reason })
    const text = yield* Effect.tryPromise({ try: () => readFile(file, "utf8"), catch: (e) => fail(`cannot be read (${(e as Error).message})`) })
    const json = yield* Effect.try({ try: () => JSON.parse(text) as unknown, catch: (e) => fail(`is not JSON (${(e as Error).message})`) })
    const parsed = yield* Effect.mapError(decodeShardsFile(json), (e) => fail(`${e.message.replace(/\s+/g, " ")}`))
    const sharded = shardedOf(file, parsed, defaults)
    return typeof sharded === "string" ? yield* Effect.fail(fail(sharded)) : sharded
  })
