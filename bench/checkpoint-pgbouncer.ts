/**
 * baton's fenced Postgres saver through pgbouncer in transaction mode vs the
 * same saver connected directly: the workloads of `bench:checkpoint:pg`
 * (see checkpointWorkload.ts), one process, alternating which goes first,
 * several rounds. Both write under a real lease fence, as the runtime does.
 * Through the pooler the client parses every statement unnamed (prepared
 * statements do not survive a transaction-mode pooler), and every
 * transaction takes a server session from pgbouncer's pool.
 *
 *   npm run bench:checkpoint:pgbouncer  (BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                                        BATON_PGBOUNCER_URL, default postgres://postgres@127.0.0.1:6432/test,
 *                                        the same database through pgbouncer; BENCH_* as bench:checkpoint:pg)
 *
 * Prints each round, each measure's medians and ratio, and last
 * `ratio: N.NN` (through_pgbouncer / direct ops, realistic workload at
 * concurrency 1; below 1 means the pooler costs that much).
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { BatonCheckpointSaver } from "../src/checkpoint/CheckpointSaver.ts"
import { fenceKey } from "../src/stores/Fence.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"
import { withAdmin } from "../test/pg/admin.ts"
import { compare, fenceFor, type Subject } from "./checkpointWorkload.ts"

const direct = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const bouncer = process.env.BATON_PGBOUNCER_URL ?? "postgres://postgres@127.0.0.1:6432/test"
const run = Math.random().toString(36).slice(2, 8)

/** Drops a bench prefix's tables (a schema cannot be set through the pooler: both sides use a table prefix). */
const dropPrefix = (prefix: string) =>
  withAdmin((sql) =>
    Effect.flatMap(
      sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE ${`${prefix}%`}`,
      (tables) => Effect.forEach(tables, (t) => sql`DROP TABLE IF EXISTS ${sql(t.tablename)} CASCADE`, { discard: true })
    )
  )

/** baton's saver over `url` on fresh tables, with a lease store on the same pool. */
const saverOver = (url: string, side: string) => async (round: number): Promise<Subject> => {
  const tablePrefix = `bench_${side}_${run}_${round}_`
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(PgClient.layer({ url, maxConnections: 10 }), scope))
  const { leases, rows } = await Effect.runPromise(
    Effect.gen(function*() {
      yield* PgMigrations.migrate({ tablePrefix })
      return { leases: yield* SqlLeaseStore.make({ tablePrefix }), rows: yield* SqlCheckpointStore.makeRows({ tablePrefix }) }
    }).pipe(Effect.provide(context))
  )
  return {
    saver: new BatonCheckpointSaver(rows),
    configurable: async (threadId) => ({ [fenceKey]: await fenceFor(leases, threadId) }),
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await dropPrefix(tablePrefix)
    }
  }
}

await compare({
  title: "checkpoint bench (Postgres through pgbouncer in transaction mode vs direct)",
  ours: { label: "through_pgbouncer", open: saverOver(bouncer, "pgb") },
  theirs: { label: "direct", open: saverOver(direct, "direct") }
})
