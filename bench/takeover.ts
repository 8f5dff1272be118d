/**
 * `npm run bench:takeover` — crash takeover between real processes on the
 * default 30 s lease, over SQLite (one file) and Postgres (one schema),
 * rounds alternating between the two:
 *
 * - SIGKILL → first step: process A runs a tree into a minute-long step and
 *   is SIGKILLed; the time from the kill to another process's first step of
 *   the tree (goal: p50 < 300 ms, p99 < 1 s);
 * - 100 held trees: A runs 100 trees into that step and is SIGKILLed; the
 *   time from the kill to the last of them starting elsewhere (goal < 2 s).
 *
 * Two processes per store (`test/e2e/takeoverWorker.ts`); a killed one is
 * replaced by a new process once the trial is measured (ready before the next one). Times are
 * wall-clock across processes on one machine. The last line is
 * `ratio: <worst p99 of the two>/<lease>` (goal ≤ 0.034).
 *
 * Usage: npm run bench:takeover [-- --trials N] [-- --many-trials M]   (defaults 20 and 3;
 *        Postgres: BATON_TEST_PG_URL or the local test database)
 */
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { withAdmin } from "../test/pg/admin.ts"
import { killAll, type Proc, sleep, start } from "../test/e2e/processes.ts"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const trials = arg("--trials", 20)
const manyTrials = arg("--many-trials", 3)
const lease = 30_000
const worker = fileURLToPath(new URL("../test/e2e/takeoverWorker.ts", import.meta.url))
const now = () => performance.timeOrigin + performance.now()


type Kind = "sqlite" | "pg"

interface Pair {
  readonly kind: Kind
  readonly target: string
  readonly procs: Array<Proc>
  spawned: number
  readonly killed: Array<number>
  readonly many: Array<number>
}

const isReady = (l: string) => / ready /.test(l)

const spawnInto = (pair: Pair): Proc => {
  const id = `${pair.kind}-${++pair.spawned}`
  const p = start(worker, [pair.kind, pair.target, id], id)
  pair.procs.push(p)
  return p
}

const startsLong = (thread: string) => (l: string) => l.includes(` run long ${thread} `)
const at = (l: string) => Number(l.split(" ").at(-1))

let threads = 0

/** Kills the first process once it holds `count` trees mid-step; answers each tree's first step elsewhere, from the kill. */
const killHolding = async (pair: Pair, count: number) => {
  const a = pair.procs[0]!
  const prefix = `${pair.kind}-k${++threads}`
  const names = count === 1 ? [prefix] : Array.from({ length: count }, (_, i) => `${prefix}-${i}`)
  a.send(count === 1 ? `execute ${prefix}` : `many ${count} ${prefix}`)
  await Promise.all(names.map((t) => a.until(startsLong(t))))
  a.child.kill("SIGKILL")
  const killedAt = now()
  pair.procs.shift()
  const others = [...pair.procs]
  const firsts = await Promise.all(names.map((t) => Promise.race(others.map((p) => p.until(startsLong(t)).then(at)))))
  // Replaced once measured: a process starting up would share the two cores with the one taking over.
  await spawnInto(pair).until(isReady)
  await a.exited
  return firsts.map((t) => t - killedAt)
}

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const sorted = [...xs].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "baton-bench-takeover-"))
  const schema = `baton_bench_takeover_${process.pid}`
  const pairs: Array<Pair> = [
    { kind: "sqlite", target: join(dir, "takeover.sqlite"), procs: [], spawned: 0, killed: [], many: [] },
    { kind: "pg", target: schema, procs: [], spawned: 0, killed: [], many: [] }
  ]
  try {
    for (const pair of pairs) {
      // One process first (it migrates), then the other.
      await spawnInto(pair).until(isReady)
      await spawnInto(pair).until(isReady)
      console.log(`${pair.kind}: ${pair.procs[0]!.lines.find(isReady)!.split(" ").slice(2).join(" ")}`)
    }
    await sleep(500)
    for (let round = 0; round < trials; round++) {
      for (const pair of round % 2 === 0 ? pairs : [...pairs].reverse()) pair.killed.push(...(await killHolding(pair, 1)))
    }
    for (let round = 0; round < manyTrials; round++) {
      for (const pair of round % 2 === 0 ? pairs : [...pairs].reverse()) pair.many.push(Math.max(...(await killHolding(pair, 100))))
    }
    console.log(`crash takeover between real processes, lease ${lease} ms (the default), ${trials} trials each, rounds alternating`)
    console.log(`machine: ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(1)).join(" ")} (the figures are wall-clock: a loaded machine stretches them)`)
    for (const pair of pairs) {
      console.log(
        `${`${pair.kind} SIGKILL → first step`.padEnd(30)} p50 ${percentile(pair.killed, 50).toFixed(1).padStart(7)} ms   p99 ${
          percentile(pair.killed, 99).toFixed(1).padStart(7)
        } ms   max ${Math.max(...pair.killed).toFixed(1).padStart(7)} ms   (n=${pair.killed.length}; goal p50 < 300, p99 < 1000)`
      )
    }
    for (const pair of pairs) {
      console.log(`${`${pair.kind} 100 held trees → all moved`.padEnd(30)} ${pair.many.map((x) => `${x.toFixed(0)} ms`).join(", ")}   (goal < 2000 ms)`)
    }
    const worst = Math.max(...pairs.map((p) => percentile(p.killed, 99)))
    console.log(`ratio: ${(worst / lease).toFixed(4)}   (worst p99 ${worst.toFixed(1)} ms / lease ${lease} ms; goal ≤ 0.034)`)
  } finally {
    killAll()
    rmSync(dir, { recursive: true, force: true })
    await withAdmin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    killAll()
    process.exit(1)
  }
)
