/**
 * `npm run bench:sweep:pg` — the recovery sweep over a large Postgres table.
 *
 * In a fresh database, two schemas are filled with bulk SQL
 * (`generate_series`): `small` with BENCH_SMALL (10,000) Running roots of
 * dead holders (expired leases, the input kept with the tree) plus as many
 * Paused roots (each with a pending pause), and `large` with BENCH_RUNNING
 * (100,000) of each. Then:
 *
 * 1. Page cost: a sweep page — `RecordStore.findByStatus("Running", 100,
 *    cursor)` at a random cursor and its roots' leases (`LeaseStore.getMany`),
 *    plus the look at stranded decisions (`PauseStore.findResolvedRoots`) —
 *    timed as round trips, and the page's two queries timed inside Postgres
 *    (EXPLAIN ANALYZE: execution time, buffers), on both schemas, rounds
 *    alternating between them (BENCH_PAGES per round, BENCH_ROUNDS rounds).
 * 2. Statements per sweep page of a real look: one instance whose trees are
 *    all held by a live holder looks once over the large schema (no
 *    recovery starts): statements and time per page of 100.
 * 3. Recovery: BENCH_INSTANCES (3) baton instances over the large schema (a
 *    pool of 8 connections each, `maxConcurrentSteps` 32, a trivial
 *    one-step workflow) recover every Running root; the time until none is
 *    left, recoveries per second, statements per recovery, and the trees'
 *    lease acquires with those refused (another instance had just taken the
 *    tree: the instances collided).
 *
 * Statements are counted with effect's `Statement.CurrentTransformer` (it
 * sees every statement a client runs; transaction BEGIN/COMMIT are not
 * statements there). The last line is `ratio: page100k/page10k` (median page
 * time on the large schema over the small one; goal ≤ 1.2).
 *
 * Usage: npm run bench:sweep:pg   (BATON_PG_URL: a database of the server
 * where the bench may create its own; default
 * postgres://postgres@127.0.0.1:5432/postgres. BENCH_RUNNING=100000
 * BENCH_SMALL=10000 BENCH_PAGES=50 BENCH_ROUNDS=6 BENCH_INSTANCES=3
 * BENCH_RECOVER=1 (0 skips phase 3) BENCH_RECOVER_SECONDS (stop phase 3
 * after that long and report how many were recovered))
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { PgClient as EffectPgClient } from "@effect/sql-pg"
import { Context, type Duration, Effect, Exit, Layer, Option, Redacted, References, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, Statement } from "effect/sql"
import { PgStores } from "../layers/pg/index.ts"
import * as PgMigrations from "../layers/pg/PgMigrations.ts"
import * as PgClient from "../layers/pg/PgClient.ts"
import * as SqlLeaseStore from "../layers/sql/SqlLeaseStore.ts"
import * as SqlPauseStore from "../layers/sql/SqlPauseStore.ts"
import * as SqlRecordStore from "../layers/sql/SqlRecordStore.ts"
import * as Baton from "../src/runtime/Baton.ts"
import * as Workflow from "../src/runtime/Workflow.ts"
import * as Ids from "../src/stores/Ids.ts"
import { LeaseStore } from "../src/stores/LeaseStore.ts"
import type { RecordCursor } from "../src/stores/ExecutionRecord.ts"

const adminUrl = process.env.BATON_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const large = Number(process.env.BENCH_RUNNING ?? 100_000)
const small = Number(process.env.BENCH_SMALL ?? 10_000)
const pagesPerRound = Number(process.env.BENCH_PAGES ?? 50)
const rounds = Number(process.env.BENCH_ROUNDS ?? 6)
const instances = Number(process.env.BENCH_INSTANCES ?? 3)
const recover = process.env.BENCH_RECOVER !== "0"
/** Stops the recovery after this many seconds (reporting how many were recovered); unset: until all are. */
const recoverSeconds = process.env.BENCH_RECOVER_SECONDS === undefined ? Infinity : Number(process.env.BENCH_RECOVER_SECONDS)
const pageSize = 100
const tenants = 10
const database = `bench_sweep_${Math.random().toString(36).slice(2, 8)}`
const dbUrl = (() => {
  const u = new URL(adminUrl)
  u.pathname = `/${database}`
  return u.toString()
})()

