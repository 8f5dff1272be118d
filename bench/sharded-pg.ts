/**
 * `npm run bench:sharded:pg` — statements per shard under a mixed load:
 * one baton instance over `ShardedStores` on three Postgres databases
 * (`baton_shard_a`, `_b`, `_c` on the local server, created when missing; a
 * fresh schema in each), six tenants spread unevenly (three on a, two on b,
 * one on c). Each tenant runs executions of a three-step workflow, half of
 * them pausing once and resumed. The figure per shard is what its database
 * committed meanwhile (`pg_stat_database.xact_commit`: one per statement
 * outside a transaction, one per transaction), read after the instance
 * closed (its backends flush their counts when they exit).
 *
 * Each shard carries only its tenants' work: the line per shard shows its
 * executions and its commits; the commits of a shard follow its tenants'
 * executions (plus the fleet-wide polling every shard gets).
 *
 * Usage: npm run bench:sharded:pg   (BENCH_EXECUTIONS=40 per tenant; BATON_TEST_PG_URL or the local server)
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Context, Effect, Layer, Scope, Exit } from "effect"
import { cpus, loadavg } from "node:os"
import { PgStores } from "../layers/pg/index.ts"
import { ShardedStores } from "../layers/sharded/index.ts"
import { Baton, Workflow } from "../src/index.ts"
import { withAdmin } from "../test/pg/admin.ts"
import { ensureDatabases, onShard, shardNames, shardUrl } from "../test/sharded/pgDatabases.ts"

const perTenant = Number(process.env.BENCH_EXECUTIONS ?? 40)
const schema = `baton_bench_sharded_${process.pid}`
const tenants = { t1: "a", t2: "a", t3: "a", t4: "b", t5: "b", t6: "c" } as const

const State = Annotation.Root({ n: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) })
const mixed = Workflow.make({
  name: "mixed",
  version: "1",
  graph: new StateGraph(State)
    .addNode("one", Workflow.step(async () => ({ n: 1 })))
    .addNode("two", Workflow.step(async (s: typeof State.State) => {
      if (s.n % 2 === 1 && (interrupt({ ask: "go on?" }) as string) !== "yes") return { n: 0 }
      return { n: 1 }
    }))
    .addNode("three", Workflow.step(async () => ({ n: 1 })))
    .addEdge(START, "one")
    .addEdge("one", "two")
    .addEdge("two", "three")
    .addEdge("three", END)
})

const commits = () =>
  withAdmin((sql) => sql<{ datname: string; xact_commit: string }>`SELECT datname, xact_commit FROM pg_stat_database WHERE datname LIKE 'baton_shard_%'`)
    .then((rows) => Object.fromEntries(rows.map((r) => [r.datname.replace("baton_shard_", ""), Number(r.xact_commit)])))

const main = Effect.gen(function*() {
  yield* Effect.promise(() => ensureDatabases())
  const stores = ShardedStores.layer({
    shards: shardNames.map((name) => ({ name, layer: PgStores.layer({ url: shardUrl(name), schema, maxConnections: 8 }) })),
    route: { tenants, default: "a" }
  })
  // Migrate first, so the counts hold the load only.
  yield* Effect.scoped(Layer.build(stores))
  yield* Effect.sleep("1 second")
  const before = yield* Effect.promise(commits)
  const scope = yield* Scope.make()
  const baton = Context.get(yield* Layer.buildWithScope(Baton.layer({ workflows: [mixed] }).pipe(Layer.provide(stores)), scope), Baton.Baton)
  const started = Date.now()
  yield* Effect.forEach(Object.keys(tenants), (tenantId) =>
    Effect.forEach(Array.from({ length: perTenant }, (_, i) => i), (i) =>
      Effect.gen(function*() {
        const out = yield* baton.execute(mixed, { n: i % 2 }, { tenantId })
        if (out._tag === "Paused") yield* baton.resume({ pauseId: out.pauses[0]!.pauseId, decision: "yes", tenantId })
      }), { concurrency: 2, discard: true }), { concurrency: "unbounded", discard: true })
  const seconds = (Date.now() - started) / 1000
  yield* Scope.close(scope, Exit.void)
  yield* Effect.sleep("2 seconds") // the closed backends' counts reach pg_stat_database
  const after = yield* Effect.promise(commits)
  const load = loadavg().map((l) => l.toFixed(2)).join(" ")
  console.log(`sharded bench (Postgres): 3 shards, ${Object.keys(tenants).length} tenants × ${perTenant} executions (half pause once), ${seconds.toFixed(1)} s; ${cpus().length} cores, load ${load}`)
  for (const name of shardNames) {
    const mine = Object.entries(tenants).filter(([, shard]) => shard === name).map(([t]) => t)
    const executions = mine.length * perTenant
    const delta = after[name]! - before[name]!
    console.log(`shard ${name}: tenants ${mine.join(", ")}; ${executions} executions; ${delta} commits (${(delta / executions).toFixed(1)} per execution)`)
  }
  yield* Effect.promise(() =>
    Promise.all(shardNames.map((name) => onShard(shardUrl(name), (sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)))
  )
})

Effect.runPromise(main).catch((e) => {
  console.error(e)
  process.exit(1)
})
