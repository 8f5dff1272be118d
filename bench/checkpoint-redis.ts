/**
 * Checkpoint hot path on Redis: the Redis store example's fenced saver
 * (examples/redis-store, baton's saver over `CheckpointRows` in Redis, each
 * put and putWrites one Lua script that checks the lease and writes) vs
 * baton's own fenced savers on SQLite (node:sqlite, WAL + synchronous=NORMAL)
 * and Postgres (@effect/sql-pg, pool 10) — the same workload as
 * `bench:checkpoint` and `bench:checkpoint:pg` (bench/checkpointWorkload.ts),
 * one process, the three taking turns at going first, several rounds.
 *
 * LangGraph's official Redis saver (@langchain/langgraph-checkpoint-redis)
 * needs the RedisJSON and RediSearch modules; the local Redis 7.0 has
 * neither, so it is not in the comparison.
 *
 *   npm run bench:checkpoint:redis   (BATON_REDIS_URL, default redis://127.0.0.1:6379;
 *                                     BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                                     BENCH_ROUNDS=7 BENCH_THREADS=50 BENCH_STEPS=20)
 *
 * Prints ops/s per round, the medians, and last `ratio: N.NN` (Redis /
 * Postgres; above 1 means Redis is faster).
 */
import { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as RedisCheckpointStore from "../examples/redis-store/RedisCheckpointStore.ts"
import { makeKeys } from "../examples/redis-store/RedisKeys.ts"
import * as RedisLeaseStore from "../examples/redis-store/RedisLeaseStore.ts"
import * as RedisStores from "../examples/redis-store/RedisStores.ts"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as SqlMigrations from "../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../layers/sqlite/SqliteClient.ts"
import { BatonCheckpointSaver } from "../src/checkpoint/CheckpointSaver.ts"
import type { CheckpointRows } from "../src/stores/CheckpointRows.ts"
import { fenceKey } from "../src/stores/Fence.ts"
import type { LeaseStoreShape } from "../src/stores/LeaseStore.ts"
import { fenceFor, measure, median, rounds, steps, type Subject, threads } from "./checkpointWorkload.ts"

const redisUrl = process.env.BATON_REDIS_URL ?? "redis://127.0.0.1:6379"
const pgUrl = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const run = Math.random().toString(36).slice(2, 8)
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-redis-"))

/** A fenced subject: baton's saver over `rows`, each thread writing under a lease acquired from `leases`. */
const open = async <R>(
  layer: Layer.Layer<R, unknown>,
  make: Effect.Effect<{ leases: LeaseStoreShape; rows: CheckpointRows }, unknown, R>,
  cleanUp: Effect.Effect<unknown, unknown, R> = Effect.void
): Promise<Subject> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const { leases, rows } = await Effect.runPromise(Effect.provide(make, context))
  return {
    saver: new BatonCheckpointSaver(rows),
    configurable: async (threadId) => ({ [fenceKey]: await fenceFor(leases, threadId) }),
    close: async () => {
      await Effect.runPromise(Effect.provide(cleanUp, context))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

/** The Redis example's saver, under a fresh key prefix (deleted after the round). */
const redis = (round: number) => {
  const prefix = `bench:${run}:round-${round}:`
  const keys = makeKeys({ prefix })
  return open(
    RedisStores.connection(redisUrl),
    Effect.all({ leases: RedisLeaseStore.make(keys), rows: RedisCheckpointStore.makeRows(keys) }),
    RedisStores.deleteAll(prefix)
  )
}

/** baton's saver on a fresh SQLite file, WAL + synchronous=NORMAL, leases on the same connection. */
const sqlite = (round: number) =>
  open(
    SqliteClient.layer({ path: Path.join(dir, `round-${round}.db`), synchronous: "NORMAL" }),
    Effect.andThen(SqlMigrations.migrate(), Effect.all({ leases: SqlLeaseStore.make(), rows: SqlCheckpointStore.makeRows() }))
  )

/** Drops a bench schema over a short-lived connection. */
const dropSchema = (schema: string) =>
  Effect.scoped(Effect.flatMap(
    EffectPgClient.make({ url: Redacted.make(pgUrl), maxConnections: 1 }),
    (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
  )).pipe(Effect.provide(Reactivity.layer))

/** baton's saver on a fresh Postgres schema (dropped after the round), pool 10, leases on the same pool. */
const postgres = (round: number) => {
  const schema = `bench_redis_cmp_${run}_${round}`
  return open(
    PgClient.layer({ url: pgUrl, schema, maxConnections: 10 }),
    Effect.andThen(PgMigrations.migrate({ schema }), Effect.all({ leases: SqlLeaseStore.make(), rows: SqlCheckpointStore.makeRows() })),
    dropSchema(schema)
  )
}

const sides = [
  { label: "redis example (fenced)", open: redis },
  { label: "baton sqlite (fenced)", open: sqlite },
  { label: "baton postgres (fenced)", open: postgres }
] as const

const once = async (side: (typeof sides)[number], round: number) => {
  const subject = await side.open(round)
  try {
    return await measure(subject, "simple", 1, round)
  } finally {
    await subject.close()
  }
}

try {
  console.log(
    `checkpoint bench (Redis): ${threads} threads × ${steps} steps (put + putWrites + getTuple, 1→4 KB) + list per thread; ${rounds} rounds`
  )
  console.log(
    "LangGraph's official Redis saver is not compared: it needs the RedisJSON and RediSearch modules, which the local Redis 7.0 lacks."
  )
  for (const side of sides) await once(side, 0) // warm-up, not counted
  const ops = sides.map(() => [] as Array<number>)
  for (let r = 1; r <= rounds; r++) {
    // Each round a different saver goes first: r = 1 → redis, sqlite, postgres; r = 2 → sqlite, postgres, redis; …
    for (let k = 0; k < sides.length; k++) {
      const i = (r - 1 + k) % sides.length
      ops[i]!.push(await once(sides[i]!, r))
    }
    console.log(`round ${r}: ${sides.map((side, i) => `${side.label} ${ops[i]![r - 1]!.toFixed(0)} ops/s`).join(", ")}`)
  }
  const [redisOps, sqliteOps, pgOps] = ops.map(median) as [number, number, number]
  console.log(`median: ${sides.map((side, i) => `${side.label} ${[redisOps, sqliteOps, pgOps][i]!.toFixed(0)} ops/s`).join(", ")}`)
  console.log(`redis / sqlite: ${(redisOps / sqliteOps).toFixed(2)}`)
  console.log(`ratio: ${(redisOps / pgOps).toFixed(2)}`)
} finally {
  Fs.rmSync(dir, { recursive: true, force: true })
}
