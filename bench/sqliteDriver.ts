/**
 * `npm run bench:driver`: the same SQL on `node:sqlite` (our client's driver)
 * and better-sqlite3 (what LangGraph's official SqliteSaver runs on), per
 * statement kind, to find what makes node:sqlite slower inside the saver
 * workload.
 *
 * The workload is the saver's, without LangGraph: per step of a thread, a
 * blob INSERT (a growing value, like a message list), a checkpoint INSERT,
 * a writes INSERT, then the three reads of getTuple (the newest checkpoint
 * of the thread: `ORDER BY checkpoint_id DESC LIMIT 1`; its writes; its
 * blob). Threads interleave, as at concurrency 8, so the file and its WAL
 * grow past a small page cache. Each variant runs both drivers on fresh
 * files, alternating which goes first, `BENCH_ROUNDS` rounds; prints the
 * median µs per statement kind and the ratio (node:sqlite / better-sqlite3
 * time: above 1 means node:sqlite is slower), and last `ratio: N.NN` for the
 * default variant's total.
 *
 * Variants (`BENCH_VARIANTS`, comma-separated; default all):
 * - `default`: each driver as it opens (WAL, synchronous=NORMAL);
 * - `cache`: node:sqlite with `PRAGMA cache_size = -16000` (better-sqlite3's
 *   compiled default; node:sqlite's is -2000, 2 MB);
 * - `cache-both`: both at -2000;
 * - `keyed`: both drivers, the newest-checkpoint read written as the saver
 *   writes it now, `tenant_id = ? COLLATE BINARY AND …` (see
 *   layers/sql/internal/stablePlan.ts).
 *
 * What it showed (Node 24.22, SQLite 3.54.1 in node:sqlite, 3.53.2 in
 * better-sqlite3): the cache settings change nothing; the newest-checkpoint
 * read alone is ~2× slower on node:sqlite because that SQLite compiles a
 * statement that sorts (`ORDER BY`, `MAX`) and binds its equality keys again
 * at EVERY run (the planner marks it as depending on the bound values, a new
 * binding expires it: a breakpoint on `sqlite3Reprepare` hits once per call,
 * `perf` puts 40 % of the read in the parser and planner). `keyed` closes it.
 */
import Database from "better-sqlite3"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { DatabaseSync } from "node:sqlite"

const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const threads = Number(process.env.BENCH_THREADS ?? 48)
const steps = Number(process.env.BENCH_STEPS ?? 20)
const lanes = 8

