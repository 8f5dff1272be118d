/**
 * Checkpoint retention, three measures:
 *
 * 1. One thread of `BENCH_STEPS` (10,000) steps through `Baton.execute` on a
 *    SQLite file (20 steps an execution, one thread), with
 *    `checkpointKeepLast: 10` and the retention round every 200 ms: how many
 *    checkpoints the thread keeps at the end (must be ≤ 10 + the pinned
 *    newest of each namespace).
 * 2. The prune rate on a large table, on SQLite and on Postgres: the table
 *    filled with `BENCH_ROWS` (1,000,000) checkpoints over threads of 1,000
 *    (each with one blob and one pending write, as a step leaves them), then
 *    pruned to keepLast 10 as the retention leader does it (`listThreads`
 *    pages, `pruneThread` batches of 100); checkpoints deleted per second.
 * 3. The p99 latency of fenced checkpoint writes (a real lease, as a pass
 *    writes) while the prune runs vs while it does not, alternating in
 *    rounds in one process, on each backend.
 *
 *   npm run bench:retention   (BATON_PG_URL, default postgres://postgres@127.0.0.1:5432/test;
 *                              BENCH_STEPS=10000 BENCH_ROWS=1000000 BENCH_ROUNDS=6)
 *
 * Prints `ratio: p99_during/p99_without` last (the worse of SQLite and Postgres).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { SqliteStores } from "../layers/sqlite/index.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as SqlMigrations from "../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../layers/sqlite/SqliteClient.ts"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"
import { BatonCheckpointSaver } from "../src/checkpoint/CheckpointSaver.ts"
import { Baton, CheckpointStore, Workflow } from "../src/index.ts"
import type { CheckpointRows, ThreadKey } from "../src/stores/CheckpointRows.ts"
import { fenceKey } from "../src/stores/Fence.ts"
import { fenceFor } from "./checkpointWorkload.ts"
import { freshSchema, runInSchema, url } from "./pgSchema.ts"

const totalSteps = Number(process.env.BENCH_STEPS ?? 10_000)
const totalRows = Number(process.env.BENCH_ROWS ?? 1_000_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 6)
const perThread = 1_000
const keepLast = 10
const batch = Number(process.env.BENCH_BATCH ?? 100)

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-retention-"))

// ---------------------------------------------------------------------------
// 1. One thread of 10,000 steps under keep-last-10

const State = Annotation.Root({ count: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) })
const stepsPerRun = 20
const loop = Workflow.make({
  name: "loop",
  version: "1",
  graph: new StateGraph(State)
    .addNode("tick", Workflow.step(async (s: typeof State.State) => ({ count: s.count + 1 })))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (s: typeof State.State) => (s.count % stepsPerRun === 0 ? END : "tick"))
})

const longThread = Effect.gen(function*() {
  const baton = yield* Baton.Baton
  const started = performance.now()
  for (let run = 0; run < totalSteps / stepsPerRun; run++) yield* baton.execute(loop, { count: run * stepsPerRun }, { threadId: "long" })
  const ran = (performance.now() - started) / 1000
  // Two more retention rounds after the last step.
  yield* Effect.sleep("600 millis")
  const rows = yield* (yield* CheckpointStore.CheckpointStore).lifecycle!.listCheckpoints("default", "long", { limit: 1_000_000 })
  const namespaces = new Set(rows.map((r) => r.checkpointNs)).size
  const ok = rows.length <= keepLast + namespaces
  console.log(`long thread: ${totalSteps} steps in ${ran.toFixed(1)} s, ${rows.length} checkpoints kept (keepLast ${keepLast}, ${namespaces} namespace(s) pinned): ${ok ? "ok" : "TOO MANY"}`)
  if (!ok) process.exitCode = 1
}).pipe(
  Effect.provide(Baton.layer({ workflows: [loop], checkpointKeepLast: keepLast, sweepInterval: "200 millis" })),
  Effect.provide(SqliteStores.layer({ path: Path.join(dir, "long.sqlite") }))
)

// ---------------------------------------------------------------------------
// 2 and 3. The prune rate on a large table, and writes during the prune

interface Backend {
  readonly name: string
  /** Fills the tables with `rows` checkpoints over threads of `perThread`, one blob and one write each. */
  readonly fill: (sql: SqlClient.SqlClient, rows: number) => Effect.Effect<void, unknown>
}

