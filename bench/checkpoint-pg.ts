/**
 * Checkpoint hot path on Postgres: baton's fenced saver (`SqlCheckpointStore`
 * over `@effect/sql-pg`, pool 10) vs LangGraph's official PostgresSaver (pg,
 * pool 10), one process, alternating which goes first, several rounds.
 *
 * Workloads (see checkpointWorkload.ts): `simple` (today's: plain objects,
 * one channel changed, one write per putWrites), `realistic` (LangChain
 * messages, five channels with two or three changed per step, two or three
 * writes per putWrites, every read checked) and `graph` (runs of a 20-node
 * graph with the saver as checkpointer, durability "sync" for both), each at
 * concurrency 1 and 8, fresh storage per round and saver. Ours writes under
 * a Fence (a real lease acquired in the same storage, passed in
 * `configurable` under `fenceKey`, with the runtime's default renewal period,
 * a third of the lease), so every put and putWrites checks that lease in its
 * own transaction or statement and pushes it only when a renewal is due, as
 * the runtime's writes do.
 *
 *   npm run bench:checkpoint:pg  (BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                                  BENCH_ROUNDS=5 BENCH_THREADS=48 BENCH_STEPS=20 BENCH_GRAPH_RUNS=32;
 *                                  BENCH_MEASURES=realistic-1,realistic-8 runs only those)
 *
 * Prints each round, each measure's medians and ratio, and last `ratio: N.NN`
 * (ours / theirs ops, realistic workload at concurrency 1; above 1 means ours
 * is faster).
 */
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { BatonCheckpointSaver } from "../src/checkpoint/CheckpointSaver.ts"
import { fenceKey } from "../src/stores/Fence.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"
import { compare, fenceFor, type Subject } from "./checkpointWorkload.ts"

const url = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const run = Math.random().toString(36).slice(2, 8)

/** Drops a bench schema over a short-lived connection. */
const dropSchema = (schema: string) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(
      EffectPgClient.make({ url: Redacted.make(url), maxConnections: 1 }),
      (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    )).pipe(Effect.provide(Reactivity.layer))
  )

/** baton's saver on a fresh schema, with a lease store on the same pool. */
const ours = async (round: number): Promise<Subject> => {
  const schema = `bench_ours_${run}_${round}`
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(PgClient.layer({ url, schema, maxConnections: 10 }), scope))
  const { leases, rows } = await Effect.runPromise(
    Effect.gen(function*() {
      yield* PgMigrations.migrate({ schema })
      return { leases: yield* SqlLeaseStore.make(), rows: yield* SqlCheckpointStore.makeRows() }
    }).pipe(Effect.provide(context))
  )
  return {
    saver: new BatonCheckpointSaver(rows),
    configurable: async (threadId) => ({ [fenceKey]: await fenceFor(leases, threadId) }),
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await dropSchema(schema)
    }
  }
}

/** LangGraph's official PostgresSaver on a fresh schema, on its own pg pool (pg's default: 10 connections). */
const theirs = async (round: number): Promise<Subject> => {
  const schema = `bench_theirs_${run}_${round}`
  const saver = PostgresSaver.fromConnString(url, { schema })
  await saver.setup()
  return {
    saver,
    configurable: async () => ({}),
    close: async () => {
      await saver.end()
      await dropSchema(schema)
    }
  }
}

await compare({
  title: "checkpoint bench (Postgres)",
  ours: { label: "baton postgres (fenced)", open: ours },
  theirs: { label: "official PostgresSaver", open: theirs }
})
