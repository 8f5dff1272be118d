/**
 * Live output between real processes over a Postgres schema and a SQLite
 * file: process A runs a tree, a reader in process R follows its stream; A
 * is SIGKILLed inside the tree's long step; another process (B, or R, which
 * is an instance too) takes the tree over and ends it. R gets every step event once, in order — each step's update,
 * each state, each custom event — with A's events before the kill and B's
 * after; a second reader that resumes after the last event R saw before the
 * kill gets exactly the rest.
 *
 * Real processes run on real time: the waits are bounded.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { testSchemas } from "../pg/db.ts"
import { killAll, start, within } from "./processes.ts"

const worker = fileURLToPath(new URL("./streamWorker.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "baton-stream-"))
const pgSchema = testSchemas("stream")

afterAll(() => {
  killAll()
  rmSync(dir, { recursive: true, force: true })
})

const isReady = (l: string) => / ready$/.test(l)
const ev = (line: string) => {
  const [, , tag, id, mode, what, instanceId] = line.split(" ")
  return { tag: tag!, id: Number(id), mode: mode!, what: what!, instanceId: instanceId! }
}

const scenario = async (kind: "sqlite" | "pg", target: string) => {
  const a = start(worker, [kind, target, `${kind}-a`], `${kind}-a`)
  await within(30_000, "A ready", a.until(isReady))
  const b = start(worker, [kind, target, `${kind}-b`], `${kind}-b`)
  const r = start(worker, [kind, target, `${kind}-r`], `${kind}-r`)
  await within(30_000, "B and R ready", Promise.all([b.until(isReady), r.until(isReady)]))
  const thread = `${kind}-t1`
  a.send(`execute ${thread}`)
  await within(20_000, "A starts the long step", a.until((l) => l.startsWith(`${kind}-a run long ${thread} `)))
  r.send(`follow ${thread} 0 first`)
  // R has A's events up to the long step's custom event: then A dies.
  const beforeKill = await within(10_000, "R sees the long step begin", r.until((l) => / ev first \d+ custom long /.test(l)))
  a.child.kill("SIGKILL")
  await within(20_000, "R's stream ends with the execution", r.until((l) => l.startsWith(`${kind}-r end first `)))
  const seen = r.lines.filter((l) => l.includes(" ev first ")).map(ev)
  const steps = ["one", "two", "long", "done"]
  assert.deepStrictEqual(seen.filter((e) => e.mode === "updates").map((e) => e.what), steps, "each step's update once, in order")
  assert.deepStrictEqual(seen.filter((e) => e.mode === "custom").map((e) => e.what), steps, "each step's custom event once (the long step's too, run twice)")
  assert.deepStrictEqual(seen.filter((e) => e.mode === "values").map((e) => e.what), ["-", "one", "one>two", "one>two>long", "one>two>long>done"], "each state once")
  // The tree is taken over by B or R (the reader's process is an instance too): whichever did ends it.
  const taker = seen.find((e) => e.mode === "status" && e.instanceId !== `${kind}-a`)?.instanceId ?? "none"
  assert.include([`${kind}-b`, `${kind}-r`], taker)
  assert.deepStrictEqual(seen.filter((e) => e.mode === "status").map((e) => `${e.what}@${e.instanceId}`), [`Running@${kind}-a`, `Running@${taker}`, `Finished@${taker}`])
  const ids = seen.map((e) => e.id)
  assert.deepStrictEqual(ids, [...new Set(ids)].sort((x, y) => x - y), "ids grow, none twice")
  assert.strictEqual(seen.find((e) => e.mode === "updates" && e.what === "long")?.instanceId, taker, "the long step's update is the taker's")
  assert.strictEqual(seen.find((e) => e.mode === "updates" && e.what === "one")?.instanceId, `${kind}-a`, "the first step's is A's")
  // A reader resuming where R was when A died gets exactly the rest.
  const cut = ev(beforeKill).id
  r.send(`follow ${thread} ${cut} again`)
  await within(10_000, "the resumed stream ends", r.until((l) => l.startsWith(`${kind}-r end again `)))
  const again = r.lines.filter((l) => l.includes(" ev again ")).map(ev)
  assert.deepStrictEqual(again.map((e) => e.id), ids.filter((id) => id > cut), "after the last id seen: no repeat, no gap")
  b.child.kill("SIGKILL")
  r.child.kill("SIGKILL")
  await Promise.all([b.exited, r.exited])
}

describe("live output between real processes, holder SIGKILLed mid-stream", () => {
  it("Postgres: the reader gets every step event once, in order, across the takeover", async () => {
    await scenario("pg", pgSchema())
  }, 90_000)

  it("SQLite: the reader gets every step event once, in order, across the takeover", async () => {
    await scenario("sqlite", join(dir, "stream.sqlite"))
  }, 90_000)
})
