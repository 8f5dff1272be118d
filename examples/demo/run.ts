/**
 * `npm run demo`: three instances of an app as separate processes over one
 * SQLite file (`npm run demo -- --pg` over Postgres), each serving BatonHttp
 * on its own port. The demo submits orders, answers their pauses through
 * another instance's HTTP API, kills one instance with SIGKILL mid-way, and
 * shows — a live progress line per instance from its `/metrics` — the others
 * taking its trees over. It ends with a summary (finished, recovered,
 * recoveries started, takeover time) and stops the survivors with SIGTERM (graceful close).
 *
 * Every instance serves the dashboard too: the demo prints its URL, and it
 * stays up while the demo runs — with `--keep`, after the summary as well,
 * until Ctrl-C (SIGINT or SIGTERM), which stops the instances gracefully.
 *
 * Options: `--orders N` (default 24), `--pg [URL]` (default the local
 * Postgres, a schema of its own, dropped at the end), `--keep`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const args = process.argv.slice(2)
const flag = (name: string) => args.indexOf(`--${name}`)
const orders = Number(flag("orders") >= 0 ? args[flag("orders") + 1] : 24)
const usePg = flag("pg") >= 0
const keep = flag("keep") >= 0
const pgUrl = usePg && args[flag("pg") + 1]?.startsWith("postgres") ? args[flag("pg") + 1]! : "postgres://postgres@127.0.0.1:5432/test"
const deadline = Date.now() + 55_000
const started = Date.now()
const elapsed = () => ((Date.now() - started) / 1000).toFixed(1)
const tty = process.stdout.isTTY === true

const dir = mkdtempSync(join(tmpdir(), "baton-demo-"))
const schema = `baton_demo_${process.pid}_${Date.now().toString(36)}`
const storeArgs = usePg ? ["--pg", pgUrl, "--schema", schema] : ["--sqlite", join(dir, "demo.sqlite")]

interface Instance {
  readonly name: string
  readonly child: ChildProcess
  port: number
  alive: boolean
  stats: { held: number; steps: number; recoveries: number; finished: number }
}

const say = (line: string) => {
  if (tty) process.stdout.write("\r\x1b[2K")
  console.log(line)
}

const startInstance = (name: string): Promise<Instance> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, join(import.meta.dirname, "worker.ts"), ...storeArgs, "--instance", name, "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    const instance: Instance = { name, child, port: 0, alive: true, stats: { held: 0, steps: 0, recoveries: 0, finished: 0 } }
    let buffer = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString()
      const m = /ready (\S+) (\d+)/.exec(buffer)
      if (m !== null && instance.port === 0) {
        instance.port = Number(m[2])
        resolve(instance)
      }
    })
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("exit", (code) => {
      instance.alive = false
      if (instance.port === 0) reject(new Error(`${name} exited (${code}) before it served: ${stderr}`))
    })
  })

/** One HTTP call to an instance, as tenant "demo". */
const call = async (instance: Instance, method: string, path: string, body?: unknown) => {
  const response = await fetch(`http://127.0.0.1:${instance.port}${path}`, {
    method,
    headers: { "content-type": "application/json", "x-tenant": "demo" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text.length > 0 ? JSON.parse(text) : undefined }
}

/** The numbers of one instance's /metrics. */
const readMetrics = async (instance: Instance) => {
  const text = await (await fetch(`http://127.0.0.1:${instance.port}/metrics`)).text()
  const sum = (name: string) =>
    text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).reduce((n, l) => n + Number(l.split(" ").pop()), 0)
  instance.stats = {
    held: sum("baton_trees_held"),
    steps: sum("baton_steps_running"),
    recoveries: text.split("\n").filter((l) => l.startsWith("baton_recoveries_started_total{") && l.includes(`reason="Recovered"`))
      .reduce((n, l) => n + Number(l.split(" ").pop()), 0),
    finished: sum("baton_executions_ended_total")
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const main = async () => {
  say(`baton demo: 3 instances over ${usePg ? `Postgres (schema ${schema})` : join(dir, "demo.sqlite")}, ${orders} orders`)
  const instances = await Promise.all(["instance-a", "instance-b", "instance-c"].map(startInstance))
  for (const i of instances) say(`  ${i.name} serves http://127.0.0.1:${i.port}`)
  say(`dashboard: http://127.0.0.1:${instances[0]!.port}/dashboard (tenant demo; every instance serves it on its port; up while the demo runs${keep ? ", and after it until Ctrl-C" : "; --keep keeps it up after"})`)
  const live = () => instances.filter((i) => i.alive)
  const other = (i: number) => live()[(i + 1) % live().length]!

  // Submit every order, round-robin over the instances.
  const threads: Array<string> = []
  await Promise.all(Array.from({ length: orders }, async (_, n) => {
    const to = instances[n % instances.length]!
    const r = await call(to, "POST", "/executions", { workflow: "order", input: { item: `order-${n}`, reserveMillis: 1000 + (n % 5) * 300 } })
    if (r.status !== 202) throw new Error(`start failed: ${r.status} ${JSON.stringify(r.body)}`)
    threads.push(r.body.threadId)
  }))
  say(`${elapsed()}s submitted ${orders} orders`)

  const answered = new Set<string>()
  let finished = 0
  let killedAt: number | undefined
  let firstRecoveryAt: number | undefined
  let recoveredBefore = 0
  let victim: Instance | undefined

  let lastLine = 0
  const progress = async () => {
    await Promise.all(live().map((i) => readMetrics(i).catch(() => {})))
    const parts = instances.map((i) =>
      i.alive ? `${i.name}: held ${i.stats.held} steps ${i.stats.steps} recovered ${i.stats.recoveries}` : `${i.name}: KILLED`
    )
    const line = `${elapsed().padStart(5)}s | ${parts.join(" | ")} | finished ${finished}/${orders}`
    if (tty) process.stdout.write(`\r\x1b[2K${line}`)
    else if (Date.now() - lastLine >= 1000) {
      lastLine = Date.now()
      console.log(line)
    }
  }

  while (Date.now() < deadline) {
    await progress()
    const asker = live()[0]!
    // Answer pending pauses through another instance than the one that lists them.
    const pending = await call(asker, "GET", "/executions?status=Paused&limit=100")
    for (const [n, e] of (pending.body?.executions ?? []).entries()) {
      const pauses = await call(asker, "GET", `/threads/${e.threadId}/pauses`)
      for (const p of pauses.body?.pauses ?? []) {
        if (answered.has(p.pauseId)) continue
        answered.add(p.pauseId)
        const answerer = other(n)
        // The resume runs the rest of the tree on the answering instance: not awaited here. If the
        // answering instance died before it recorded the decision, the pause is answered again later.
        void call(answerer, "POST", `/pauses/${p.pauseId}/resume`, { decision: "approve" }).then(
          (r) => {
            if (r.status >= 500 && r.status !== 503) answered.delete(p.pauseId)
          },
          () => answered.delete(p.pauseId)
        )
      }
    }
    const done = await call(asker, "GET", `/executions?status=Finished&limit=${orders}`)
    finished = done.body?.executions?.length ?? finished
    // Kill the instance holding the most trees (running their first step), at once.
    if (victim === undefined && Math.max(...instances.map((i) => i.stats.held)) > 0) {
      victim = [...instances].sort((a, b) => b.stats.held - a.stats.held)[0]!
      recoveredBefore = live().filter((i) => i !== victim).reduce((n, i) => n + i.stats.recoveries, 0)
      say(`${elapsed()}s SIGKILL ${victim.name} (pid ${victim.child.pid}) while it holds ${victim.stats.held} trees`)
      victim.child.kill("SIGKILL")
      victim.alive = false
      killedAt = Date.now()
    }
    if (killedAt !== undefined && firstRecoveryAt === undefined) {
      const recovered = live().reduce((n, i) => n + i.stats.recoveries, 0)
      if (recovered > recoveredBefore) {
        firstRecoveryAt = Date.now()
        say(`${elapsed()}s the survivors took the killed instance's trees over (${((firstRecoveryAt - killedAt) / 1000).toFixed(1)} s after the kill)`)
      }
    }
    if (finished >= orders) break
    await sleep(300)
  }
  await progress()
  const recovered = live().reduce((n, i) => n + i.stats.recoveries, 0)
  if (tty) process.stdout.write("\n")
  const summary = {
    orders,
    finished,
    recoveriesStarted: recovered,
    killed: victim?.name ?? null,
    takeoverSeconds: killedAt !== undefined && firstRecoveryAt !== undefined ? Number(((firstRecoveryAt - killedAt) / 1000).toFixed(1)) : null,
    seconds: Number(elapsed())
  }
  say(`summary: ${JSON.stringify(summary)}`)
  const alive = live()
  if (keep && alive.length > 0) {
    say(`dashboard still up: http://127.0.0.1:${alive[0]!.port}/dashboard — Ctrl-C stops it`)
    await new Promise<void>((resolve) => {
      process.once("SIGINT", () => resolve())
      process.once("SIGTERM", () => resolve())
    })
  }
  // The survivors stop gracefully (SIGTERM: BatonProcess.runMain closes them).
  await Promise.all(live().map((i) => new Promise<void>((resolve) => {
    i.child.once("exit", () => resolve())
    i.child.kill("SIGTERM")
  })))
  return summary.finished === orders ? 0 : 1
}

const cleanup = async () => {
  rmSync(dir, { recursive: true, force: true })
  if (usePg) {
    const { PgClient } = await import("@effect/sql-pg")
    const { Effect, Redacted } = await import("effect")
    const { Reactivity } = await import("effect/reactivity")
    await Effect.runPromise(
      Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(pgUrl), maxConnections: 1 }), (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)).pipe(
        Effect.provide(Reactivity.layer)
      )
    ).catch(() => {})
  }
}

main().then(
  async (code) => {
    await cleanup()
    process.exit(code)
  },
  async (error) => {
    console.error(error)
    await cleanup()
    process.exit(1)
  }
)
