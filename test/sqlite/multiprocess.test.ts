/**
 * Two real processes on one SQLite file, as two app instances on one machine:
 * they migrate a new file at once, race for the same leases (exactly one wins
 * each), and a holder whose lease passed to the other process has its fenced
 * checkpoint write refused, across processes. Time values are parameters.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import * as Readline from "node:readline"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "vitest"
import { tempDir } from "./tmp.ts"

const script = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "fixtures", "instance.ts")

/** A child process speaking the instance fixture's line protocol. */
class Instance {
  readonly child: ChildProcess
  readonly pending: Array<(answer: any) => void> = []
  stderr = ""

  constructor(path: string) {
    this.child = spawn(process.execPath, [script, path], { stdio: ["pipe", "pipe", "pipe"] })
    Readline.createInterface({ input: this.child.stdout! }).on("line", (line) => this.pending.shift()?.(JSON.parse(line)))
    this.child.stderr!.on("data", (d) => (this.stderr += String(d)))
  }

  send(command: Record<string, unknown>): Promise<any> {
    return new Promise((resolve) => {
      this.pending.push(resolve)
      this.child.stdin!.write(JSON.stringify(command) + "\n")
    })
  }

  close(): Promise<number | null> {
    return new Promise((resolve) => {
      this.child.once("exit", (code) => resolve(code))
      this.child.stdin!.end()
    })
  }
}

const dir = tempDir("multiprocess")
const ttl = 30_000
const tenant = "tenant-mp"

describe("two processes on one SQLite file", () => {
  const path = Path.join(dir, "shared.db")
  const a = new Instance(path)
  const b = new Instance(path)
  afterAll(async () => {
    await Promise.all([a.close(), b.close()])
  })

  it("both open (and migrate) a new file at the same time", async () => {
    const [ra, rb] = await Promise.all([a.send({ op: "open" }), b.send({ op: "open" })])
    assert.deepStrictEqual([ra, rb], [{ ok: true }, { ok: true }], `stderr: ${a.stderr}${b.stderr}`)
  })

  it("race for 20 free leases: exactly one process wins each, with epoch 1", async () => {
    for (let i = 0; i < 20; i++) {
      const root = `race-${i}`
      const [ra, rb] = await Promise.all([
        a.send({ op: "acquire", tenant, root, holder: "process-a", ttl, now: 1_000 }),
        b.send({ op: "acquire", tenant, root, holder: "process-b", ttl, now: 1_000 })
      ])
      const winners = [ra.lease, rb.lease].filter((l) => l !== null)
      assert.strictEqual(winners.length, 1, `round ${i}: ${JSON.stringify([ra, rb])}`)
      assert.strictEqual(winners[0].epoch, 1)
    }
  })

  it("a fenced write under a lease that passed to the other process is refused and writes nothing", async () => {
    const root = "fenced"
    const first = (await a.send({ op: "acquire", tenant, root, holder: "process-a", ttl, now: 0 })).lease
    assert.isNotNull(first)
    assert.deepStrictEqual(await a.send({ op: "put", lease: first, ttl, now: 10, value: "a1", version: 1 }), { ok: true })
    // Process a is frozen past its lease; process b takes the tree over (epoch + 1).
    const taken = (await b.send({ op: "acquire", tenant, root, holder: "process-b", ttl, now: 10 + ttl + 1 })).lease
    assert.isNotNull(taken)
    assert.strictEqual(taken.epoch, first.epoch + 1)
    // a wakes up and writes with its stale lease — whatever its clock says.
    for (const now of [20, 10 + ttl + 2]) {
      const refused = await a.send({ op: "put", lease: first, ttl, now, value: "a-stale", version: 2 })
      assert.strictEqual(refused.error?._tag, "LeaseLostError", JSON.stringify(refused))
    }
    assert.deepStrictEqual(await b.send({ op: "latest", tenant, root }), { value: "a1" }, "the stale writes wrote nothing")
    assert.deepStrictEqual(await b.send({ op: "put", lease: taken, ttl, now: 10 + ttl + 3, value: "b1", version: 3 }), { ok: true })
    assert.deepStrictEqual(await a.send({ op: "latest", tenant, root }), { value: "b1" })
  })
})
