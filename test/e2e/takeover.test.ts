/**
 * Crash takeover between real processes on the default 30 s lease, over a
 * SQLite file and over a Postgres schema: process A runs a tree into a
 * minute-long step and is SIGKILLed; process B's first step of the tree
 * comes within 1 s, and every step's effect happens once per idempotency
 * key. On Postgres, A's liveness session is cut instead (`pg_terminate_backend`,
 * A lives on): B takes its tree at once, A's next renewal is refused and its
 * call fails with `LeaseLostError`, and still no effect happens twice.
 *
 * Real processes run on real time: the waits are bounded.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { testSchemas, withAdmin } from "../pg/db.ts"
import { killAll, type Proc, start, within } from "./processes.ts"

const worker = fileURLToPath(new URL("./takeoverWorker.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "baton-takeover-"))
const pgSchema = testSchemas("takeover")
const now = () => performance.timeOrigin + performance.now()

afterAll(() => {
  killAll()
  rmSync(dir, { recursive: true, force: true })
})

const isReady = (l: string) => / ready /.test(l)
const field = (line: string, i: number) => line.split(" ")[i]!
const at = (line: string) => Number(line.split(" ").at(-1))

/** The two processes of one backend, both ready (the first migrates alone). */
const pair = async (kind: "sqlite" | "pg", target: string): Promise<[Proc, Proc]> => {
  const a = start(worker, [kind, target, `${kind}-a`], `${kind}-a`)
  await within(30_000, "A ready", a.until(isReady))
  const b = start(worker, [kind, target, `${kind}-b`], `${kind}-b`)
  await within(30_000, "B ready", b.until(isReady))
  return [a, b]
}

/** Every effect line of both processes, by idempotency key. */
const effectsByKey = (procs: ReadonlyArray<Proc>) => {
  const byKey = new Map<string, Array<string>>()
  for (const p of procs) {
    for (const l of p.lines.filter((l) => l.includes(" effect "))) byKey.set(field(l, 4), [...(byKey.get(field(l, 4)) ?? []), l])
  }
  return byKey
}

const killScenario = async (kind: "sqlite" | "pg", target: string) => {
  const [a, b] = await pair(kind, target)
  assert.match(a.lines.find(isReady)!, /ready liveness \(/, "A runs with the liveness signal")
  const thread = `${kind}-t1`
  a.send(`execute ${thread}`)
  const longOnA = await within(20_000, "A starts the long step", a.until((l) => l.startsWith(`${kind}-a run long ${thread} `)))
  a.child.kill("SIGKILL")
  const killedAt = now()
  const longOnB = await within(10_000, "B runs the long step", b.until((l) => l.startsWith(`${kind}-b run long ${thread} `)))
  const took = at(longOnB) - killedAt
  assert.isBelow(took, 1000, `SIGKILL → B's first step in ${took.toFixed(0)} ms, on a 30 s lease`)
  assert.strictEqual(field(longOnB, 4), field(longOnA, 4), "the interrupted step runs again under its idempotency key")
  await within(10_000, "B finishes the tree", b.until((l) => l.startsWith(`${kind}-b effect done ${thread} `)))
  const effects = effectsByKey([a, b])
  assert.strictEqual(effects.size, 3, "one, long, done")
  for (const [key, lines] of effects) assert.strictEqual(lines.length, 1, `the effect of ${key} once: ${lines.join(" | ")}`)
  b.child.kill("SIGKILL")
  await b.exited
}

describe("crash takeover between real processes, default lease", () => {
  it("SQLite: SIGKILL mid-step, the tree continues in the other process within 1 s", async () => {
    await killScenario("sqlite", join(dir, "takeover.sqlite"))
  }, 60_000)

  it("Postgres: SIGKILL mid-step, the tree continues in the other process within 1 s", async () => {
    await killScenario("pg", pgSchema())
  }, 60_000)

  it("Postgres: a live instance whose liveness session is cut loses its tree at once, is refused at its next renewal, and no effect happens twice", async () => {
    const schema = pgSchema()
    const [a, b] = await pair("pg", schema)
    const thread = "pg-cut"
    a.send(`execute ${thread}`)
    const longOnA = await within(20_000, "A starts the long step", a.until((l) => l.startsWith(`pg-a run long ${thread} `)))
    const cut = await withAdmin((sql) =>
      sql<{ ok: boolean }>`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = ${`takeover-${schema}-pg-a liveness`}`
    )
    const cutAt = now()
    assert.deepStrictEqual(cut.map((r) => r.ok), [true], "A's one liveness session was ended")
    const longOnB = await within(10_000, "B takes the tree", b.until((l) => l.startsWith(`pg-b run long ${thread} `)))
    const took = at(longOnB) - cutAt
    assert.isBelow(took, 1000, `cut → B's first step in ${took.toFixed(0)} ms`)
    assert.strictEqual(field(longOnB, 4), field(longOnA, 4))
    // A lives on and still runs its long step: its next renewal (every 10 s) is refused by the epoch.
    const failed = await within(20_000, "A's call fails", a.until((l) => l.startsWith(`pg-a failed ${thread} `)))
    assert.strictEqual(field(failed, 3), "LeaseLostError")
    await within(10_000, "B finishes the tree", b.until((l) => l.startsWith(`pg-b effect done ${thread} `)))
    assert.isFalse(a.lines.some((l) => l.startsWith(`pg-a effect long ${thread} `)), "A's stopped step applied nothing")
    const effects = effectsByKey([a, b])
    assert.strictEqual(effects.size, 3)
    for (const [key, lines] of effects) assert.strictEqual(lines.length, 1, `the effect of ${key} once: ${lines.join(" | ")}`)
    // A took its liveness lock again: a later tree of A's is its own, not taken.
    a.send(`execute ${thread}-2`)
    await within(20_000, "A runs a new tree", a.until((l) => l.startsWith(`pg-a run long ${thread}-2 `)))
    const [row] = await withAdmin((sql) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${`takeover-${schema}-pg-a liveness`}`
    )
    assert.strictEqual(row?.n, 1, "A holds a liveness session again")
    a.child.kill("SIGKILL")
    b.child.kill("SIGKILL")
    await Promise.all([a.exited, b.exited])
  }, 60_000)
})