const State = Annotation.Root({ n: Annotation<number>(), log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

/** The trivial workflow every bench root runs: one step. */
const trivial = Workflow.make({
  name: "sweep-bench",
  version: "1",
  graph: new StateGraph(State)
    .addNode("only", Workflow.step((s: typeof State.State) => ({ log: [`n=${s.n}`] })))
    .addEdge(START, "only")
    .addEdge("only", END)
})

/** Statements run, by kind (the first words of their SQL). */
const counts = new Map<string, number>()
const kindOf = (sql: string) => {
  const s = sql.replace(/\s+/g, " ").trim()
  const table = /"([A-Za-z0-9_]+)"/.exec(s)?.[1] ?? "?"
  return `${s.split(" ")[0]!.toUpperCase()} ${table}${/ FOR UPDATE$/.test(s) ? " FOR UPDATE" : ""}`
}
const counting: Statement.Transformer = (statement) =>
  Effect.sync(() => {
    const [sql] = statement.compile()
    if (process.env.BENCH_SHOW_SQL === "1" && Math.random() < 0.01) console.log(sql.replace(/\s+/g, " ").slice(0, 160))
    const kind = kindOf(sql)
    counts.set(kind, (counts.get(kind) ?? 0) + 1)
    return statement
  })
const total = () => [...counts.values()].reduce((a, b) => a + b, 0)
const snapshot = () => new Map(counts)
const since = (before: Map<string, number>) =>
  [...counts].map(([k, n]) => [k, n - (before.get(k) ?? 0)] as const).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1])

const admin = <A>(url: string, f: (sql: EffectPgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(EffectPgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(Effect.provide(Reactivity.layer))
  )

/** Fills one migrated schema with `n` Running roots of dead holders and `n` Paused roots, in bulk. */
const fill = (schema: string, n: number) =>
  admin(dbUrl, (sql) =>
    Effect.gen(function*() {
      const t = (name: string) => `"${schema}"."baton_${name}"`
      const id = (prefix: string) => `'${prefix}-' || lpad(g::text, 7, '0')`
      const tenant = `'tenant-' || (g % ${tenants})`
      const { configHash, name, version } = trivial
      const longAgo = Date.now() - 3_600_000
      for (const [kind, status] of [["run", "Running"], ["pause", "Paused"]] as const) {
        yield* sql.unsafe(`INSERT INTO ${t("threads")} (tenant_id, thread_id, owner_id, created_at)
          SELECT ${tenant}, ${id(`thread-${kind}`)}, NULL, ${longAgo} FROM generate_series(1, ${n}) g`)
        yield* sql.unsafe(`INSERT INTO ${t("records")} (tenant_id, execution_id, thread_id, root_execution_id, parent_execution_id, depth,
            workflow_name, workflow_version, config_hash, status, error, created_at, updated_at)
          SELECT ${tenant}, ${id(kind)}, ${id(`thread-${kind}`)}, ${id(kind)}, NULL, 1, '${name}', '${version}', '${configHash}', '${status}', NULL,
            ${longAgo} + g, ${longAgo} + g FROM generate_series(1, ${n}) g`)
      }
      // Running: the dead holder's lease expired an hour ago; the input is kept with the tree.
      yield* sql.unsafe(`INSERT INTO ${t("leases")} (tenant_id, root_execution_id, holder, epoch, expires_at)
        SELECT ${tenant}, ${id("run")}, 'dead-instance#' || g, 1, ${longAgo} FROM generate_series(1, ${n}) g`)
      yield* sql.unsafe(`INSERT INTO ${t("tree_keys")} (tenant_id, root_execution_id, tree_key, value)
        SELECT ${tenant}, ${id("run")}, '@baton/input', '{"n":' || g || '}' FROM generate_series(1, ${n}) g`)
      // Paused: a pending pause each (no decision waiting: the look at stranded decisions finds none).
      yield* sql.unsafe(`INSERT INTO ${t("pauses")} (tenant_id, pause_id, thread_id, root_execution_id, execution_id, interrupt_id, payload,
          status, decision, created_at, resolved_at, resolved_by)
        SELECT ${tenant}, ${id("p")}, ${id("thread-pause")}, ${id("pause")}, ${id("pause")}, 'i-' || g, '{"q":"ok?"}', 'Pending', NULL,
          ${longAgo}, NULL, NULL FROM generate_series(1, ${n}) g`)
      for (const table of ["threads", "records", "leases", "tree_keys", "pauses"]) yield* sql.unsafe(`ANALYZE ${t(table)}`)
    }))

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}
const pct = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!
}
const ms = (x: number) => `${x.toFixed(2)} ms`

