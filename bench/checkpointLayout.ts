/**
 * `npm run bench:layout`: the storage side of one realistic checkpoint step
 * alone — no LangGraph, no serializer, no saver code — as CPU time of this
 * process per step, for three sets of statements on fresh files (WAL,
 * synchronous=NORMAL), alternating, `BENCH_ROUNDS` rounds + a warm-up:
 *
 * - `today`: baton's SQLite saver as it is, on node:sqlite — put is
 *   `BEGIN IMMEDIATE`, the changed channels' blobs (2–3 rows, fenced) and the
 *   checkpoint row (fenced), `COMMIT`; putWrites one fenced self-committing
 *   insert; getTuple the newest row, its writes, its blobs;
 * - `row`: the "changed values in the row" layout, on
 *   node:sqlite — put is one fenced self-committing insert of the row with
 *   every channel's value in it; getTuple the newest row and its writes;
 * - `official`: LangGraph's SqliteSaver's statements on better-sqlite3 —
 *   put one insert of the whole checkpoint; putWrites a transaction of
 *   inserts; getTuple one select with its writes.
 *
 * The values have the realistic workload's sizes (a message list growing by
 * ~0.9 KB a step, four small channels, 2–3 writes of 300 bytes). Prints the
 * median µs of CPU per step of each, and last `ratio: N.NN` (today /
 * official: what our storage costs against the official saver's).
 */
import Database from "better-sqlite3"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { DatabaseSync } from "node:sqlite"

const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
const threads = 48
const steps = 20

