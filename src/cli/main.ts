#!/usr/bin/env node
/**
 * The `baton` executable: the command line of `BatonCli` over the SQLite and
 * Postgres backends. The one file under `src/` that imports backends: it is
 * the program that wires them (the architecture test names it).
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { PgStores } from "../../layers/pg/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { latestVersion } from "../../layers/sql/SqlMigrations.ts"
import * as BatonCli from "./BatonCli.ts"

const backends: BatonCli.Backends = {
  stores: (target) =>
    target._tag === "Sqlite"
      ? SqliteStores.layer({ path: target.path })
      : PgStores.layer({ url: target.url, ...(target.schema === undefined ? {} : { schema: target.schema }), maxConnections: 2 }) as Layer.Layer<any, unknown>,
  schemaVersion: latestVersion
}

const code = await Effect.runPromise(BatonCli.run(process.argv.slice(2), backends).pipe(Effect.provide(NodeServices.layer)))
process.exit(code)
