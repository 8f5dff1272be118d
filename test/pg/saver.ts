/**
 * baton's saver on Postgres, outside any Effect program: for LangGraph's
 * validation suite and tests that drive the saver with promises.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { CheckpointRows } from "../../src/stores/CheckpointRows.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlTables from "../../layers/sql/SqlTables.ts"
import * as PgClient from "../../layers/pg/PgClient.ts"
import * as PgMigrations from "../../layers/pg/PgMigrations.ts"

export interface OpenRows {
  readonly rows: CheckpointRows
  /** Deletes every checkpoint, write and blob of the schema. */
  readonly clear: () => Promise<void>
  readonly close: () => Promise<void>
}

/** Opens a pool on `schema`, migrates it, and builds the saver's rows over it. */
export const openRows = async (options: PgClient.PgClientOptions): Promise<OpenRows> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(PgClient.layer(options), scope))
  const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.runPromise(Effect.provide(effect, context))
  const rows = await run(Effect.andThen(PgMigrations.migrate({ schema: options.schema }), SqlCheckpointStore.makeRows()))
  const t = await run(SqlTables.make())
  return {
    rows,
    clear: () =>
      run(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM ${sql(t.checkpoints)}`
        yield* sql`DELETE FROM ${sql(t.checkpointWrites)}`
        yield* sql`DELETE FROM ${sql(t.checkpointBlobs)}`
      })),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
