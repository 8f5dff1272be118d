/**
 * Three real processes over one SQLite file run 50 executions; one process is
 * SIGKILLed mid-step. The other two finish every execution (the sweep takes
 * the dead one's trees once their 2 s leases expire), and no step's side
 * effect happens twice. Real processes run on real time: this test waits on
 * them, bounded well under a minute.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"

const worker = fileURLToPath(new URL("./worker.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "baton-e2e-"))
const path = join(dir, "shared.sqlite")
const children: Array<ChildProcess> = []

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const start = (id: string, count: number) => {
  const child = spawn(process.execPath, [worker, path, id, String(count)], { stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  const lines: Array<string> = []
  const waiters: Array<{ match: (l: string) => boolean; resolve: () => void }> = []
  let buffer = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString()
    let i: number
    while ((i = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, i)
      buffer = buffer.slice(i + 1)
      lines.push(line)
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve()
        }
      }
    }
  })
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const until = (match: (l: string) => boolean) =>
    lines.some(match) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve }))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, lines, until, exited, stderr: () => stderr }
}

const count = (db: DatabaseSync, sql: string) => (db.prepare(sql).get() as { n: number }).n

describe("multi-process end-to-end over a SQLite file", () => {
  it("3 processes, 50 executions, one SIGKILLed mid-step: all finish, no side effect twice", async () => {
    const a = start("proc-a", 17)
    const b = start("proc-b", 17)
    const c = start("proc-c", 16)
    // Kill proc-a as soon as its "work" steps run (its executions run at once: all are mid-step).
    await a.until((l) => / step work \d+ started$/.test(l))
    a.child.kill("SIGKILL")
    await a.exited
    await Promise.all([b.until((l) => l.endsWith("ready")), c.until((l) => l.endsWith("ready"))])

    const db = new DatabaseSync(path, { readOnly: true })
    const deadline = Date.now() + 45_000
    let finished = 0
    while (Date.now() < deadline) {
      finished = count(db, "SELECT count(*) AS n FROM baton_records WHERE status = 'Finished' AND execution_id = root_execution_id")
      if (finished === 50) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const byStatus = db.prepare("SELECT status, count(*) AS n FROM baton_records GROUP BY status").all()
    const failed = db.prepare("SELECT execution_id, error FROM baton_records WHERE status <> 'Finished'").all()
    assert.strictEqual(
      finished,
      50,
      `all 50 finished (records: ${JSON.stringify(byStatus)}; not finished: ${JSON.stringify(failed)}; b: ${b.stderr()} c: ${c.stderr()})`
    )
    const twice = db.prepare("SELECT key, node, applied FROM e2e_effects WHERE applied > 1").all()
    assert.deepStrictEqual(twice, [], "no side effect applied twice under one key")
    const keysPerStep = db.prepare("SELECT root, node, count(*) AS n FROM e2e_effects GROUP BY root, node HAVING count(*) > 1").all()
    assert.deepStrictEqual(keysPerStep, [], "one idempotency key per step")
    assert.strictEqual(count(db, "SELECT count(*) AS n FROM e2e_effects"), 150, "every step of every execution applied once")
    const recovered = count(
      db,
      `SELECT count(*) AS n FROM e2e_effects f JOIN e2e_effects s ON s.root = f.root AND s.node = 'store'
       WHERE f.node = 'fetch' AND f.instance = 'proc-a' AND s.instance <> 'proc-a'`
    )
    assert.isAbove(recovered, 0, "the killed process's executions were finished by the others")
    db.close()

    b.child.kill("SIGTERM")
    c.child.kill("SIGTERM")
    const codes = await Promise.all([b.exited, c.exited])
    assert.deepStrictEqual(codes, [0, 0], "the survivors close gracefully on SIGTERM")
    assert.isTrue(b.lines.includes("proc-b closed") && c.lines.includes("proc-c closed"))
  }, 60_000)
})
