/**
 * Checkpoint hot path: baton's fenced saver on SQLite vs LangGraph's official
 * SqliteSaver (better-sqlite3), both on files, WAL + synchronous=NORMAL, one
 * process, alternating which goes first, several rounds.
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
 *   npm run bench:checkpoint     (BENCH_ROUNDS=5 BENCH_THREADS=48 BENCH_STEPS=20 BENCH_GRAPH_RUNS=32;
 *                                  BENCH_MEASURES=realistic-1,realistic-8 runs only those;
 *                                  BENCH_CLOCK=cpu times this process's CPU, steadier on a busy machine;
 *                                  BENCH_OURS=memory puts LangGraph's MemorySaver in our place: a saver
 *                                  with no storage at all that reads and writes through LangGraph's
 *                                  serializer — what storage work alone could reach;
 *                                  BENCH_OURS=rows puts baton's saver over in-memory rows in our place: the
 *                                  saver's own logic without SQLite, to set against BENCH_OURS=memory)
 *
 * Prints each round, each measure's medians and ratio, and last `ratio: N.NN`
 * (ours / theirs ops, realistic workload at concurrency 1; above 1 means ours
 * is faster).
 */
import { MemorySaver } from "@langchain/langgraph-checkpoint"
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"
import Database from "better-sqlite3"
import { Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BatonCheckpointSaver } from "../src/checkpoint/CheckpointSaver.ts"
import { fenceKey } from "../src/stores/Fence.ts"
import * as MemoryCheckpointStore from "../layers/memory/MemoryCheckpointStore.ts"
import * as MemoryState from "../layers/memory/MemoryState.ts"
import * as SqlCheckpointStore from "../layers/sql/SqlCheckpointStore.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as SqlMigrations from "../layers/sql/SqlMigrations.ts"
import * as SqliteClient from "../layers/sqlite/SqliteClient.ts"
import { compare, fenceFor, type Subject } from "./checkpointWorkload.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-checkpoint-"))

/** baton's saver on a fresh SQLite file, with a lease store on the same connection. */
const ours = async (round: number): Promise<Subject> => {
  const scope = Effect.runSync(Scope.make())
  const file = Path.join(dir, `ours-${round}.db`)
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

/** LangGraph's official SqliteSaver on a fresh file, WAL + synchronous=NORMAL. */
const theirs = async (round: number): Promise<Subject> => {
  const db = new Database(Path.join(dir, `theirs-${round}.db`))
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  const saver = new SqliteSaver(db)
  return { saver, configurable: async () => ({}), close: async () => db.close() }
}

/** LangGraph's MemorySaver (`BENCH_OURS=memory`): no storage, no fence — only the serializer and LangGraph's own work. */
const memory = async (): Promise<Subject> => ({ saver: new MemorySaver(), configurable: async () => ({}), close: async () => {} })

/** baton's saver over in-memory rows (`BENCH_OURS=rows`), unfenced: the saver's own logic without SQLite. */
const rows = async (): Promise<Subject> => ({
  saver: new BatonCheckpointSaver(Effect.runSync(Effect.provide(MemoryCheckpointStore.makeRows, MemoryState.layer))),
  configurable: async () => ({}),
  close: async () => {}
})

const oursOf = (which: string | undefined) =>
  which === "memory"
    ? { label: "MemorySaver (no storage, LangGraph's serializer)", open: memory }
    : which === "rows"
    ? { label: "baton saver over memory rows", open: rows }
    : { label: "baton sqlite (fenced)", open: ours }

try {
  await compare({
    title: "checkpoint bench",
    ours: oursOf(process.env.BENCH_OURS),
    theirs: { label: "official SqliteSaver", open: theirs }
  })
} finally {
  Fs.rmSync(dir, { recursive: true, force: true })
}
