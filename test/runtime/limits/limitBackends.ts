/**
 * The stores the provider-limit tests run on: memory, and one SQLite file
 * (removed after) holding the stores and effect's limiter stores.
 */
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { MemoryLimiters } from "../../../layers/memory/index.ts"
import { SqliteLimiters, SqliteStores } from "../../../layers/sqlite/index.ts"
import { memoryStores } from "../fixtures.ts"

const sqliteAll = Layer.unwrap(
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-limits-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => {
    const path = Path.join(dir, "stores.sqlite")
    return Layer.merge(SqliteStores.layer({ path, busyTimeout: 0 }), SqliteLimiters.layer({ path, busyTimeout: 0 }))
  }))
)

export const limitBackends = [
  { name: "memory", stores: Layer.merge(memoryStores, MemoryLimiters.layer()) },
  { name: "sqlite", stores: sqliteAll }
] as const
