/**
 * `npm run demo` end to end: three real worker processes over one SQLite
 * file, one SIGKILLed, the others take its trees over. This test uses real
 * time — it is about real processes and the demo's own clock — and checks
 * only the demo's summary, never how long anything took.
 */
import { describe, expect, it } from "vitest"
import { execFile } from "node:child_process"
import * as Path from "node:path"

// The examples import "baton"; inside the repository tools/source/register.ts resolves it to the sources.
const run = Path.join(import.meta.dirname, "../../examples/demo/run.ts")
const register = Path.join(import.meta.dirname, "../../tools/source/register.ts")

describe("npm run demo (over SQLite)", () => {
  it("finishes every order, recovers the killed instance's trees, prints its summary and exits 0", async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ["--import", register, run], { timeout: 90_000 }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }))
    })
    const line = stdout.split("\n").find((l) => l.startsWith("summary: "))
    expect(line, `no summary in:\n${stdout}\n${stderr}`).toBeDefined()
    const summary = JSON.parse(line!.slice("summary: ".length))
    expect(summary.orders).toBe(24)
    expect(summary.finished).toBe(24)
    expect(summary.killed).toMatch(/^instance-[abc]$/)
    expect(summary.recoveriesStarted).toBeGreaterThan(0)
    expect(summary.takeoverSeconds).not.toBeNull()
    expect(stdout).toMatch(/SIGKILL instance-[abc] \(pid \d+\) while it holds \d+ trees/)
    expect(stdout).toMatch(/\| instance-[abc]: KILLED \|/)
    expect(stdout).toMatch(/^dashboard: http:\/\/127\.0\.0\.1:\d+\/dashboard /m)
    expect(code, stderr).toBe(0)
  }, 100_000)

  it("with --keep, prints the dashboard's URL and keeps it up after the summary until SIGINT", async () => {
    const { spawn } = await import("node:child_process")
    const child = spawn(process.execPath, ["--import", register, run, "--orders", "6", "--keep"], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    const up = await new Promise<string>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => {
        stdout += chunk.toString()
        const m = /dashboard still up: (http:\/\/127\.0\.0\.1:\d+\/dashboard)/.exec(stdout)
        if (m !== null) resolve(m[1]!)
      })
      child.on("exit", (code) => reject(new Error(`the demo exited (${code}) before keeping the dashboard up:\n${stdout}`)))
    })
    const page = await fetch(up)
    expect(page.status).toBe(200)
    expect(await page.text()).toMatch(/<title>baton dashboard<\/title>/)
    const listing = await fetch(up.replace(/\/dashboard$/, "/dashboard/api/executions?status=Finished&limit=50"))
    expect(((await listing.json()) as { executions: Array<unknown> }).executions).toHaveLength(6)
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    child.kill("SIGINT")
    expect(await exited).toBe(0)
  }, 100_000)
})
