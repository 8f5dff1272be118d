/**
 * `BatonProcess.runMain` in a real process (the demo's worker): SIGTERM while
 * a step runs closes the instance with its grace, the process exits 0, and
 * the tree's lease is released at once (the tree stays Running for another
 * instance) instead of being left to expire. Real time: it is about a real
 * process and its signals; nothing here asserts a duration.
 */
import { describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import { Effect, Option } from "effect"
import * as Path from "node:path"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { tempDb } from "../sqlite/tmp.ts"

const worker = Path.join(import.meta.dirname, "../../examples/demo/worker.ts")
// The examples import "baton"; inside the repository tools/source/register.ts resolves it to the sources.
const register = Path.join(import.meta.dirname, "../../tools/source/register.ts")

describe("BatonProcess.runMain", () => {
  it("SIGTERM mid-step: a graceful close hands the tree over (lease released, record Running), exit 0", async () => {
    const path = tempDb("runmain")
    const child = spawn(process.execPath, ["--import", register, worker, "--sqlite", path, "--instance", "w-term", "--port", "0", "--grace-ms", "1000"], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stderr!.on("data", (c: Buffer) => (err += c.toString()))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    const port = await new Promise<number>((resolve) =>
      child.stdout!.on("data", (c: Buffer) => {
        out += c.toString()
        const m = /ready \S+ (\d+)/.exec(out)
        if (m !== null) resolve(Number(m[1]))
      }))
    const call = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(`http://127.0.0.1:${port}${p}`, {
        method,
        headers: { "content-type": "application/json", "x-tenant": "demo" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      return { status: r.status, body: await r.text() }
    }
    const started = await call("POST", "/executions", { workflow: "order", input: { item: "slow", reserveMillis: 600_000 } })
    expect(started.status).toBe(202)
    const id = JSON.parse(started.body).executionId as string
    // Wait (by asking, not by sleeping) until the reserve step runs.
    while (!/baton_steps_running\{instance="w-term"\} 1/.test((await call("GET", "/metrics")).body)) {
      await new Promise((r) => setImmediate(r))
    }
    child.kill("SIGTERM")
    expect(await exited, err).toBe(0)
    expect(out + err).toContain("SIGTERM: closing instance w-term")
    const [lease, record] = await Effect.runPromise(
      Effect.gen(function*() {
        const lease = yield* (yield* LeaseStore).get("demo", id)
        const record = yield* (yield* RecordStore).getRecord("demo", id)
        return [lease, record] as const
      }).pipe(Effect.provide(SqliteStores.layer({ path })))
    )
    expect(Option.isNone(lease), "the lease was released by the close, not left to expire").toBe(true)
    expect(Option.getOrUndefined(record)?.status).toBe("Running")
  }, 60_000)
})