/** What the workload needs of a driver: run a statement, read rows. */
interface Driver {
  readonly run: (sql: string, params: ReadonlyArray<unknown>) => void
  readonly all: (sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<any>
  readonly exec: (sql: string) => void
  readonly close: () => void
}

const cached = <S>(prepare: (sql: string) => S) => {
  const cache = new Map<string, S>()
  return (sql: string): S => {
    let s = cache.get(sql)
    if (s === undefined) cache.set(sql, s = prepare(sql))
    return s
  }
}

const nodeSqlite = (file: string, pragmas: ReadonlyArray<string>): Driver => {
  const db = new DatabaseSync(file)
  const prepared = cached((sql) => db.prepare(sql))
  for (const p of ["journal_mode = WAL", "synchronous = NORMAL", ...pragmas]) db.exec(`PRAGMA ${p}`)
  return {
    run: (sql, params) => void prepared(sql).run(...(params as Array<any>)),
    all: (sql, params) => prepared(sql).all(...(params as Array<any>)),
    exec: (sql) => db.exec(sql),
    close: () => db.close()
  }
}

const betterSqlite = (file: string, pragmas: ReadonlyArray<string>): Driver => {
  const db: any = new Database(file)
  const prepared = cached((sql) => db.prepare(sql))
  for (const p of ["journal_mode = WAL", "synchronous = NORMAL", ...pragmas]) db.pragma(p)
  return {
    run: (sql, params) => void (prepared(sql) as any).run(...params),
    all: (sql, params) => (prepared(sql) as any).all(...params),
    exec: (sql) => db.exec(sql),
    close: () => db.close()
  }
}

const schema = [
  `CREATE TABLE checkpoints (tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT, type TEXT NOT NULL, checkpoint BLOB NOT NULL, metadata_type TEXT NOT NULL, metadata BLOB NOT NULL, channel_versions TEXT,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id))`,
  `CREATE TABLE writes (tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT NOT NULL, value BLOB NOT NULL, task_path TEXT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx))`,
  `CREATE TABLE blobs (tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, channel TEXT NOT NULL, version TEXT NOT NULL,
    type TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version))`
]

const kinds = ["insert blob", "insert checkpoint", "insert writes", "read latest", "read writes", "read blob"] as const
type Kind = typeof kinds[number]

const sqlOf: Record<Kind, string> = {
  "insert blob": "INSERT INTO blobs VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
  "insert checkpoint": "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  "insert writes": "INSERT INTO writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  "read latest":
    "SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata, channel_versions FROM checkpoints WHERE tenant_id = ? AND thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1",
  "read writes": "SELECT checkpoint_id, task_id, idx, channel, type, value, task_path FROM writes WHERE tenant_id = ? AND thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
  "read blob": "SELECT channel, version, type, value FROM blobs WHERE tenant_id = ? AND thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?"
}

const bytes = (n: number, seed: number) => {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = 32 + ((i * 31 + seed) % 90)
  return b
}

/** The newest-checkpoint read with each key written `? COLLATE BINARY` (the `keyed` variant). */
const keyedLatest = sqlOf["read latest"].replace(/ = \?/g, " = ? COLLATE BINARY")

/** Runs the workload on a driver; answers the time spent per statement kind (ms). */
const workload = (d: Driver, latestSql: string): Record<Kind, number> => {
  for (const s of schema) d.exec(s)
  const spent = Object.fromEntries(kinds.map((k) => [k, 0])) as Record<Kind, number>
  const timed = <A>(kind: Kind, f: () => A): A => {
    const t0 = performance.now()
    const a = f()
    spent[kind] += performance.now() - t0
    return a
  }
  const checkpoint = bytes(900, 1)
  const metadata = bytes(120, 2)
  for (let s = 0; s < steps; s++) {
    for (let lane = 0; lane < lanes; lane++) {
      for (let t = lane; t < threads; t += lanes) {
        const thread = `thread-${t}`
        const id = `1f0${String(s).padStart(6, "0")}-${t}`
        const blob = bytes(2000 + s * 1600, t + s)
        timed("insert blob", () => d.run(sqlOf["insert blob"], ["default", thread, "", "messages", String(s + 1), "json", blob]))
        timed("insert checkpoint", () =>
          d.run(sqlOf["insert checkpoint"], ["default", thread, "", id, s === 0 ? null : `prev-${s}`, "json", checkpoint, "json", metadata, `[["messages","${s + 1}"]]`]))
        const w = (i: number) => ["default", thread, "", id, `task-${s}`, i, "messages", "json", bytes(300, i), ""]
        timed("insert writes", () => d.run(sqlOf["insert writes"], [...w(0), ...w(1)]))
        const latest = timed("read latest", () => d.all(latestSql, ["default", thread, ""]))
        if (latest[0]?.checkpoint_id !== id) throw new Error(`bench: read ${latest[0]?.checkpoint_id}, expected ${id}`)
        const writes = timed("read writes", () => d.all(sqlOf["read writes"], ["default", thread, "", id]))
        if (writes.length !== 2) throw new Error(`bench: read ${writes.length} writes`)
        const blobs = timed("read blob", () => d.all(sqlOf["read blob"], ["default", thread, "", "messages", String(s + 1)]))
        if (blobs[0]?.value.length !== blob.length) throw new Error("bench: blob not read back")
      }
    }
  }
  return spent
}

const variants: Record<string, { readonly node: ReadonlyArray<string>; readonly better: ReadonlyArray<string>; readonly latest?: string }> = {
  default: { node: [], better: [] },
  cache: { node: ["cache_size = -16000"], better: [] },
  "cache-both": { node: [], better: ["cache_size = -2000"] },
  keyed: { node: [], better: [], latest: keyedLatest }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-driver-"))
const chosen = (process.env.BENCH_VARIANTS ?? Object.keys(variants).join(",")).split(",").map((s) => s.trim())
const statements = threads * steps
console.log(`driver bench: ${threads} threads × ${steps} steps on ${lanes} lanes, ${rounds} rounds + warm-up; µs per statement, node:sqlite / better-sqlite3; load ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
let main = 0
try {
  let opened = 0
  for (const name of chosen) {
    const v = variants[name]
    if (v === undefined) throw new Error(`bench: unknown variant ${name}`)
    const ours: Array<Record<Kind, number>> = []
    const theirs: Array<Record<Kind, number>> = []
    for (let r = 0; r <= rounds; r++) {
      const go = (open: typeof nodeSqlite, pragmas: ReadonlyArray<string>) => {
        const d = open(Path.join(dir, `${opened++}.db`), pragmas)
        try {
          return workload(d, v.latest ?? sqlOf["read latest"])
        } finally {
          d.close()
        }
      }
      const [a, b] = r % 2 === 0 ? [go(nodeSqlite, v.node), go(betterSqlite, v.better)] : (([y, x]) => [x, y])([go(betterSqlite, v.better), go(nodeSqlite, v.node)])
      if (r > 0) {
        ours.push(a!)
        theirs.push(b!)
      }
    }
    const line = (k: Kind | "total", pick: (x: Record<Kind, number>) => number) => {
      const a = median(ours.map(pick)) * 1000 / statements
      const b = median(theirs.map(pick)) * 1000 / statements
      console.log(`  ${k.padEnd(18)} ${a.toFixed(1).padStart(7)} µs / ${b.toFixed(1).padStart(7)} µs  (${(a / b).toFixed(2)})`)
      return a / b
    }
    console.log(`${name} (node: ${v.node.join("; ") || "as opened"}; better: ${v.better.join("; ") || "as opened"}${v.latest ? "; keys ? COLLATE BINARY" : ""})`)
    for (const k of kinds) line(k, (x) => x[k])
    const total = line("total", (x) => kinds.reduce((sum, k) => sum + x[k], 0))
    if (name === "default") main = total
  }
} finally {
  Fs.rmSync(dir, { recursive: true, force: true })
}
console.log(`load after: ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
console.log(`ratio: ${main.toFixed(2)}`)