/** The stores of one schema on a one-connection client. */
const storesOf = (schema: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(PgClient.layer({ url: dbUrl, schema, maxConnections: 1 }).pipe(Layer.provideMerge(Ids.layer)))
    return yield* Effect.provide(
      Effect.all({ records: SqlRecordStore.make(), pauses: SqlPauseStore.make(), leases: SqlLeaseStore.make(), sql: SqlClient.SqlClient }),
      context
    )
  })

interface Side {
  readonly label: string
  readonly n: number
  readonly stores: Effect.Success<ReturnType<typeof storesOf>>
  /** Round trips of a sweep page as the sweep makes it: the page of records, then their leases. */
  readonly times: Array<number>
  /** The same two queries' execution time inside Postgres (EXPLAIN ANALYZE), and the buffers they touched. */
  readonly server: Array<number>
  readonly buffers: Array<number>
  readonly stranded: Array<number>
  statements: number
  pages: number
}

/** Execution time (ms) and shared buffers (hit + read) of one statement, from EXPLAIN (ANALYZE, BUFFERS). */
const explain = (sql: SqlClient.SqlClient, text: string, params: ReadonlyArray<unknown>) =>
  Effect.map(sql.unsafe<{ "QUERY PLAN": any }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params), (rows) => {
    const [top] = rows[0]!["QUERY PLAN"] as Array<any>
    return { ms: top["Execution Time"] as number, buffers: (top.Plan["Shared Hit Blocks"] ?? 0) + (top.Plan["Shared Read Blocks"] ?? 0) }
  })

/** Phase 1: page cost on both schemas, rounds alternating. */
const pageCost = Effect.gen(function*() {
  const side = (label: string, n: number) =>
    Effect.map(storesOf(label), (stores): Side => ({ label, n, stores, times: [], server: [], buffers: [], stranded: [], statements: 0, pages: 0 }))
  const sides = [yield* side("small", small), yield* side("large", large)]
  const cursorAt = (n: number) => {
    const g = 1 + Math.floor(Math.random() * n)
    return { tenantId: `tenant-${g % tenants}`, executionId: `run-${String(g).padStart(7, "0")}` }
  }
  /** One sweep page through the stores, timed: the records after `cursor`, then their leases in one call. */
  const page = (s: Side, cursor: RecordCursor) =>
    Effect.gen(function*() {
      const before = total()
      let started = performance.now()
      const records = yield* s.stores.records.findByStatus("Running", pageSize, Option.some(cursor))
      const leases = yield* s.stores.leases.getMany(records.map((r) => ({ tenantId: r.tenantId, rootExecutionId: r.rootExecutionId })))
      s.times.push(performance.now() - started)
      if (records.length === 0 || leases.length !== records.length) return yield* Effect.die(new Error("a page without its leases"))
      started = performance.now()
      yield* s.stores.pauses.findResolvedRoots(pageSize, Option.none())
      s.stranded.push(performance.now() - started)
      s.statements += total() - before
      s.pages++
      return records
    })
  /** The same page's two queries inside Postgres. */
  const serverSide = (s: Side, cursor: RecordCursor) =>
    Effect.gen(function*() {
      const t = (name: string) => `"${s.label}"."baton_${name}"`
      const records = yield* explain(
        s.stores.sql,
        `SELECT * FROM ${t("records")} WHERE status = 'Running' AND (tenant_id, execution_id) > ($1, $2) ORDER BY tenant_id, execution_id LIMIT ${pageSize}`,
        [cursor.tenantId, cursor.executionId]
      )
      const roots = yield* s.stores.records.findByStatus("Running", pageSize, Option.some(cursor))
      // SqlLeaseStore.getMany's Postgres statement.
      const leases = yield* explain(
        s.stores.sql,
        `SELECT l.tenant_id, l.root_execution_id, l.holder, l.epoch, l.expires_at FROM jsonb_array_elements($1::jsonb) AS k
           CROSS JOIN LATERAL (SELECT * FROM ${t("leases")} WHERE tenant_id = k->>0 AND root_execution_id = k->>1 AND holder IS NOT NULL LIMIT 1) AS l`,
        [JSON.stringify(roots.map((r) => [r.tenantId, r.rootExecutionId]))]
      )
      s.server.push(records.ms + leases.ms)
      s.buffers.push(records.buffers + leases.buffers)
    })
  // Warm both (plans, caches) before timing.
  for (const s of sides) for (let i = 0; i < 20; i++) yield* page(s, cursorAt(s.n))
  for (const s of sides) s.times.length = s.stranded.length = s.statements = s.pages = 0
  for (let round = 0; round < rounds; round++) {
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      for (let i = 0; i < pagesPerRound; i++) {
        yield* page(s, cursorAt(s.n))
        yield* serverSide(s, cursorAt(s.n))
      }
    }
  }
  for (const s of sides) {
    console.log(
      `sweep page (${pageSize} Running records + their leases) at ${s.n} rows: round trip p50 ${ms(median(s.times))}, p90 ${ms(pct(s.times, 0.9))}; ` +
        `inside Postgres p50 ${ms(median(s.server))}, ${(s.buffers.reduce((a, b) => a + b, 0) / s.buffers.length).toFixed(1)} buffers; ` +
        `stranded-decision look p50 ${ms(median(s.stranded))}; statements per page (the three queries): ${(s.statements / s.pages).toFixed(1)}`
    )
  }
  const plan = yield* sides[1]!.stores.sql.unsafe<{ "QUERY PLAN": string }>(
    `EXPLAIN ANALYZE SELECT * FROM "large"."baton_records" WHERE status = 'Running'
       AND (tenant_id, execution_id) > ('tenant-5', 'run-0050005') ORDER BY tenant_id, execution_id LIMIT ${pageSize}`
  )
  console.log(`EXPLAIN ANALYZE of the page query (large):\n  ${plan.map((r) => r["QUERY PLAN"]).join("\n  ")}`)
  const [lo, hi] = sides
  console.log(`round-trip ratio (large/small, p50): ${(median(hi!.times) / median(lo!.times)).toFixed(2)} (the machine's load shows most here)`)
  return median(hi!.server) / median(lo!.server)
})

