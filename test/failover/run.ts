/**
 * `npm run test:failover`: a primary fails under a real multi-process
 * workload and nothing is lost.
 *
 * A primary (127.0.0.1:5440) and a hot standby (5441) with synchronous
 * streaming replication (test/failover/cluster.ts); two instances as their
 * own processes (test/failover/worker.ts) on the multi-host URL
 * `postgres://…:5440,…:5441/baton?target_session_attrs=read-write`. Each
 * starts executions of a job with children (placement "any") and a pause;
 * every pause is answered on the other instance. Mid-run the primary is
 * stopped at once (`pg_ctl stop -m immediate`), and the standby promoted
 * (`pg_ctl promote`) a second later. Then:
 *
 * - every execution finishes (0 lost): all roots Finished, every step's effect
 *   in the ledger, children included;
 * - 0 duplicate effects per idempotency key (the ledger keeps a key once;
 *   every key is one step of one execution, so the count of keys is exact);
 * - no stale-epoch write accepted: no thread's checkpoints fork (two
 *   checkpoints with one parent would be a write of a holder that had lost
 *   the tree);
 * - during the outage the calls failed only with `StoreError` of kind
 *   `Connection`, retryable, or with `LeaseLostError` where the call's tree
 *   moved to the other instance (its lease expired meanwhile; it finished
 *   there); printed: the seconds in which calls failed, and
 *   the time from promotion to the first step.
 *
 * Real processes on real time: the waits are bounded. Exits 1 on a failed check.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import assert from "node:assert/strict"
import { fileURLToPath } from "node:url"
import { killAll, type Proc, start, within } from "../e2e/processes.ts"
import { makeCluster } from "./cluster.ts"

const worker = fileURLToPath(new URL("./worker.ts", import.meta.url))
const perInstance = Number(process.env.BATON_FAILOVER_EXECUTIONS ?? 6)
const wall = () => performance.timeOrigin + performance.now()
const at = (line: string) => Number(line.split(" ").at(-1))

const cluster = makeCluster()
const sql = <A>(port: number, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(`postgres://postgres@127.0.0.1:${port}/baton`), maxConnections: 1 }), f)).pipe(
      Effect.provide(Reactivity.layer)
    )
  )

const main = async () => {
  await sql(cluster.primaryPort, (s) =>
    Effect.andThen(
      s`CREATE TABLE fo_effects (key TEXT PRIMARY KEY, root TEXT NOT NULL, node TEXT NOT NULL, instance TEXT NOT NULL)`,
      s`CREATE TABLE fo_runs (key TEXT NOT NULL, attempt TEXT NOT NULL, PRIMARY KEY (key, attempt))`
    ))
  const a = start(worker, [cluster.url, "fo-a"], "fo-a")
  await within(60_000, "A ready", a.until((l) => l.startsWith("fo-a ready ")))
  const b = start(worker, [cluster.url, "fo-b"], "fo-b")
  await within(60_000, "B ready", b.until((l) => l.startsWith("fo-b ready ")))
  const procs: Array<Proc> = [a, b]

  // Every pending approval (not a parent's wait for its children, which no caller answers) is answered on the instance that did not start its execution, as soon as it is seen
  // (read from whichever server is the primary; nothing is read while neither is).
  const answered = new Set<string>()
  let primaryPort = cluster.primaryPort
  let answering = true
  const answer = async () => {
    while (answering) {
      const pending = await sql(primaryPort, (s) => s<{ pause_id: string; thread_id: string }>`SELECT pause_id, thread_id FROM baton_pauses WHERE status = 'Pending' AND payload LIKE '%ok?%'`)
        .catch(() => [])
      for (const p of pending) {
        if (answered.has(p.pause_id)) continue
        answered.add(p.pause_id)
        ;(p.thread_id.startsWith("fa-") ? b : a).send(`resume ${p.pause_id}`)
      }
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  const answers = answer()

  a.send(`start ${perInstance} fa`)
  b.send(`start ${perInstance} fb`)
  const total = 2 * perInstance
  // Mid-run: some executions answered and finishing, others at their children.
  await within(60_000, "a few pauses answered", new Promise<void>((resolve) => {
    const t = setInterval(() => answered.size >= Math.ceil(total / 3) && (clearInterval(t), resolve()), 20)
  }))
  const killedAt = wall()
  cluster.kill()
  await new Promise((r) => setTimeout(r, 1_000))
  cluster.promote()
  const promotedAt = wall()
  primaryPort = cluster.standbyPort

  // Done when the new primary has every execution Finished (a caller told LeaseLostError awaits it elsewhere).
  const finishedJobs = () =>
    sql(primaryPort, (s) => s<{ n: string }>`SELECT count(*)::text AS n FROM baton_records WHERE workflow_name = 'fo-job' AND status = 'Finished'`)
      .then((r) => Number(r[0]!.n), () => 0)
  await within(120_000, `all ${total} executions finished`, (async () => {
    while ((await finishedJobs()) < total) await new Promise((r) => setTimeout(r, 250))
  })())
  answering = false
  await answers

  // The checks, on the new primary.
  const [records, effects, runs, forks] = await sql(cluster.standbyPort, (s) =>
    Effect.all([
      s<{ workflow_name: string; status: string; n: string }>`SELECT workflow_name, status, count(*)::text AS n FROM baton_records GROUP BY 1, 2`,
      s<{ n: string }>`SELECT count(*)::text AS n FROM fo_effects`,
      s<{ n: string; keys: string }>`SELECT count(*)::text AS n, count(DISTINCT key)::text AS keys FROM fo_runs`,
      s<{ n: string }>`SELECT count(*)::text AS n FROM (SELECT 1 FROM baton_checkpoints WHERE parent_checkpoint_id IS NOT NULL
         GROUP BY tenant_id, thread_id, checkpoint_ns, parent_checkpoint_id HAVING count(*) > 1) f`
    ]))
  const count = (workflow: string, status: string) => Number(records.find((r) => r.workflow_name === workflow && r.status === status)?.n ?? 0)
  assert.deepEqual(records.filter((r) => r.status !== "Finished"), [], "every execution and child Finished")
  assert.equal(count("fo-job", "Finished"), total, "every execution finished: 0 lost")
  assert.equal(count("fo-child", "Finished"), 2 * total, "every child finished")
  // fetch and store per execution, work per child: each key applied once (the ledger keeps a key once).
  assert.equal(Number(effects[0]!.n), 2 * total + 2 * total, "every step's effect applied, once per idempotency key")
  assert.equal(Number(runs[0]!.keys), Number(effects[0]!.n), "no run of a step whose effect is missing")
  assert.equal(Number(forks[0]!.n), 0, "no thread's checkpoints fork: no stale-epoch write was accepted")

  // The failures callers saw: only retryable connection errors, within the outage.
  const failed = procs.flatMap((p) => p.lines.filter((l) => l.split(" ")[1] === "fail" || l.includes(" probe fail ")))
  assert.ok(failed.length > 0, "calls failed during the outage (the workload was mid-run)")
  // A StoreError is a retryable connection failure; a LeaseLostError says the tree moved to the other instance
  // (true: its lease expired during the outage), and that execution finished there.
  const moved = failed.filter((l) => / LeaseLostError /.test(l))
  for (const line of failed.filter((l) => !moved.includes(l))) assert.match(line, / StoreError Connection true /, `a truthful, retryable error: ${line}`)
  const gaveUp = procs.flatMap((p) => p.lines.filter((l) => l.includes(" gave-up ")))
  for (const line of gaveUp) assert.match(line, / LeaseLostError /, `only a call whose tree moved ends without its output: ${line}`)
  const connection = failed.filter((l) => !moved.includes(l))
  const times = connection.map(at).concat(procs.flatMap((p) => p.lines.filter((l) => l.includes(" probe ok ")).map(at)))
  const windowSeconds = (Math.max(...times) - Math.min(...connection.map(at))) / 1000
  const firstStep = Math.min(...procs.flatMap((p) => p.lines.filter((l) => l.split(" ")[1] === "step" && at(l) > promotedAt).map(at)))
  const stepsRun = Number(runs[0]!.n)
  console.log(`failover: ${total} executions (${2 * total} children), ${Number(effects[0]!.n)} effects, lost 0, duplicated 0, forks 0`)
  console.log(`failover: killed at +0 s, promoted at +${((promotedAt - killedAt) / 1000).toFixed(2)} s; calls failed for ${windowSeconds.toFixed(2)} s (${connection.length} failures, all StoreError Connection retryable; ${moved.length} LeaseLostError of calls whose tree moved, all finished)`)
  console.log(`failover: first step ${((firstStep - promotedAt) / 1000).toFixed(2)} s after promotion; ${stepsRun - Number(runs[0]!.keys)} step runs repeated under their key`)
  for (const p of procs) p.child.kill("SIGTERM")
  await Promise.all(procs.map((p) => p.exited))
}

main().then(
  () => {
    cluster.destroy()
    process.exit(0)
  },
  async (error) => {
    console.error(error)
    // What was left, for the report.
    const left = await sql(cluster.standbyPort, (s) =>
      Effect.all([
        s`SELECT thread_id, workflow_name, status FROM baton_records WHERE status <> 'Finished'`,
        s`SELECT pause_id, thread_id, status, left(payload, 40) AS payload, created_at FROM baton_pauses WHERE status <> 'Taken'`,
        // The queue rows of the trees left: whether a stuck parent's children all ended, when, and who ran them.
        s`SELECT q.root_execution_id, q.execution_id, q.status, q.claimed_by, q.launch_id, q.queued_at, r.updated_at AS child_updated_at
          FROM baton_child_queue q LEFT JOIN baton_records r ON r.tenant_id = q.tenant_id AND r.execution_id = q.execution_id
          WHERE q.root_execution_id IN (SELECT execution_id FROM baton_records WHERE status <> 'Finished')`
      ])).catch((e) => String(e))
    console.error("left on the new primary:", JSON.stringify(left, null, 1))
    killAll()
    cluster.destroy()
    process.exit(1)
  }
)
