/**
 * `npm run bench:timers` — the due-timer look over many sleeping trees on Postgres.
 *
 * In a fresh database (created and dropped here), two schemas are migrated
 * and filled through the store (`TimerStore.arm`, 16 at once): `small` with
 * BENCH_SMALL (10,000) sleeping trees, `large` with BENCH_LARGE (100,000),
 * their wake times spread over 30 days. Then:
 *
 * 1. Page cost: the waker's look at a moment all of them are due —
 *    `TimerStore.claimDue(now, 100, …)`, the one statement a page — timed as
 *    round trips; each page claims the next 100 earliest (a claim moves them
 *    60 days on, past every other timer), at most 95 pages of each schema
 *    (the small one holds 100), the tables vacuumed between rounds. The same statement is also timed inside Postgres
 *    (EXPLAIN ANALYZE in a transaction rolled back: execution time, shared
 *    buffers). Pages
 *    alternate between the schemas, the order swapped each page (BENCH_PAGES
 *    pages of each per round, BENCH_ROUNDS rounds).
 * 2. Wake latency (BENCH_LATENCY=1, the default): two baton instances in this
 *    process on the real clock (each its own pool, as two processes would
 *    have) over a third schema; BENCH_SLEEPERS (50) trees, one started every
 *    100 ms, each sleep until 2 s after its start, and the step after the
 *    sleep notes how late (real time) it ran after that instant; p50 and p99. Both instances are in one process, so
 *    this is not the figure across real processes.
 * 3. Wake latency across real processes (with BENCH_LATENCY): process A
 *    starts BENCH_SLEEPERS trees sleeping until instants 4 s ahead, 50 ms
 *    apart, and is SIGKILLed once they rest; processes B and C (the
 *    default 30 s sweep interval) wake them; p50 and p99 of how late the step
 *    after the sleep ran (real time), and which process woke how many.
 *
 * The last line is `ratio: page100k/page10k`: the claim statement's median
 * execution time inside Postgres on the large schema over the small one
 * (goal ≤ 1.2); the round trips' ratio is printed before it (on a shared
 * machine most of a round trip is waiting for a core).
 *
 * Usage: npm run bench:timers   (BATON_TEST_PG_URL: the server; default
 * postgres://postgres@127.0.0.1:5432/test. BENCH_LARGE=100000
 * BENCH_SMALL=10000 BENCH_PAGES=15 BENCH_ROUNDS=6 BENCH_LATENCY=1
 * BENCH_SLEEPERS=50)
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, References } from "effect"
import { SqlClient } from "effect/sql"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"
import { PgStores } from "../layers/pg/index.ts"
import * as SqlTimerStore from "../layers/sql/SqlTimerStore.ts"
import * as Baton from "../src/runtime/Baton.ts"
import * as Workflow from "../src/runtime/Workflow.ts"
import type { Timer, TimerStoreShape } from "../src/stores/TimerStore.ts"
import { url as testUrl, withAdmin } from "../test/pg/admin.ts"
import { killAll, sleep, start } from "../test/e2e/processes.ts"
import { fileURLToPath } from "node:url"

const large = Number(process.env.BENCH_LARGE ?? 100_000)
const small = Number(process.env.BENCH_SMALL ?? 10_000)
const pagesPerRound = Number(process.env.BENCH_PAGES ?? 15)
const rounds = Number(process.env.BENCH_ROUNDS ?? 6)
const latency = process.env.BENCH_LATENCY !== "0"
const sleepers = Number(process.env.BENCH_SLEEPERS ?? 50)
const pageSize = 100
const day = 86_400_000
const base = Date.UTC(2030, 0, 1)
const database = `bench_timers_${Math.random().toString(36).slice(2, 8)}`
const dbUrl = (() => {
  const u = new URL(testUrl)
  u.pathname = `/${database}`
  return u.toString()
})()

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const pct = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!
}
const ms = (x: number) => `${x.toFixed(2)} ms`

/** A schema's migrated client (a pool of `connections`) and its TimerStore. */
const openSchema = (schema: string, connections: number) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(PgClient.layer({ url: dbUrl, schema, maxConnections: connections }))
    yield* Effect.provide(PgMigrations.migrate({ schema }), context)
    const store = yield* Effect.provide(SqlTimerStore.make(), context)
    const sql = Context.get(context, SqlClient.SqlClient)
    // One connection of its own, for the EXPLAINs inside a transaction that is rolled back.
    const single = Context.get(yield* Layer.build(PgClient.layer({ url: dbUrl, schema, maxConnections: 1 })), SqlClient.SqlClient)
    return { schema, store, sql, single }
  })

type Side = Effect.Success<ReturnType<typeof openSchema>> & {
  readonly n: number
  readonly times: Array<number>
  readonly server: Array<number>
  readonly buffers: Array<number>
  readonly plans: Set<string>
}

