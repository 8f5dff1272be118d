/**
 * `npm run bench:dashboard:pg` — the dashboard's executions page on a big
 * Postgres store: 100,000 executions of one tenant ("big") beside 1,000 of
 * another ("small"), in a fresh schema; a `baton/http` server with the
 * dashboard on 127.0.0.1 answers the page's data request
 * (`GET /dashboard/api/executions`) for the first page, a status filter, a
 * workflow filter, a thread search, a time window and a page 50 pages deep.
 * The figure is the server's own time for the request (its `server-timing`
 * header: from after `authorize` to the response), p50/p99 over the rounds,
 * both tenants alternating request by request.
 *
 * The goal is under 200 ms on 100,000 executions; the last line,
 * `ratio: <worst p50 on big> / 200 ms`, is that figure against the goal
 * (below 1 meets it); the line before compares the big tenant with the small
 * one (near 1: the queries are indexed, their cost does not grow with the table).
 *
 * Usage: npm run bench:dashboard:pg [-- --rounds N]   (default 30; BATON_TEST_PG_URL or the local test database)
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { cpus, loadavg } from "node:os"
import { PgStores } from "../layers/pg/index.ts"
import { BatonHttp } from "../src/http/index.ts"
import { Baton, Workflow } from "../src/index.ts"
import { url, withAdmin } from "../test/pg/admin.ts"

const roundsArg = process.argv.indexOf("--rounds")
const rounds = roundsArg === -1 ? 30 : Number(process.argv[roundsArg + 1])
const schema = `baton_bench_dashboard_${process.pid}`
const sizes = { big: 100_000, small: 1_000 } as const
const base = 1_700_000_000_000

const State = Annotation.Root({ x: Annotation<number>() })
const noop = Workflow.make({ name: "noop", version: "1", graph: new StateGraph(State).addNode("n", async () => ({ x: 1 })).addEdge(START, "n").addEdge("n", END) })

/** Rows straight into the migrated tables: threads and ended (or paused) records, one per thread. */
const seed = (tenant: string, n: number) =>
  withAdmin((sql) =>
    Effect.gen(function*() {
      yield* sql.unsafe(`INSERT INTO "${schema}".baton_threads (tenant_id, thread_id, owner_id, created_at)
        SELECT '${tenant}', '${tenant}-thread-' || g, NULL, ${base} + g * 1000 FROM generate_series(1, ${n}) AS g`)
      yield* sql.unsafe(`INSERT INTO "${schema}".baton_records
          (tenant_id, execution_id, thread_id, root_execution_id, parent_execution_id, depth, workflow_name, workflow_version, config_hash, status, error, created_at, updated_at)
        SELECT '${tenant}', 'exec-${tenant}-' || g, '${tenant}-thread-' || g, 'exec-${tenant}-' || g, NULL, 1,
          (ARRAY['triage', 'review', 'billing'])[1 + g % 3], '1', 'h',
          (ARRAY['Finished', 'Finished', 'Finished', 'Finished', 'Finished', 'Finished', 'Failed', 'Cancelled', 'Paused', 'Finished'])[1 + g % 10],
          CASE WHEN g % 10 = 6 THEN 'boom' ELSE NULL END, ${base} + g * 1000, ${base} + g * 1000 + 500
        FROM generate_series(1, ${n}) AS g`)
      yield* sql.unsafe(`ANALYZE "${schema}".baton_records`)
      yield* sql.unsafe(`ANALYZE "${schema}".baton_threads`)
    })
  )

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const sorted = [...xs].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const main = Effect.gen(function*() {
  const stores = PgStores.layer({ url, schema, maxConnections: 8, wakeups: false })
  const context = yield* Layer.build(
    BatonHttp.layerServer({ workflows: [noop], authorize: (r) => ({ tenantId: String(r.headers["x-tenant"]) }), port: 0, dashboard: true }).pipe(
      Layer.provideMerge(Baton.layer({ workflows: [noop] })),
      Layer.provide(stores)
    )
  )
  const port = BatonHttp.port(Context.get(context, HttpServer.HttpServer))
  for (const [tenant, n] of Object.entries(sizes)) yield* Effect.promise(() => seed(tenant, n))
  const get = (tenant: string, query: string) =>
    Effect.promise(async () => {
      const response = await fetch(`http://127.0.0.1:${port}/dashboard/api/executions?${query}`, { headers: { "x-tenant": tenant } })
      const body = await response.json() as { executions: Array<unknown>; next: string | null }
      if (response.status !== 200) throw new Error(`${query}: ${response.status} ${JSON.stringify(body)}`)
      return { millis: Number(/dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "")?.[1]), body }
    })
  // A cursor 50 pages deep, per tenant (big has them; small is shallower).
  const deep: Record<string, string> = {}
  for (const tenant of Object.keys(sizes)) {
    let cursor: string | null = null
    for (let i = 0; i < 50; i++) {
      const page: { body: { next: string | null } } = yield* get(tenant, `limit=50${cursor === null ? "" : `&cursor=${cursor}`}`)
      if (page.body.next === null) break
      cursor = page.body.next
    }
    deep[tenant] = cursor ?? ""
  }
  const queries = (tenant: string, n: number): Record<string, string> => ({
    "first page": "limit=50",
    "status=Failed": "status=Failed&limit=50",
    "workflow=review": "workflow=review&limit=50",
    "thread search": `thread=${tenant}-thread-${Math.floor(n / 2)}`,
    "time window": `from=${base + Math.floor(n / 4) * 1000}&to=${base + Math.floor(n / 2) * 1000}&limit=50`,
    "50 pages deep": `limit=50&cursor=${deep[tenant]}`
  })
  const times = new Map<string, Array<number>>()
  for (let round = 0; round < rounds; round++) {
    for (const [tenant, n] of round % 2 === 0 ? Object.entries(sizes) : Object.entries(sizes).reverse()) {
      for (const [name, query] of Object.entries(queries(tenant, n))) {
        const { millis } = yield* get(tenant, query)
        const key = `${tenant}\u0000${name}`
        times.set(key, [...(times.get(key) ?? []), millis])
      }
    }
  }
  console.log(`the dashboard's executions page on Postgres: server time of GET /dashboard/api/executions, ${rounds} rounds, tenants alternating`)
  console.log(`tenants: big ${sizes.big.toLocaleString("en")} executions, small ${sizes.small.toLocaleString("en")} (one schema); machine: ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`)
  let worstBig = 0
  let worstRatio = 0
  for (const name of Object.keys(queries("big", sizes.big))) {
    const big = times.get(`big\u0000${name}`)!
    const small = times.get(`small\u0000${name}`)!
    worstBig = Math.max(worstBig, percentile(big, 50))
    worstRatio = Math.max(worstRatio, percentile(big, 50) / percentile(small, 50))
    console.log(`${name.padEnd(16)} big p50 ${percentile(big, 50).toFixed(1).padStart(6)} ms p99 ${percentile(big, 99).toFixed(1).padStart(6)} ms   small p50 ${percentile(small, 50).toFixed(1).padStart(6)} ms p99 ${percentile(small, 99).toFixed(1).padStart(6)} ms`)
  }
  console.log(`largest big/small p50 ratio: ${worstRatio.toFixed(2)} (near 1: the cost does not grow with the table)`)
  console.log(`ratio: ${(worstBig / 200).toFixed(2)}   (worst p50 on ${sizes.big.toLocaleString("en")} executions / the 200 ms goal: below 1 meets it)`)
})

Effect.runPromise(Effect.scoped(main)).then(
  () => withAdmin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).then(() => process.exit(0)),
  (error) => {
    console.error(error)
    void withAdmin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).finally(() => process.exit(1))
  }
)
