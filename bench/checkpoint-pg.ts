/**
 * Checkpoint hot path on Postgres: baton's fenced saver (`SqlCheckpointStore`
 * over `@effect/sql-pg`, pool 10) vs LangGraph's official PostgresSaver (pg,
 * pool 10), one process, alternating which goes first, several rounds.
 *
 * Workload per round and saver (a fresh schema each, dropped after): 50
 * threads × 20 steps of put + putWrites + getTuple, the state growing from
 * 1 KB to 4 KB, then one full `list` per thread. Ours writes under a Fence (a
 * real lease acquired in the same schema, passed in `configurable` under
 * `fenceKey`, with the runtime's default renewal period, a third of the
 * lease), so every put and putWrites checks that lease in its own statement
 * and pushes it only when a renewal is due, as the runtime's writes do.
 *
 *   npm run bench:checkpoint:pg     (BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                                    BENCH_ROUNDS=7 BENCH_THREADS=50 BENCH_STEPS=20)
 *
 * Prints ops/s per round, the medians, and last `ratio: N.NN` (ours / theirs;
 * above 1 means ours is faster).
 */
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { type BaseCheckpointSaver, type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint"
import type { RunnableConfig } from "@langchain/core/runnables"
import { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { BatonCheckpointSaver } from "../src/CheckpointSaver.ts"
import type { LeaseLostError } from "../src/Errors.ts"
import { type Fence, fenceKey } from "../src/Fence.ts"
import type { Lease } from "../src/Lease.ts"
import type { LeaseStoreShape } from "../src/LeaseStore.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"

const url = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
const threads = Number(process.env.BENCH_THREADS ?? 50)
const steps = Number(process.env.BENCH_STEPS ?? 20)
const ttlMillis = 30_000
/** The runtime's default renewal period: a third of the lease. */
const renewMillis = 10_000
const run = Math.random().toString(36).slice(2, 8)

interface Subject {
  readonly saver: BaseCheckpointSaver
  /** Extra `configurable` for a thread (ours: the fence). */
  readonly configurable: (threadId: string) => Promise<Record<string, unknown>>
  readonly close: () => Promise<void>
}

/** Drops a bench schema over a short-lived connection. */
const dropSchema = (schema: string) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(
      EffectPgClient.make({ url: Redacted.make(url), maxConnections: 1 }),
      (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    )).pipe(Effect.provide(Reactivity.layer))
  )

/** baton's saver on a fresh schema, with a lease store on the same pool. */
const ours = async (schema: string): Promise<Subject> => {
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

/** A holder's fence over a lease it really acquired (the runtime's, minus its fibers). */
const fenceFor = async (leases: LeaseStoreShape, threadId: string): Promise<Fence> => {
  const acquired = await Effect.runPromise(leases.acquire("default", threadId, "bench-instance", ttlMillis, Date.now()))
  if (Option.isNone(acquired)) throw new Error(`bench: could not acquire the lease of ${threadId}`)
  let lease: Lease = acquired.value
  let lostWith: LeaseLostError | undefined
  return {
    get lease() {
      return lease
    },
    ttlMillis,
    renewMillis,
    now: () => Date.now(),
    refusal: () => lostWith,
    confirmed: (_readAt, expiresAt) => {
      lease = { ...lease, expiresAt }
    },
    lost: (error) => {
      lostWith = error
    },
    renewBeforeWrite: async () => {}
  }
}

/** LangGraph's official PostgresSaver on a fresh schema, on its own pg pool (pg's default: 10 connections). */
const theirs = async (schema: string): Promise<Subject> => {
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

/** A message list of about `size` bytes. */
const messages = (size: number, step: number) => {
  const out: Array<{ role: string; content: string }> = []
  let total = 0
  for (let i = 0; total < size; i++) {
    const content = `step ${step} message ${i} `.padEnd(120, "x")
    out.push({ role: i % 2 === 0 ? "user" : "assistant", content })
    total += content.length + 30
  }
  return out
}

/** Runs the workload; answers [ops, milliseconds]. */
const workload = async (subject: Subject): Promise<readonly [number, number]> => {
  const { saver } = subject
  const extras = await Promise.all(Array.from({ length: threads }, (_, t) => subject.configurable(`thread-${t}`)))
  let ops = 0
  const start = performance.now()
  for (let t = 0; t < threads; t++) {
    const threadId = `thread-${t}`
    const base = { thread_id: threadId, checkpoint_ns: "", ...extras[t] }
    let config: RunnableConfig = { configurable: { ...base } }
    let checkpoint: Checkpoint = emptyCheckpoint()
    for (let s = 0; s < steps; s++) {
      const size = 1024 + Math.round((3072 * s) / Math.max(1, steps - 1))
      const version = s + 1
      checkpoint = {
        ...checkpoint,
        id: uuid6(-1),
        ts: new Date().toISOString(),
        channel_values: { messages: messages(size, s), step: s },
        channel_versions: { ...checkpoint.channel_versions, messages: version, step: version },
        versions_seen: { agent: { messages: version - 1 } }
      }
      const saved = await saver.put(config, checkpoint, { source: "loop", step: s, parents: {} }, { messages: version, step: version })
      config = { configurable: { ...base, checkpoint_id: saved.configurable?.checkpoint_id } }
      await saver.putWrites(config, [["messages", { role: "assistant", content: `reply ${s}` }]], `task-${t}-${s}`)
      const tuple = await saver.getTuple({ configurable: { ...base } })
      if (tuple?.checkpoint.id !== checkpoint.id) throw new Error(`bench: getTuple answered ${tuple?.checkpoint.id}, expected ${checkpoint.id}`)
      ops += 3
    }
    let listed = 0
    for await (const _ of saver.list({ configurable: { thread_id: threadId } })) listed++
    if (listed !== steps) throw new Error(`bench: list answered ${listed} checkpoints, expected ${steps}`)
    ops += 1
  }
  return [ops, performance.now() - start]
}

const once = async (name: string, open: (schema: string) => Promise<Subject>, round: number) => {
  const subject = await open(`bench_${name}_${run}_${round}`)
  try {
    const [ops, ms] = await workload(subject)
    return (ops / ms) * 1000
  } finally {
    await subject.close()
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const main = async () => {
  console.log(`checkpoint bench (Postgres): ${threads} threads × ${steps} steps (put + putWrites + getTuple, 1→4 KB) + list per thread; ${rounds} rounds`)
  // Warm-up (JIT, module init, connections), not counted.
  await once("ours", ours, 0)
  await once("theirs", theirs, 0)
  const a: Array<number> = []
  const b: Array<number> = []
  for (let r = 1; r <= rounds; r++) {
    if (r % 2 === 1) {
      a.push(await once("ours", ours, r))
      b.push(await once("theirs", theirs, r))
    } else {
      b.push(await once("theirs", theirs, r))
      a.push(await once("ours", ours, r))
    }
    console.log(`round ${r}: baton postgres (fenced) ${a[r - 1]!.toFixed(0)} ops/s, official PostgresSaver ${b[r - 1]!.toFixed(0)} ops/s`)
  }
  const oursOps = median(a)
  const theirsOps = median(b)
  console.log(`median: baton postgres (fenced) ${oursOps.toFixed(0)} ops/s, official PostgresSaver ${theirsOps.toFixed(0)} ops/s`)
  console.log(`ratio: ${(oursOps / theirsOps).toFixed(2)}`)
}

await main()
