/**
 * `npm run bench:stream` — live-output latency on Postgres between real
 * processes: process B runs a 20-step chain (5 ms a step); a reader in
 * process A follows the thread's stream (`Baton.stream`). Latency is the
 * wall-clock time from a step's body returning on B to A reading that
 * step's `updates` event (same machine, one clock).
 *
 * Two deployments, rounds alternating: NOTIFY wake-ups (the default
 * `PgStores.layer`) and polling only (`wakeups: false`: the reader looks
 * every 200 ms). The goal is p50 < 50 ms with NOTIFY; the last line,
 * `ratio: <NOTIFY p50>/50 ms`, is that p50 against the goal (below 1 meets
 * it); the line before compares NOTIFY with polling only.
 *
 * Usage: npm run bench:stream [-- --rounds N]   (default 10; BATON_TEST_PG_URL or the local test database)
 */
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import { withAdmin } from "../test/pg/admin.ts"
import { killAll, type Proc, sleep, start, within } from "../test/e2e/processes.ts"

const roundsArg = process.argv.indexOf("--rounds")
const rounds = roundsArg === -1 ? 10 : Number(process.argv[roundsArg + 1])
const steps = 20
const worker = fileURLToPath(new URL("./streamWorker.ts", import.meta.url))

type Mode = "notify" | "poll"
interface Deployment {
  readonly mode: Mode
  readonly schema: string
  readonly runner: Proc
  readonly reader: Proc
  readonly latencies: Array<number>
}

const isReady = (l: string) => l.endsWith(" ready")
const at = (l: string) => Number(l.split(" ").at(-1))

const deploy = async (mode: Mode): Promise<Deployment> => {
  const schema = `baton_bench_stream_${mode}_${process.pid}`
  const runner = start(worker, [schema, `${mode}-b`, mode], `${mode}-b`)
  await within(30_000, "runner ready", runner.until(isReady))
  const reader = start(worker, [schema, `${mode}-a`, mode], `${mode}-a`)
  await within(30_000, "reader ready", reader.until(isReady))
  return { mode, schema, runner, reader, latencies: [] }
}

const trial = async (d: Deployment, round: number) => {
  const thread = `${d.mode}-t${round}`
  d.runner.send(`run ${thread} ${steps}`)
  // The reader follows once the thread exists (its first step ended).
  await within(20_000, "first step", d.runner.until((l) => l.includes(` stepend ${thread} s0 `)))
  d.reader.send(`follow ${thread}`)
  await within(30_000, "stream end", d.reader.until((l) => l.includes(` end ${thread} `)))
  for (let i = 1; i < steps; i++) {
    const ended = d.runner.lines.find((l) => l.includes(` stepend ${thread} s${i} `))
    const read = d.reader.lines.find((l) => l.includes(` ev ${thread} s${i} `))
    if (ended === undefined || read === undefined) throw new Error(`step s${i} of ${thread}: no end or no event`)
    d.latencies.push(at(read) - at(ended))
  }
}

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const sorted = [...xs].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const main = async () => {
  const deployments: Array<Deployment> = []
  try {
    deployments.push(await deploy("notify"), await deploy("poll"))
    await sleep(500)
    for (let round = 0; round < rounds; round++) {
      for (const d of round % 2 === 0 ? deployments : [...deployments].reverse()) await trial(d, round)
    }
    console.log(`live-output latency on Postgres, step end on B → its update read on A: ${rounds} rounds × ${steps - 1} steps each, rounds alternating`)
    console.log(`machine: ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(1)).join(" ")} (wall-clock figures: a loaded machine stretches them)`)
    for (const d of deployments) {
      console.log(`${(d.mode === "notify" ? "NOTIFY wake-ups" : "polling only (200 ms)").padEnd(24)} p50 ${percentile(d.latencies, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(d.latencies, 99).toFixed(1).padStart(7)} ms   (n=${d.latencies.length})`)
    }
    const [notify, poll] = deployments
    const p50 = percentile(notify!.latencies, 50)
    console.log(`NOTIFY p50 / polling p50: ${(p50 / percentile(poll!.latencies, 50)).toFixed(2)}`)
    console.log(`ratio: ${(p50 / 50).toFixed(2)}   (NOTIFY p50 / the 50 ms goal: below 1 meets it)`)
  } finally {
    killAll()
    for (const d of deployments) await withAdmin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(d.schema)} CASCADE`)
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