/** The trees' lease acquires of the recovering instances, and those refused (another instance had just taken the tree). */
const acquires = { tried: 0, refused: 0 }

/** The Postgres stores of the large schema, with a LeaseStore that counts the trees' acquires in `acquires`. */
const countedStores = (maxConnections: number) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Layer.Success<ReturnType<typeof PgStores.layer>>>()
    const leases = Context.get(context, LeaseStore)
    return Context.add(context, LeaseStore, {
      ...leases,
      acquire: (tenantId, root, holder, ttl, now) =>
        Effect.tap(leases.acquire(tenantId, root, holder, ttl, now), (got) =>
          Effect.sync(() => {
            if (!tenantId.startsWith("tenant-")) return
            acquires.tried++
            if (Option.isNone(got)) acquires.refused++
          }))
    })
  })).pipe(Layer.provide(PgStores.layer({ url: dbUrl, schema: "large", maxConnections })))

/** Builds one baton instance over the large schema (its own pool and wake-ups). */
const instance = (i: number, options: { readonly maxConnections: number; readonly sweepInterval: Duration.Input }) =>
  Layer.build(
    Baton.layer({ workflows: [trivial], instanceId: `bench-${i}`, maxConcurrentSteps: 32, sweepInterval: options.sweepInterval, lease: "30 seconds" }).pipe(
      Layer.provideMerge(countedStores(options.maxConnections))
    )
  ).pipe(Effect.map((context) => Context.get(context, Baton.Baton)))

const running = (sql: EffectPgClient.PgClient) =>
  Effect.map(sql<{ n: string }>`SELECT count(*) AS n FROM "large"."baton_records" WHERE status = 'Running'`, (r) => Number(r[0]!.n))