const sqliteFill: Backend["fill"] = (sql, rows) =>
  Effect.gen(function*() {
    yield* sql.unsafe(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${rows})
      INSERT INTO baton_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata, channel_versions, created_at)
      SELECT 'bench', 'thread-' || printf('%06d', i / ${perThread}), '', printf('%08d', i), NULL, 'json', x'7b7d', 'json', x'7b7d',
             '[["count","' || (i % ${perThread}) || '"]]', 0 FROM n`)
    yield* sql.unsafe(`INSERT INTO baton_checkpoint_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type, value)
      SELECT tenant_id, thread_id, '', 'count', json_extract(channel_versions, '$[0][1]'), 'json', x'31' FROM baton_checkpoints WHERE tenant_id = 'bench'`)
    yield* sql.unsafe(`INSERT INTO baton_checkpoint_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path)
      SELECT tenant_id, thread_id, '', checkpoint_id, 'task', 0, 'count', 'json', x'31', '' FROM baton_checkpoints WHERE tenant_id = 'bench'`)
  })

const pgFill: Backend["fill"] = (sql, rows) =>
  Effect.gen(function*() {
    yield* sql.unsafe(`INSERT INTO baton_checkpoints (tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata, channel_versions, created_at)
      SELECT 'bench', 'thread-' || lpad((i / ${perThread})::text, 6, '0'), '', lpad(i::text, 8, '0'), NULL, 'json', '\\x7b7d'::bytea, 'json', '\\x7b7d'::bytea,
             '[["count","' || (i % ${perThread}) || '"]]', 0 FROM generate_series(0, ${rows - 1}) AS i`)
    yield* sql.unsafe(`INSERT INTO baton_checkpoint_blobs (tenant_id, thread_id, checkpoint_ns, channel, version, type, value)
      SELECT tenant_id, thread_id, '', 'count', (channel_versions::jsonb -> 0 ->> 1), 'json', '\\x31'::bytea FROM baton_checkpoints WHERE tenant_id = 'bench'`)
    yield* sql.unsafe(`INSERT INTO baton_checkpoint_writes (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path)
      SELECT tenant_id, thread_id, '', checkpoint_id, 'task', 0, 'count', 'json', '\\x31'::bytea, '' FROM baton_checkpoints WHERE tenant_id = 'bench'`)
    yield* sql.unsafe(`ANALYZE`)
  })

const p99 = (samples: Array<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? Number.NaN
}

/** Prunes threads from the walk `next` until `stop()`; answers checkpoints deleted and the time spent pruning. */
const pruneWhile = async (rows: CheckpointRows, walk: { after: ThreadKey | undefined; done: boolean }, stop: () => boolean) => {
  let deleted = 0
  const started = performance.now()
  while (!stop() && !walk.done) {
    const threads = await rows.listThreads!(walk.after, batch)
    for (const t of threads) {
      walk.after = t
      if (t.tenantId !== "bench") continue
      while (true) {
        const pruned = await rows.pruneThread!(t.tenantId, t.threadId, { keepLast }, batch)
        deleted += pruned.checkpoints
        if (!pruned.more) break
        await new Promise((r) => setImmediate(r))
      }
      if (stop()) break
      // Writers go between threads, as between the retention leader's batches.
      await new Promise((r) => setImmediate(r))
    }
    if (threads.length < batch && walk.after === threads[threads.length - 1]) walk.done = true
  }
  return { deleted, seconds: (performance.now() - started) / 1000 }
}

/** Fenced puts on one thread until `stop()`: their latencies in ms. */
const writeWhile = async (saver: BatonCheckpointSaver, configurable: Record<string, unknown>, stop: () => boolean, from: number) => {
  const latencies: Array<number> = []
  let i = from
  while (!stop()) {
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { count: i }, channel_versions: { count: i } }
    const t0 = performance.now()
    await saver.put({ configurable: { thread_id: "writer", checkpoint_ns: "", ...configurable } }, checkpoint, { source: "loop", step: i, parents: {} } as never, { count: i })
    latencies.push(performance.now() - t0)
    i++
    // A step's own work between writes (the writer is not a tight loop).
    await new Promise((r) => setTimeout(r, 1))
  }
  return latencies
}

/** Runs measures 2 and 3 over the rows, leases and client in context. */
const pruneBench = (backend: Backend) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* SqlCheckpointStore.makeRows()
    const leases = yield* SqlLeaseStore.make()
    const filled = performance.now()
    yield* backend.fill(sql, totalRows)
    console.log(`${backend.name}: ${totalRows} checkpoints over ${totalRows / perThread} threads filled in ${((performance.now() - filled) / 1000).toFixed(1)} s`)
    const saver = new BatonCheckpointSaver(rows)
    const configurable = { [fenceKey]: yield* Effect.promise(() => fenceFor(leases, "writer")) }
    return yield* Effect.promise(async () => {
      const walk = { after: undefined as ThreadKey | undefined, done: false }
      const without: Array<number> = []
      const during: Array<number> = []
      let deleted = 0
      let seconds = 0
      let written = 0
      for (let round = 0; round < rounds && !walk.done; round++) {
        // Alternating: which phase goes first flips each round.
        const phases = round % 2 === 0 ? ["without", "during"] : ["during", "without"]
        for (const phase of phases) {
          const until = performance.now() + 3_000
          const stop = () => performance.now() >= until
          if (phase === "without") {
            const l = await writeWhile(saver, configurable, stop, written)
            written += l.length
            without.push(...l)
          } else {
            const [l, p] = await Promise.all([writeWhile(saver, configurable, stop, written + 1_000_000), pruneWhile(rows, walk, stop)])
            written += l.length
            during.push(...l)
            deleted += p.deleted
            seconds += p.seconds
          }
        }
      }
      // The rest of the table, pruned alone, for the rate.
      const rest = await pruneWhile(rows, walk, () => false)
      deleted += rest.deleted
      seconds += rest.seconds
      const ratio = p99(during) / p99(without)
      console.log(`${backend.name}: pruned ${deleted} checkpoints in ${seconds.toFixed(1)} s: ${Math.round(deleted / seconds)} rows/s (keepLast ${keepLast}, batches of ${batch})`)
      console.log(`${backend.name}: fenced writes p99 ${p99(without).toFixed(2)} ms without the prune (${without.length} writes), ${p99(during).toFixed(2)} ms during it (${during.length}): ${ratio.toFixed(2)}`)
      return ratio
    })
  })

const sqlite = Effect.scoped(Effect.gen(function*() {
  const context = yield* Layer.build(SqliteClient.layer({ path: Path.join(dir, "large.sqlite"), synchronous: "NORMAL" }))
  return yield* Effect.provide(Effect.andThen(SqlMigrations.migrate(), pruneBench({ name: "sqlite", fill: sqliteFill })), context)
}))

const pg = (schema: string) => Effect.gen(function*() {
  const context = yield* Layer.build(PgClient.layer({ url, schema, maxConnections: 4 }))
  return yield* Effect.provide(Effect.andThen(PgMigrations.migrate({ schema }), pruneBench({ name: "postgres", fill: pgFill })), context)
})

const main = async () => {
  try {
    await Effect.runPromise(longThread)
    const onSqlite = await Effect.runPromise(sqlite)
    const schema = freshSchema("bench_retention")
    const onPg = await runInSchema(schema, pg(schema))
    console.log(`p99 during/without: sqlite ${onSqlite.toFixed(2)}, postgres ${onPg.toFixed(2)}`)
    console.log(`ratio: ${Math.max(onSqlite, onPg).toFixed(2)}`)
  } finally {
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
