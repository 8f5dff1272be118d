/**
 * Checkpoint hot path: baton's fenced saver on SQLite vs LangGraph's official
 * SqliteSaver (better-sqlite3), both on files, WAL + synchronous=NORMAL, one
 * process, alternating which goes first, several rounds.
 *
 * Workload per round and saver (a fresh file each): 50 threads × 20 steps of
 * put + putWrites + getTuple, the state growing from 1 KB to 4 KB, then one
 * full `list` per thread. Ours writes under a Fence (a real lease acquired in
 * the same file, passed in `configurable` under `fenceKey`, with the
 * runtime's default renewal period, a third of the lease), so every put and
 * putWrites checks that lease in its own transaction and pushes it only when
 * a renewal is due, as the runtime's writes do.
 *
 *   npm run bench:checkpoint              (BENCH_ROUNDS=7 BENCH_THREADS=50 BENCH_STEPS=20)
 *
 * Prints ops/s per round, the medians, and last `ratio: N.NN` (ours / theirs;
 * above 1 means ours is faster).
 */
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"
import { type BaseCheckpointSaver, type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint"
import type { RunnableConfig } from "@langchain/core/runnables"
import Database from "better-sqlite3"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BatonCheckpointSaver } from "../src/CheckpointSaver.ts"
import type { LeaseLostError } from "../src/Errors.ts"
import { type Fence, fenceKey } from "../src/Fence.ts"
import type { Lease } from "../src/Lease.ts"
import type { LeaseStoreShape } from "../src/LeaseStore.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as SqlMigrations from "../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../layers/sqlite/SqliteClient.ts"

const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
const threads = Number(process.env.BENCH_THREADS ?? 50)
const steps = Number(process.env.BENCH_STEPS ?? 20)
const ttlMillis = 30_000
/** The runtime's default renewal period: a third of the lease. */
const renewMillis = 10_000
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-checkpoint-"))

interface Subject {
  readonly saver: BaseCheckpointSaver
  /** Extra `configurable` for a thread (ours: the fence). */
  readonly configurable: (threadId: string) => Promise<Record<string, unknown>>
  readonly close: () => Promise<void>
}

/** baton's saver on a fresh SQLite file, with a lease store on the same connection. */
const ours = async (file: string): Promise<Subject> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(SqliteClient.layer({ path: file, synchronous: "NORMAL" }), scope))
  const { leases, rows } = await Effect.runPromise(
    Effect.gen(function*() {
      yield* SqlMigrations.migrate()
      return { leases: yield* SqlLeaseStore.make(), rows: yield* SqlCheckpointStore.makeRows() }
    }).pipe(Effect.provide(context))
  )
  return {
    saver: new BatonCheckpointSaver(rows),
    configurable: async (threadId) => ({ [fenceKey]: await fenceFor(leases, threadId) }),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
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

/** LangGraph's official SqliteSaver on a fresh file, WAL + synchronous=NORMAL. */
const theirs = async (file: string): Promise<Subject> => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  const saver = new SqliteSaver(db)
  return { saver, configurable: async () => ({}), close: async () => db.close() }
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

const run = async (name: string, open: (file: string) => Promise<Subject>, round: number) => {
  const subject = await open(Path.join(dir, `${name}-${round}.db`))
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
  console.log(`checkpoint bench: ${threads} threads × ${steps} steps (put + putWrites + getTuple, 1→4 KB) + list per thread; ${rounds} rounds`)
  // Warm-up (JIT, module init), not counted.
  await run("ours", ours, 0)
  await run("theirs", theirs, 0)
  const a: Array<number> = []
  const b: Array<number> = []
  for (let r = 1; r <= rounds; r++) {
    if (r % 2 === 1) {
      a.push(await run("ours", ours, r))
      b.push(await run("theirs", theirs, r))
    } else {
      b.push(await run("theirs", theirs, r))
      a.push(await run("ours", ours, r))
    }
    console.log(`round ${r}: baton sqlite (fenced) ${a[r - 1]!.toFixed(0)} ops/s, official SqliteSaver ${b[r - 1]!.toFixed(0)} ops/s`)
  }
  const oursOps = median(a)
  const theirsOps = median(b)
  console.log(`median: baton sqlite (fenced) ${oursOps.toFixed(0)} ops/s, official SqliteSaver ${theirsOps.toFixed(0)} ops/s`)
  Fs.rmSync(dir, { recursive: true, force: true })
  console.log(`ratio: ${(oursOps / theirsOps).toFixed(2)}`)
}

await main()
