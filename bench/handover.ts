/**
 * `npm run bench:handover` — how fast a tree moves between real processes,
 * over SQLite (one file) and Postgres (one schema), rounds alternating
 * between the two:
 *
 * - graceful: process A runs a tree into a long step and closes (`close`
 *   returns); the time from then to another process's first step of the tree
 *   (goal < 100 ms on both);
 * - SIGKILL: A is killed in the long step; the time from the kill to another
 *   process's first step of the tree (goal ≤ lease + 1 s).
 *
 * Two processes per store, lease 2 s, sweep every 5 s (the defaults'
 * shape). After a graceful close A opens a new instance in the same process
 * (once the tree moved); a killed A is replaced by a new process. Times are
 * wall-clock across processes on one machine.
 *
 * Usage: npm run bench:handover [-- --trials N]   (default 20; Postgres: BATON_TEST_PG_URL or the local test database)
 */
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { withAdmin } from "../test/pg/admin.ts"
import { killAll, type Proc, sleep, start } from "../test/e2e/processes.ts"

const trialsArg = process.argv.indexOf("--trials")
const trials = trialsArg === -1 ? 20 : Number(process.argv[trialsArg + 1])
const lease = 2000
const sweep = 5000
const worker = fileURLToPath(new URL("../test/e2e/handoverWorker.ts", import.meta.url))
const now = () => performance.timeOrigin + performance.now()


type Kind = "sqlite" | "pg"

/** One store's pair of processes; `spawned` counts processes for their ids. */
interface Pair {
  readonly kind: Kind
  readonly target: string
  readonly procs: Array<Proc>
  spawned: number
  readonly graceful: Array<number>
  readonly killed: Array<number>
  /** Of each graceful handover: close returned → the other process heard the release, → its first step. */
  readonly heard: Array<number>
  readonly moved: Array<number>
  /** SQL statements B ran from hearing of the release to its first step. */
  readonly statements: Array<number>
}

const spawnInto = (pair: Pair): Proc => {
  const id = `${pair.kind}-${++pair.spawned}`
  const p = start(worker, [pair.kind, pair.target, id, String(lease), String(sweep)], id)
  pair.procs.push(p)
  return p
}

const isReady = (l: string) => l.endsWith(" ready")

/** The wall-clock time of the first step of `thread` on a process other than `not`. */
const firstStepElsewhere = (pair: Pair, not: Proc, thread: string) =>
  Promise.race(
    pair.procs.filter((p) => p !== not).map((p) => p.until((l) => l.includes(` step long ${thread} `)).then((l) => Number(l.split(" ").at(-1))))
  )

let threads = 0
const runInto = async (pair: Pair, a: Proc) => {
  const thread = `${pair.kind}-h${++threads}`
  a.send(`execute ${thread}`)
  const line = await a.until((l) => l.includes(` step long ${thread} `))
  return { thread, root: line.split(" ").at(-2)! }
}

const gracefulTrial = async (pair: Pair) => {
  const a = pair.procs[0]!
  const { root, thread } = await runInto(pair, a)
  const closed = a.next((l) => l.includes(" closed "))
  // B hears of the tree's release (not of another lease A gives up as it closes).
  const woken = Promise.race(
    pair.procs.filter((p) => p !== a).map((p) => p.next((l) => l.includes(` woken ${root} `)).then((l) => Number(l.split(" ").at(-1))))
  )
  a.send("close 300")
  const closedLine = await closed
  const closedAt = Number(closedLine.split(" ").at(-1))
  const path = Promise.race(
    pair.procs.filter((p) => p !== a).map((p) => p.until((l) => l.includes(` path ${root} `)).then((l) => Number(l.split(" ").at(-1))))
  )
  const taken = await firstStepElsewhere(pair, a, thread)
  const heardAt = await woken
  pair.statements.push(await path)
  pair.graceful.push(taken - closedAt)
  pair.heard.push(heardAt - closedAt)
  pair.moved.push(taken - heardAt)
  // A opens a new instance and goes to the back: the next trial starts on the other process.
  const reopened = a.next(isReady)
  a.send("reopen")
  await reopened
  pair.procs.push(pair.procs.shift()!)
}

const killTrial = async (pair: Pair) => {
  const a = pair.procs[0]!
  const { thread } = await runInto(pair, a)
  a.child.kill("SIGKILL")
  const killedAt = now()
  pair.procs.shift()
  const replacement = spawnInto(pair)
  const taken = await firstStepElsewhere(pair, a, thread)
  pair.killed.push(taken - killedAt)
  await replacement.until(isReady)
  await a.exited
}

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const sorted = [...xs].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}
const line = (label: string, xs: ReadonlyArray<number>, goal: string) =>
  console.log(`${label.padEnd(28)} p50 ${percentile(xs, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(xs, 99).toFixed(1).padStart(7)} ms   (n=${xs.length}; goal ${goal})`)

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "baton-bench-handover-"))
  const schema = `baton_bench_handover_${process.pid}`
  const pairs: Array<Pair> = [
    { kind: "sqlite", target: join(dir, "handover.sqlite"), procs: [], spawned: 0, graceful: [], killed: [], heard: [], moved: [], statements: [] },
    { kind: "pg", target: schema, procs: [], spawned: 0, graceful: [], killed: [], heard: [], moved: [], statements: [] }
  ]
  try {
    for (const pair of pairs) {
      // One process first (it migrates), then the other.
      await spawnInto(pair).until(isReady)
      await spawnInto(pair).until(isReady)
    }
    await sleep(500)
    for (let round = 0; round < trials; round++) {
      for (const pair of round % 2 === 0 ? pairs : [...pairs].reverse()) await gracefulTrial(pair)
    }
    for (let round = 0; round < trials; round++) {
      for (const pair of round % 2 === 0 ? pairs : [...pairs].reverse()) await killTrial(pair)
    }
    console.log(`handover between real processes, lease ${lease} ms, sweep ${sweep} ms, ${trials} trials each, rounds alternating`)
    console.log(`machine: ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(1)).join(" ")} (the figures are wall-clock: a loaded machine stretches them)`)
    for (const pair of pairs) line(`${pair.kind} graceful close → step`, pair.graceful, "< 100 ms")
    for (const pair of pairs) line(`${pair.kind} SIGKILL → step`, pair.killed, `≤ ${lease + 1000} ms`)
    console.log("where a graceful handover's time goes (close returned on A → B heard the release → B's first step):")
    for (const pair of pairs) {
      line(`  ${pair.kind} close → B heard`, pair.heard, "the release reaching B")
      line(`  ${pair.kind} B heard → step`, pair.moved, "B's look, lease, pass start")
      console.log(`  ${pair.kind} B's SQL statements from hearing to its step: p50 ${percentile(pair.statements, 50)}, max ${Math.max(...pair.statements)}`)
    }
    const [sqlite, pg] = pairs
    console.log(`ratio: ${(percentile(sqlite!.graceful, 50) / percentile(pg!.graceful, 50)).toFixed(2)}   (sqlite graceful p50 / pg graceful p50)`)
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