interface Db {
  readonly exec: (sql: string) => void
  readonly run: (sql: string, params: ReadonlyArray<unknown>) => void
  readonly all: (sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<any>
  readonly close: () => void
}

const open = (driver: "node" | "better", file: string): Db => {
  const db: any = driver === "node" ? new DatabaseSync(file) : new Database(file)
  db.exec("PRAGMA journal_mode = WAL")
  db.exec("PRAGMA synchronous = NORMAL")
  const cache = new Map<string, any>()
  const prepared = (sql: string) => {
    let s = cache.get(sql)
    if (s === undefined) cache.set(sql, s = db.prepare(sql))
    return s
  }
  return {
    exec: (sql) => db.exec(sql),
    run: (sql, params) => void prepared(sql).run(...params),
    all: (sql, params) => prepared(sql).all(...params),
    close: () => db.close()
  }
}

const schema = [
  `CREATE TABLE leases (tenant_id TEXT NOT NULL, root TEXT NOT NULL, holder TEXT, epoch INTEGER, expires_at INTEGER, PRIMARY KEY (tenant_id, root))`,
  `CREATE TABLE cp (tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent TEXT,
    type TEXT, checkpoint BLOB, metadata_type TEXT, metadata BLOB, channel_versions TEXT, channel_values BLOB,
    PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id))`,
  `CREATE TABLE wr (tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
    idx INTEGER NOT NULL, channel TEXT, type TEXT, value BLOB, task_path TEXT, PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx))`,
  `CREATE TABLE bl (tenant_id TEXT NOT NULL, thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, channel TEXT NOT NULL, version TEXT NOT NULL,
    type TEXT, value BLOB, PRIMARY KEY (tenant_id, thread_id, checkpoint_ns, channel, version))`
]

const bytes = (n: number, seed: number) => {
  const b = new Uint8Array(n)
  for (let i = 0; i < n; i++) b[i] = 32 + ((i * 31 + seed) % 90)
  return b
}
const messagesSize = (s: number) => 1200 + s * 900
const small = 400
const key = "tenant_id = ? COLLATE BINARY AND thread_id = ? COLLATE BINARY AND checkpoint_ns = ? COLLATE BINARY"
const fresh = "EXISTS (SELECT 1 FROM leases WHERE tenant_id = ? AND root = ? AND holder = ? AND epoch = ? AND expires_at = ?)"
const fence = (t: number) => ["default", `thread-${t}`, "holder", 1, 99]
const union = (n: number, row: string) => Array.from({ length: n }, () => row).join(" UNION ALL ")
const writesOf = (s: number) => (s % 2 === 1 ? 3 : 2)
const idOf = (s: number) => `id${String(s).padStart(4, "0")}`

/** baton's fenced writes of a step's pending writes (one self-committing statement), then the newest row and its writes. */
const fencedWrites = (db: Db, t: number, s: number) => {
  const k = ["default", `thread-${t}`, ""]
  const n = writesOf(s)
  db.run(
    `INSERT INTO wr ${union(n, `SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${fresh}`)}`,
    Array.from({ length: n }, (_, i) => [...k, idOf(s), "task", i, "channel", "json", bytes(300, i), "", ...fence(t)]).flat()
  )
}

const layouts: Record<string, { readonly driver: "node" | "better"; readonly step: (db: Db, t: number, s: number) => void }> = {
  today: {
    driver: "node",
    step: (db, t, s) => {
      const k = ["default", `thread-${t}`, ""]
      const changed = s % 2 === 0 ? 3 : 2
      db.run("BEGIN IMMEDIATE", [])
      db.run(
        `INSERT INTO bl ${union(changed, `SELECT ?, ?, ?, ?, ?, ?, ? WHERE ${fresh}`)} ON CONFLICT DO NOTHING`,
        Array.from({ length: changed }, (_, i) => [...k, `c${i}`, String(s + 1), "json", bytes(i === 0 ? messagesSize(s) : small, s), ...fence(t)]).flat()
      )
      db.run(
        `INSERT INTO cp (tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent, type, checkpoint, metadata_type, metadata, channel_versions)
          SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${fresh}`,
        [...k, idOf(s), "parent", "json", bytes(500, s), "json", bytes(120, s), `[["c0","${s + 1}"],["c1","${s + 1}"],["c2","1"],["c3","1"],["c4","1"]]`, ...fence(t)]
      )
      db.run("COMMIT", [])
      fencedWrites(db, t, s)
      const [row] = db.all(`SELECT checkpoint_id, parent, type, checkpoint, metadata_type, metadata, channel_versions FROM cp WHERE ${key}
        ORDER BY checkpoint_id DESC LIMIT 1`, k)
      db.all(`SELECT * FROM wr WHERE ${key} AND checkpoint_id = ?`, [...k, row.checkpoint_id])
      const blobs = db.all(
        `SELECT channel, version, type, value FROM bl WHERE tenant_id = ? AND thread_id = ? AND checkpoint_ns = ?
          AND (channel, version) IN (VALUES (?, ?), (?, ?), (?, ?), (?, ?), (?, ?))`,
        [...k, "c0", String(s + 1), "c1", String(s + 1), "c2", "1", "c3", "1", "c4", "1"]
      )
      if (blobs.length < 2) throw new Error("bench: blobs not read back")
    }
  },
  row: {
    driver: "node",
    step: (db, t, s) => {
      const k = ["default", `thread-${t}`, ""]
      db.run(
        `INSERT INTO cp SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${fresh}`,
        [...k, idOf(s), "parent", "json", bytes(500, s), "json", bytes(120, s), "[]", bytes(messagesSize(s) + 4 * small, s), ...fence(t)]
      )
      fencedWrites(db, t, s)
      const [row] = db.all(`SELECT checkpoint_id, parent, type, checkpoint, metadata_type, metadata, channel_versions, channel_values FROM cp
        WHERE ${key} ORDER BY checkpoint_id DESC LIMIT 1`, k)
      db.all(`SELECT * FROM wr WHERE ${key} AND checkpoint_id = ?`, [...k, row.checkpoint_id])
    }
  },
  official: {
    driver: "better",
    step: (db, t, s) => {
      const k = [`thread-${t}`, ""]
      db.run(
        `INSERT OR REPLACE INTO cp (tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent, type, checkpoint, metadata) VALUES ('default', ?, ?, ?, ?, ?, ?, ?)`,
        [...k, idOf(s), "parent", "json", bytes(messagesSize(s) + 4 * small + 700, s), bytes(120, s)]
      )
      db.run("BEGIN", [])
      for (let i = 0; i < writesOf(s); i++) {
        db.run(
          `INSERT OR IGNORE INTO wr (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES ('default', ?, ?, ?, ?, ?, ?, ?, ?)`,
          [...k, idOf(s), "task", i, "channel", "json", bytes(300, i)]
        )
      }
      db.run("COMMIT", [])
      db.all(
        `SELECT thread_id, checkpoint_ns, checkpoint_id, parent, type, checkpoint, metadata,
          (SELECT json_group_array(json_object('task_id', w.task_id, 'channel', w.channel, 'type', w.type, 'value', CAST(w.value AS TEXT)))
            FROM wr AS w WHERE w.tenant_id = 'default' AND w.thread_id = cp.thread_id AND w.checkpoint_ns = cp.checkpoint_ns AND w.checkpoint_id = cp.checkpoint_id) AS pending_writes
        FROM cp WHERE tenant_id = 'default' AND thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1`,
        k
      )
    }
  }
}

const cpuMillis = () => {
  const { system, user } = process.cpuUsage()
  return (user + system) / 1000
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-layout-"))
const spent: Record<string, Array<number>> = {}
console.log(`layout bench: storage CPU per realistic step, ${threads} threads × ${steps} steps, ${rounds} rounds + warm-up; load ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
try {
  let opened = 0
  for (let r = 0; r <= rounds; r++) {
    const names = r % 2 === 0 ? Object.keys(layouts) : Object.keys(layouts).reverse()
    for (const name of names) {
      const layout = layouts[name]!
      const db = open(layout.driver, Path.join(dir, `${opened++}.db`))
      for (const statement of schema) db.exec(statement)
      for (let t = 0; t < threads; t++) db.run("INSERT INTO leases VALUES ('default', ?, 'holder', 1, 99)", [`thread-${t}`])
      const start = cpuMillis()
      for (let s = 0; s < steps; s++) for (let t = 0; t < threads; t++) layout.step(db, t, s)
      const perStep = ((cpuMillis() - start) * 1000) / (threads * steps)
      db.close()
      if (r > 0) (spent[name] ??= []).push(perStep)
    }
  }
} finally {
  Fs.rmSync(dir, { recursive: true, force: true })
}
for (const [name, xs] of Object.entries(spent)) console.log(`${name.padEnd(9)} ${median(xs).toFixed(0)} µs of CPU per step`)
console.log(`load after: ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
console.log(`ratio: ${(median(spent.today!) / median(spent.official!)).toFixed(2)}`)
