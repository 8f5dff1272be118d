/**
 * The `StoreProbe` of a SQLite file: the type of the file system it lives on,
 * read from the mount table (`/proc/mounts`): the mount whose point is the
 * longest prefix of the file's real folder. SQLite's locks do not hold on
 * most network file systems, which `Diagnostics.check` warns about.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { checkedLayer, fieldsOf } from "../../src/stores/internal/options.ts"
import { type SqliteFacts, StoreProbe } from "../../src/stores/StoreProbe.ts"
import { mountOf } from "./internal/mounts.ts"

/**
 * Which file and which mount table to read.
 *
 * @category models
 * @since 0.1.0
 */
export interface SqliteProbeOptions {
  /** The database file (as given to `SqliteStores.layer`). */
  readonly path: string
  /** The mount table: default `/proc/mounts`. */
  readonly mounts?: string | undefined
}

/** The real folder of `path` (the file may not exist yet; its folder does). */
const realFolder = (path: string) => {
  const absolute = Path.resolve(path)
  try {
    return Fs.realpathSync(Path.dirname(absolute))
  } catch {
    return Path.dirname(absolute)
  }
}

/**
 * Reads the facts of the file `path` now.
 *
 * @category constructors
 * @since 0.1.0
 */
export const probe = (options: SqliteProbeOptions): Effect.Effect<SqliteFacts, StoreError> =>
  Effect.try({
    try: (): SqliteFacts => {
      if (options.path === ":memory:") return { path: options.path, fileSystem: undefined, mountPoint: undefined }
      const table = Fs.readFileSync(options.mounts ?? "/proc/mounts", "utf8")
      const mount = mountOf(realFolder(options.path), table)
      return { path: options.path, fileSystem: mount?.fileSystem, mountPoint: mount?.mountPoint }
    },
    catch: (cause) =>
      new StoreError({ store: "StoreProbe", operation: "probe", kind: "Other", reason: `the mount table could not be read: ${String(cause)}`, cause })
  })

/**
 * The probe of the SQLite file `path`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqliteProbeOptions): Layer.Layer<StoreProbe, BatonConfigError> =>
  checkedLayer(options, fields, () =>
    Layer.unwrap(Effect.gen(function*() {
      for (const field of ["path", "mounts"] as const) {
        const value = options[field]
        if ((field === "path" || value !== undefined) && (typeof value !== "string" || value.length === 0)) {
          return yield* new BatonConfigError({ field, reason: `must be a non-empty path (got ${typeof value === "string" ? "\"\"" : typeof value})` })
        }
      }
      return Layer.succeed(StoreProbe)({ probe: Effect.map(probe(options), (facts) => ({ _tag: "Sqlite" as const, ...facts })) })
    })))

const fields = fieldsOf<SqliteProbeOptions>({ path: true, mounts: true })
