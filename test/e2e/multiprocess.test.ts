/**
 * Three real processes over one shared store — a SQLite file, or a Postgres
 * schema — run 50 executions, each with a pause that the test answers on
 * another process than the one that ran up to it. One process is SIGKILLed
 * mid-step and restarted (same instance id, as a restarted pod would be). The
 * others finish every execution (the sweep takes the dead one's trees once
 * their 2 s leases expire), no step's side effect happens twice, and no
 * checkpoint write under a superseded lease epoch is accepted (a trigger in
 * the database records the lease row each accepted write was fenced by).
 * Over Postgres it runs a second time with the processes' connections killed
 * at random (`pg_terminate_backend`, only the connections of this test's
 * schema, by application_name) throughout.
 *
 * Real processes run on real time: this test waits on them, bounded (about 15 s a run on an idle
 * 2-core machine; the bounds leave room for a loaded one).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { PgStores } from "../../layers/pg/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { testSchemas, url } from "../pg/db.ts"
import { killAll, type Proc, sleep, start, within } from "./processes.ts"

const worker = fileURLToPath(new URL("./worker.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "baton-e2e-"))
const pgSchema = testSchemas("e2e")

afterAll(() => {
  killAll()
  rmSync(dir, { recursive: true, force: true })
})

type Row = Record<string, unknown>

/** The test's own view of the shared store: plain SQL, off the processes' connections. */
interface Db {
  readonly kind: "sqlite" | "pg"
  /** What the workers are given: the file path or the schema. */
  readonly target: string
  readonly all: (sql: string) => Promise<Array<Row>>
  readonly close: () => Promise<void>
}

/** The outside world: effects deduplicated by idempotency key, and every run of a step. */
const ledgerTables = [
  "CREATE TABLE e2e_effects (key TEXT PRIMARY KEY, root TEXT NOT NULL, node TEXT NOT NULL, instance TEXT NOT NULL, attempt TEXT NOT NULL)",
  "CREATE TABLE e2e_runs (key TEXT NOT NULL, attempt TEXT NOT NULL, PRIMARY KEY (key, attempt))"
]

/** The audit: every accepted checkpoint write, with the lease row (epoch, holder) it was fenced by. */
const auditSelect = `SELECT l.root_execution_id, l.epoch, l.holder FROM baton_records r
  JOIN baton_leases l ON l.tenant_id = r.tenant_id AND l.root_execution_id = r.root_execution_id
  WHERE r.tenant_id = NEW.tenant_id AND r.thread_id = NEW.thread_id AND r.execution_id = r.root_execution_id`

const sqliteDb = async (): Promise<Db> => {
  const path = join(dir, "shared.sqlite")
  await Effect.runPromise(Effect.scoped(Layer.build(SqliteStores.layer({ path }))))
  const db = new DatabaseSync(path)
  db.exec("PRAGMA busy_timeout = 5000")
  for (const ddl of ledgerTables) db.exec(ddl)
  db.exec("CREATE TABLE e2e_writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, root TEXT, epoch INTEGER, holder TEXT)")
  for (const table of ["baton_checkpoints", "baton_checkpoint_writes"]) {
    db.exec(`CREATE TRIGGER e2e_audit_${table} AFTER INSERT ON ${table} BEGIN
      INSERT INTO e2e_writes (root, epoch, holder) ${auditSelect}; END`)
  }
  return {
    kind: "sqlite",
    target: path,
    all: async (sql) => db.prepare(sql).all() as Array<Row>,
    close: async () => db.close()
  }
}

const pgDb = async (): Promise<Db> => {
  const schema = pgSchema()
  const runtime = ManagedRuntime.make(PgStores.layer({ url, schema, wakeups: false, maxConnections: 2, applicationName: "e2e-observer" }))
  const all = (text: string) => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Row>(text))).then((rows) => [...rows])
  for (const ddl of ledgerTables) await all(ddl)
  await all("CREATE TABLE e2e_writes (seq BIGSERIAL PRIMARY KEY, root TEXT, epoch BIGINT, holder TEXT)")
  await all(`CREATE FUNCTION e2e_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO e2e_writes (root, epoch, holder) ${auditSelect}; RETURN NULL; END $$`)
  for (const table of ["baton_checkpoints", "baton_checkpoint_writes"]) {
    await all(`CREATE TRIGGER e2e_audit AFTER INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION e2e_audit()`)
  }
  return { kind: "pg", target: schema, all, close: () => runtime.dispose() }
}

