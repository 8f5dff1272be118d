#!/usr/bin/env node
/**
 * The `baton` executable: the command line of `BatonCli` over the SQLite and
 * Postgres backends (and memory stores for a replay's scratch runtime). The one file under `src/` that imports backends: it is
 * the program that wires them (the architecture test names it). Each backend
 * is loaded only when a command uses it (a command starts faster).
 *
 * @since 0.1.0
 */
// First: on an unsupported Node.js, stop at once with one line saying which is needed.
import "../internal/nodeVersion.ts"
import { Effect, Layer } from "effect"
import * as BatonCli from "./BatonCli.ts"
import type { Database } from "./internal/Target.ts"

/** Node's services, from `@effect/platform-node`: an optional peer of baton that the command line needs. */
const NodeServices = await import("@effect/platform-node/NodeServices").catch((error: unknown) => {
  if ((error as { readonly code?: unknown })?.code !== "ERR_MODULE_NOT_FOUND" || !String(error).includes("@effect/platform-node")) throw error
  console.error("baton: the command line needs @effect/platform-node, an optional peer dependency of baton: npm install @effect/platform-node@~4.1")
  return process.exit(BatonCli.ExitCode.failed)
})

/** The stores of one database: a SQLite file or a Postgres schema. */
const databaseStores = async (database: Database): Promise<Layer.Layer<any, unknown>> => {
  if (database._tag === "Sqlite") {
    const { SqliteStores } = await import("../../layers/sqlite/index.ts")
    return SqliteStores.layer({ path: database.path, tablePrefix: database.tablePrefix })
  }
  const { PgStores } = await import("../../layers/pg/index.ts")
  return PgStores.layer({ url: database.url, schema: database.schema, tablePrefix: database.tablePrefix, maxConnections: 2, wakeups: false })
}

const backends: BatonCli.Backends = {
  stores: (target) =>
    Layer.unwrap(Effect.promise(async (): Promise<Layer.Layer<any, unknown>> => {
      if (target._tag !== "Sharded") return databaseStores(target)
      const { ShardedStores } = await import("../../layers/sharded/index.ts")
      const shards = await Promise.all(target.shards.map(async (shard) => ({ name: shard.name, layer: await databaseStores(shard.database) })))
      return ShardedStores.layer({ shards, route: target.route })
    })),
  scratch: () => Layer.unwrap(Effect.promise(async () => (await import("../../layers/memory/index.ts")).MemoryStores.layer)),
  schemaVersion: async () => (await import("../../layers/sql/SqlMigrations.ts")).latestVersion,
  probe: (database) =>
    Layer.unwrap(Effect.promise(async (): Promise<Layer.Layer<any, unknown>> => {
      if (database._tag === "Sqlite") return (await import("../../layers/sqlite/index.ts")).SqliteProbe.layer({ path: database.path })
      const { PgClient, PgProbe } = await import("../../layers/pg/index.ts")
      return PgProbe.layer.pipe(Layer.provide(PgClient.layer({ url: database.url, schema: database.schema, maxConnections: 1 })))
    }))
}

const code = await Effect.runPromise(BatonCli.run(process.argv.slice(2), backends).pipe(Effect.provide(NodeServices.layer)))
process.exit(code)