/** `n` sleeping trees, one timer each, armed through the store; wake times spread over 30 days. */
const fill = (store: TimerStoreShape, n: number) =>
  Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => {
    const dueAt = base + Math.floor((i * 30 * day) / n)
    const timer: Timer = {
      tenantId: `tenant-${i % 10}`,
      pauseId: `pause-${String(i).padStart(7, "0")}`,
      rootExecutionId: `root-${String(i).padStart(7, "0")}`,
      threadId: `thread-${String(i).padStart(7, "0")}`,
      kind: "Sleep",
      name: null,
      dueAt,
      wakesAt: dueAt,
      claimedBy: null,
      createdAt: base - day
    }
    return store.arm(timer)
  }, { concurrency: 16, discard: true })

/**
 * Execution time and shared buffers of the look's claim statement inside
 * Postgres: `EXPLAIN (ANALYZE, BUFFERS)` of the very UPDATE `claimDue` runs,
 * in a transaction rolled back (nothing stays claimed).
 */
const explainLook = (side: Side, now: number) =>
  Effect.gen(function*() {
    const t = `"${side.schema}"."baton_timers"`
    yield* side.single.unsafe("BEGIN")
    const rows = yield* side.single.unsafe<{ "QUERY PLAN": any }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) UPDATE ${t} SET wakes_at = $1, claimed_by = 'explain'
       WHERE ctid = ANY(ARRAY(
         SELECT ctid FROM ${t} WHERE wakes_at IS NOT NULL AND wakes_at <= $2 ORDER BY wakes_at LIMIT ${pageSize} FOR UPDATE SKIP LOCKED
       )) AND wakes_at <= $2 RETURNING *`,
      [now + day, now]
    )
    yield* side.single.unsafe("ROLLBACK")
    const [top] = rows[0]!["QUERY PLAN"] as Array<any>
    // How the timers were found: the scan nodes of the plan (an index scan of the wake index, or a sequential scan).
    const scans: Array<string> = []
    const walk = (node: any) => {
      if (/Scan/.test(node["Node Type"])) scans.push(`${node["Node Type"]}${node["Index Name"] === undefined ? "" : ` ${node["Index Name"]}`}`)
      for (const child of node.Plans ?? []) walk(child)
    }
    walk(top.Plan)
    return { ms: top["Execution Time"] as number, buffers: (top.Plan["Shared Hit Blocks"] ?? 0) + (top.Plan["Shared Read Blocks"] ?? 0), scans: scans.join(", ") }
  })

/** One timed page: the claim of the 100 earliest due timers (claimed for 60 days: past the rest, they stay out of later pages). */
const page = (side: Side, now: number) =>
  Effect.gen(function*() {
    const started = performance.now()
    const claimed = yield* side.store.claimDue(now, pageSize, "bench", 60 * day)
    side.times.push(performance.now() - started)
    if (claimed.length !== pageSize) return yield* Effect.die(new Error(`a page of ${claimed.length} timers, not ${pageSize}`))
  })

const pageCost = Effect.gen(function*() {
  const sides: Array<Side> = []
  for (const [schema, n] of [["small", small], ["large", large]] as const) {
    const opened = yield* openSchema(schema, 16)
    const started = performance.now()
    yield* fill(opened.store, n)
    yield* opened.sql.unsafe(`ANALYZE "${schema}"."baton_timers"`)
    console.log(`filled ${schema}: ${n} sleeping trees through TimerStore.arm in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    sides.push({ ...opened, n, times: [], server: [], buffers: [], plans: new Set() })
  }
  const now = base + 31 * day
  if ((rounds * pagesPerRound + 5) * pageSize > Math.min(small, large)) {
    return yield* Effect.die(new Error(`BENCH_ROUNDS × BENCH_PAGES + 5 pages of ${pageSize} must fit in the smaller schema (${Math.min(small, large)} timers)`))
  }
  // Warm both (plans, caches) before timing.
  for (const side of sides) for (let i = 0; i < 5; i++) yield* page(side, now)
  for (const side of sides) side.times.length = 0
  for (let round = 0; round < rounds; round++) {
    // Page by page, the two schemas in turn (the order swapped each page): load on the machine falls on both alike.
    for (let i = 0; i < pagesPerRound; i++) {
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        yield* page(side, now)
        const explained = yield* explainLook(side, now)
        side.server.push(explained.ms)
        side.buffers.push(explained.buffers)
        side.plans.add(explained.scans)
      }
    }
    // Each claim leaves dead index entries at the front of both indexes alike: cleared between rounds.
    for (const side of sides) yield* side.sql.unsafe(`VACUUM "${side.schema}"."baton_timers"`)
  }
  for (const side of sides) {
    console.log(
      `page of ${pageSize} due timers of ${side.n} (all due): round trip median ${ms(median(side.times))}, p99 ${ms(pct(side.times, 0.99))}; ` +
        `inside Postgres ${ms(median(side.server))}, ${median(side.buffers)} shared buffers (${side.times.length} pages; plan: ${[...side.plans].join(" | ")})`
    )
  }
  console.log(`round trips large/small: ${(median(sides[1]!.times) / median(sides[0]!.times)).toFixed(2)} (a busy machine's scheduling is most of a round trip)`)
  return median(sides[1]!.server) / median(sides[0]!.server)
})