const startWorker = (db: Db, id: string, count: number): Proc => start(worker, [db.kind, db.target, id, String(count)], id)

const json = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === "bigint" ? Number(v) : v))
const debug = process.env.BATON_E2E_DEBUG !== undefined
const t0 = Date.now()
const n = (rows: Array<Row>) => Number(rows[0]!["n"])

/** Kills one random connection of the processes (never the test's own) every 0.4–1.2 s until stopped. */
const connectionKiller = (db: Db) => {
  let stopped = false
  let killed = 0
  const done = (async () => {
    while (!stopped) {
      await sleep(400 + Math.random() * 800)
      if (stopped) break
      const rows = await db.all(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE application_name = 'e2e-${db.target}' AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1`)
      if (rows[0]?.["ok"] === true) killed++
    }
  })()
  return { stop: async () => (stopped = true, await done, killed) }
}

/** Resolves once `check` holds, looking every 50 ms; rejects naming `what` after `ms` of real time. */
const until = async (what: string, ms: number, check: () => Promise<boolean>): Promise<void> => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`)
    await sleep(50)
  }
}

const scenario = async (db: Db, options: { readonly chaos: boolean }) => {
  const a = startWorker(db, "proc-a", 17)
  const b = startWorker(db, "proc-b", 17)
  const c = startWorker(db, "proc-c", 16)
  const killer = options.chaos ? connectionKiller(db) : undefined
  // Kill proc-a once every execution it starts is recorded (a start the connection killer delayed would
  // otherwise die unrecorded with it) and its "work" steps run (all mid-step), then restart it.
  await until("proc-a records its 17 executions", 30_000, async () =>
    n(await db.all("SELECT count(*) AS n FROM baton_records WHERE thread_id LIKE 't-proc-a-%'")) === 17)
  // Its executions usually run their work steps at once; one it lost to the killer runs elsewhere: kill it anyway then.
  await Promise.race([a.until((l) => / step work \d+ started$/.test(l)), sleep(10_000)])
  a.child.kill("SIGKILL")
  await a.exited
  const killedPid = a.child.pid!
  const a2 = startWorker(db, "proc-a", 0)
  await within(30_000, "every process is ready", Promise.all([a2, b, c].map((p) => p.until((l) => l.endsWith("ready")))))
  const live = [a2, b, c]

  // Answer each pending pause on a process other than the one that ran the tree up to it.
  const answered = new Set<string>()
  let turn = 0
  const deadline = Date.now() + 90_000
  let finished = 0
  while (Date.now() < deadline) {
    finished = n(await db.all("SELECT count(*) AS n FROM baton_records WHERE status = 'Finished' AND execution_id = root_execution_id"))
    if (finished === 50) break
    if (debug) console.log(`${((Date.now() - t0) / 1000).toFixed(1)} finished ${finished}`)
    const pending = await db.all(`SELECT p.pause_id, w.instance FROM baton_pauses p
      LEFT JOIN e2e_effects w ON w.root = p.root_execution_id AND w.node = 'work' WHERE p.status = 'Pending'`)
    for (const p of pending) {
      const pauseId = String(p["pause_id"])
      if (answered.has(pauseId)) continue
      const others = live.filter((x) => x.id !== p["instance"])
      others[turn++ % others.length]!.send(`resume ${pauseId}`)
      answered.add(pauseId)
    }
    await sleep(100)
  }
  const killed = killer === undefined ? 0 : await killer.stop()

  const byStatus = await db.all("SELECT status, count(*) AS n FROM baton_records GROUP BY status")
  const unfinished = await db.all("SELECT execution_id, status, error FROM baton_records WHERE status <> 'Finished'")
  const recordedThreads = new Set((await db.all("SELECT thread_id FROM baton_records")).map((r) => String(r["thread_id"])))
  const expectedThreads = [["a", 17], ["b", 17], ["c", 16]].flatMap(([p, count]) => Array.from({ length: Number(count) }, (_, i) => `t-proc-${p}-${i}`))
  const unrecorded = expectedThreads.filter((t) => !recordedThreads.has(t))
  assert.strictEqual(
    finished,
    50,
    `all 50 finished (records: ${json(byStatus)}; not finished: ${json(unfinished)}; never recorded: ${json(unrecorded)}; ` +
      live.map((p) => `${p.id}: ${p.stderr()}`).join(" ") + ")"
  )
  assert.deepStrictEqual(unfinished, [], "no execution rests anywhere else than Finished")
  // A step may run again under its key (at least once): when its earlier run died with the killed process
  // between its effect and its checkpoint, when a pass lost its lease under load, or when a lost connection
  // failed the pass. The outside world dedups by the key, so what matters is that a step has one key.
  const reruns = n(await db.all("SELECT count(*) AS n FROM (SELECT key FROM e2e_runs GROUP BY key HAVING count(*) > 1) x"))
  assert.deepStrictEqual(
    await db.all("SELECT root, node, count(*) AS n FROM e2e_effects GROUP BY root, node HAVING count(*) > 1"),
    [],
    "one idempotency key per step"
  )
  assert.strictEqual(n(await db.all("SELECT count(*) AS n FROM e2e_effects")), 150, "every effecting step of every execution applied once")
  const recovered = n(await db.all(
    `SELECT count(*) AS n FROM e2e_effects f JOIN e2e_effects s ON s.root = f.root AND s.node = 'store'
     WHERE f.node = 'fetch' AND f.attempt LIKE 'proc-a-${killedPid}-%' AND s.attempt NOT LIKE 'proc-a-${killedPid}-%'`
  ))
  assert.isAbove(recovered, 0, "the killed process's executions were finished by the others")
  assert.strictEqual(
    n(await db.all("SELECT count(*) AS n FROM baton_pauses WHERE status = 'Taken' AND resolved_by IS NOT NULL")),
    50,
    "every execution's pause was answered and taken"
  )
  assert.deepStrictEqual(
    await db.all(`SELECT p.pause_id, p.resolved_by FROM baton_pauses p JOIN e2e_effects w ON w.root = p.root_execution_id AND w.node = 'work'
      WHERE p.resolved_by = w.instance`),
    [],
    "each pause was answered on another process than the one that ran up to it"
  )
  // No stale-epoch write accepted: per tree, the epochs of accepted writes never go down, and every one had a holder.
  const writes = await db.all("SELECT root, epoch, holder FROM e2e_writes ORDER BY seq")
  assert.isAbove(writes.length, 150, "the audit saw the checkpoint writes")
  const last = new Map<string, number>()
  for (const w of writes) {
    const root = String(w["root"])
    const epoch = Number(w["epoch"])
    assert.isNotNull(w["holder"], `a write to ${root} was accepted with no holder`)
    assert.isAtLeast(epoch, last.get(root) ?? 0, `tree ${root}: a write of epoch ${epoch} was accepted after one of epoch ${last.get(root)}`)
    last.set(root, epoch)
  }
  assert.isAbove([...last.values()].filter((e) => e > 1).length, 0, "some trees changed holder (the check saw new epochs)")
  if (options.chaos) assert.isAbove(killed, 0, "connections were killed during the run")

  for (const p of live) p.child.kill("SIGTERM")
  const codes = await within(30_000, "the processes exit after SIGTERM", Promise.all(live.map((p) => p.exited)))
  assert.deepStrictEqual(codes, [0, 0, 0], `the processes close gracefully on SIGTERM (${live.map((p) => p.stderr()).join(" ")})`)
  for (const p of live) assert.isTrue(p.lines.includes(`${p.id} closed`))
  return { killed, reruns }
}

describe("multi-process end-to-end", () => {
  it("over a SQLite file: 3 processes, 50 executions with pauses, one SIGKILLed mid-step and restarted", async () => {
    const db = await sqliteDb()
    try {
      const started = Date.now()
      const r = await scenario(db, { chaos: false })
      console.log(`e2e sqlite: ${((Date.now() - started) / 1000).toFixed(1)} s, ${r.killed} connections killed, ${r.reruns} steps re-run under their key`)
    } finally {
      await db.close()
    }
  }, 120_000)

  it("over Postgres: 3 processes, 50 executions with pauses, one SIGKILLed mid-step and restarted", async () => {
    const db = await pgDb()
    try {
      const started = Date.now()
      const r = await scenario(db, { chaos: false })
      console.log(`e2e pg: ${((Date.now() - started) / 1000).toFixed(1)} s, ${r.killed} connections killed, ${r.reruns} steps re-run under their key`)
    } finally {
      await db.close()
    }
  }, 120_000)

  it("over Postgres with the processes' connections killed at random throughout", async () => {
    const db = await pgDb()
    try {
      const started = Date.now()
      const r = await scenario(db, { chaos: true })
      console.log(`e2e pg chaos: ${((Date.now() - started) / 1000).toFixed(1)} s, ${r.killed} connections killed, ${r.reruns} steps re-run under their key`)
    } finally {
      await db.close()
    }
  }, 120_000)
})