/** Phase 2: one look of a real instance over the large schema while a live holder keeps every tree: statements per page. */
const lookCost = Effect.gen(function*() {
  const farFuture = Date.now() + 3_600_000
  yield* Effect.promise(() => admin(dbUrl, (sql) => sql.unsafe(`UPDATE "large"."baton_leases" SET expires_at = ${farFuture}`)))
  const before = snapshot()
  const started = performance.now()
  const scope = yield* Scope.make()
  const baton = yield* Scope.provide(instance(99, { maxConnections: 2, sweepInterval: "1 hour" }), scope)
  // The first look runs at start; liveness reports when the sweep last ended.
  while (true) {
    const live = yield* baton.checkLiveness
    const sweep = live.components.find((c) => c.name === "recovery-sweep")
    if (sweep?.message?.startsWith("last sweep ended") === true) break
    if (performance.now() - started > 600_000) return yield* Effect.die(new Error("the look did not end in 10 minutes"))
    yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
  }
  const elapsed = performance.now() - started
  yield* Scope.close(scope, Exit.void)
  const used = since(before)
  const pages = Math.ceil(large / pageSize)
  const statements = used.reduce((a, [, n]) => a + n, 0)
  console.log(
    `one look over ${large} Running roots held live (${pages} pages of ${pageSize}): ${(elapsed / 1000).toFixed(1)} s, ` +
      `${ms(elapsed / pages)} and ${(statements / pages).toFixed(1)} statements per page`
  )
  console.log(`  statements: ${used.map(([k, n]) => `${k} ${n}`).join(", ")}`)
  yield* Effect.promise(() => admin(dbUrl, (sql) => sql.unsafe(`UPDATE "large"."baton_leases" SET expires_at = ${Date.now() - 3_600_000}`)))
})

/** Phase 3: `instances` instances recover every Running root. */
const recovery = Effect.gen(function*() {
  const before = snapshot()
  acquires.tried = acquires.refused = 0
  const started = performance.now()
  const scope = yield* Scope.make()
  for (let i = 0; i < instances; i++) yield* Scope.provide(instance(i, { maxConnections: 8, sweepInterval: "5 seconds" }), scope)
  let left = large
  let lastSaid = started
  while (left > 0 && performance.now() - started < recoverSeconds * 1000) {
    yield* Effect.promise(() => new Promise((r) => setTimeout(r, 1000)))
    left = yield* Effect.promise(() => admin(dbUrl, running))
    if (performance.now() - lastSaid > 15_000) {
      lastSaid = performance.now()
      console.log(`  ${((lastSaid - started) / 1000).toFixed(0)} s: ${large - left} recovered`)
    }
  }
  const elapsed = (performance.now() - started) / 1000
  yield* Scope.close(scope, Exit.void)
  const used = since(before)
  const statements = used.reduce((a, [, n]) => a + n, 0)
  const finished = Number((yield* Effect.promise(() =>
    admin(dbUrl, (sql) => sql<{ n: string }>`SELECT count(*) AS n FROM "large"."baton_records" WHERE status = 'Finished'`)
  ))[0]!.n)
  console.log(
    `recovery of ${left === 0 ? "all " : ""}${large} Running roots by ${instances} instances: ${finished} Finished in ${elapsed.toFixed(1)} s ` +
      `(${(finished / elapsed).toFixed(1)} recoveries/s${left === 0 ? "" : `; stopped at BENCH_RECOVER_SECONDS with ${left} left`}), ` +
      `${(statements / Math.max(1, finished)).toFixed(1)} statements per recovery; ` +
      `${acquires.tried} lease acquires, ${acquires.refused} refused (another instance had just taken the tree)`
  )
  console.log(`  statements: ${used.slice(0, 12).map(([k, n]) => `${k} ${n}`).join(", ")}`)
})

const main = Effect.gen(function*() {
  console.log(`sweep bench (Postgres, database ${database}): ${small} and ${large} Running roots of dead holders, as many Paused`)
  for (const [schema, n] of [["small", small], ["large", large]] as const) {
    const started = performance.now()
    yield* Effect.scoped(Effect.flatMap(Layer.build(PgClient.layer({ url: dbUrl, schema, maxConnections: 1 })), (c) => Effect.provide(PgMigrations.migrate({ schema }), c)))
    yield* Effect.promise(() => fill(schema, n))
    console.log(`filled ${schema}: ${n} Running + ${n} Paused in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  }
  const ratio = yield* Effect.scoped(pageCost)
  yield* lookCost
  if (recover) yield* recovery
  return ratio
}).pipe(
  Effect.provideService(Statement.CurrentTransformer, counting),
  // The instances' per-recovery info lines would drown the figures.
  Effect.provideService(References.MinimumLogLevel, "Warn")
)

await admin(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${database}`))
// Stopped early (Ctrl-C): the database goes too.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    admin(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).finally(() => process.exit(130))
  })
}
let ratio: number
try {
  ratio = await Effect.runPromise(main)
} finally {
  await admin(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`))
}
console.log(`ratio: ${ratio.toFixed(2)}`)
