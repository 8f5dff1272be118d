/**
 * baton's saver on a SQLite file, outside any Effect program: for LangGraph's
 * validation suite and tests that drive the saver with promises.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { BatonCheckpointSaver } from "../../src/checkpoint/CheckpointSaver.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlMigrations from "../../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../../layers/sqlite/SqliteClient.ts"

export interface OpenSaver {
  readonly saver: BatonCheckpointSaver
  readonly close: () => Promise<void>
}

/** Opens `path` (one connection), migrates it, and builds the saver over its rows. */
export const openSaver = async (options: SqliteClient.SqliteClientOptions): Promise<OpenSaver> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(SqliteClient.layer(options), scope))
  const rows = await Effect.runPromise(
    Effect.andThen(SqlMigrations.migrate(), SqlCheckpointStore.makeRows()).pipe(Effect.provide(context))
  )
  return { saver: new BatonCheckpointSaver(rows), close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}
