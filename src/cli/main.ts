#!/usr/bin/env node
/**
 * The `baton` executable: the command line of `BatonCli` over the SQLite and
 * Postgres backends. The one file under `src/` that imports backends: it is
 * the program that wires them (the architecture test names it). Each backend
 * is loaded only when a command uses it (a command starts faster).
 *
 * @since 0.1.0
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import * as BatonCli from "./BatonCli.ts"

const backends: BatonCli.Backends = {
  stores: (target) =>
    Layer.unwrap(Effect.promise(async (): Promise<Layer.Layer<any, unknown>> => {
      if (target._tag === "Sqlite") {
        const { SqliteStores } = await import("../../layers/sqlite/index.ts")
        return SqliteStores.layer({ path: target.path })
      }
      const { PgStores } = await import("../../layers/pg/index.ts")
      return PgStores.layer({ url: target.url, ...(target.schema === undefined ? {} : { schema: target.schema }), maxConnections: 2, wakeups: false })
    })),
  schemaVersion: async () => (await import("../../layers/sql/SqlMigrations.ts")).latestVersion
}

const code = await Effect.runPromise(BatonCli.run(process.argv.slice(2), backends).pipe(Effect.provide(NodeServices.layer)))
process.exit(code)