/** Phase 2: two instances on the real clock; how late each sleeper ran after its instant. */
const wakeLatency = Effect.gen(function*() {
  const late: Array<number> = []
  const State = Annotation.Root({ at: Annotation<number>() })
  const sleeper = Workflow.make({
    name: "bench-sleeper",
    version: "1",
    graph: new StateGraph(State)
      .addNode("nap", Workflow.sleepNode<{ at: number }>({ until: (s) => s.at }))
      .addNode("woke", Workflow.step(async (s: { at: number }) => (late.push(Date.now() - s.at), {})))
      .addEdge(START, "nap").addEdge("nap", "woke").addEdge("woke", END)
  })
  const instance = (id: string) =>
    Baton.layer({ workflows: [sleeper], instanceId: id }).pipe(Layer.provide(PgStores.layer({ url: dbUrl, schema: "latency", maxConnections: 8 })))
  const a = yield* Layer.build(instance("bench-a"))
  yield* Layer.build(instance("bench-b"))
  const baton = Context.get(a, Baton.Baton)
  // One tree started every 100 ms, each sleeping 2 s from its start: a steady 10 wakes a second.
  yield* Effect.forEach(Array.from({ length: sleepers }, (_, i) => i), () =>
    Effect.andThen(baton.start(sleeper, { at: Date.now() + 2_000 }), Effect.sleep("100 millis")), { discard: true })
  const until = Date.now() + 15_000
  while (late.length < sleepers && Date.now() < until) yield* Effect.sleep("100 millis")
  console.log(
    `wake latency after the due instant (${late.length}/${sleepers} sleepers, two instances in one process, real clock): ` +
      `p50 ${ms(median(late))}, p99 ${ms(pct(late, 0.99))}, max ${ms(Math.max(...late))}`
  )
})

/**
 * Phase 3: real processes. A starts the sleepers and is SIGKILLed once they
 * rest; B and C wake them. How late each woke (real time), and where.
 */
const processLatency = async () => {
  const worker = fileURLToPath(new URL("../test/e2e/timersWorker.ts", import.meta.url))
  const procs = [["proc-a", String(sleepers)], ["proc-b"], ["proc-c"]].map(([id, ...rest]) => start(worker, [dbUrl, "procs", id!, ...rest], id!))
  await Promise.all(procs.map((p) => p.until((l) => l.endsWith(" ready"))))
  const [a, ...wakers] = procs as [typeof procs[0], ...typeof procs]
  // The first sleep ends well after A has started every tree and been killed.
  const first = Date.now() + 5_000 + sleepers * 60
  a.send(`go ${first}`)
  await a.until((l) => l.endsWith(" started"))
  await sleep(1_000) // real processes: let A's last trees reach their rest
  const killedEarly = Date.now() >= first
  a.child.kill("SIGKILL")
  const woke = () => wakers.flatMap((w) => w.lines.filter((l) => l.includes(" woke ")))
  const until = Date.now() + 40_000
  while (woke().length < sleepers && Date.now() < until) await sleep(100)
  const late = woke().map((l) => Number(l.split(" ")[3]))
  const byWho = wakers.map((w) => `${w.id} ${w.lines.filter((l) => l.includes(" woke ")).length}`).join(", ")
  killAll()
  if (late.length === 0 || killedEarly) {
    console.log(`wake latency across real processes: not measured (${late.length} woke; the starter was killed ${killedEarly ? "after" : "before"} the first due instant)`)
    return
  }
  console.log(
    `wake latency across real processes (the starter SIGKILLed, two others wake; ${late.length}/${sleepers} woke: ${byWho}): ` +
      `p50 ${ms(median(late))}, p99 ${ms(pct(late, 0.99))}, max ${ms(Math.max(...late))}`
  )
}

const main = Effect.gen(function*() {
  console.log(`timers bench (Postgres, database ${database}): ${small} and ${large} sleeping trees`)
  const ratio = yield* Effect.scoped(pageCost)
  if (latency) yield* Effect.scoped(wakeLatency)
  if (latency) yield* Effect.promise(processLatency)
  return ratio
}).pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))

await withAdmin((sql) => sql.unsafe(`CREATE DATABASE ${database}`))
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    withAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).finally(() => process.exit(130))
  })
}
let ratio: number
try {
  ratio = await Effect.runPromise(main)
} finally {
  await withAdmin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
}
console.log(`ratio: ${ratio.toFixed(2)}`)
