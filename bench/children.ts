/**
 * `npm run bench:children` — one parent fans out `BENCH_CHILDREN` (1,000)
 * trivial children over two baton instances in one process, on SQLite (one
 * temp file, the instances sharing its stores) and on Postgres (one schema,
 * each instance its own pool, NOTIFY wake-ups), the stores taking turns
 * round by round:
 *
 * - any: placement "any" — the children go through the ChildQueueStore and
 *   both instances claim them (each up to 16 at once, no step cap), the
 *   parent resting until the last one ends;
 * - parent: placement "parent" — the same children run inside the parent's
 *   step on its own instance (the baseline: no queue, no claims).
 *
 * Prints per store: children/s of both, launch→start p50/p99 of the queued
 * children (from the parent's launch call to each child's first step: it
 * includes the wait behind earlier children), and the time from the last
 * child's end to the parent's next step. Round 0 is a warm-up.
 *
 *   npm run bench:children   (BENCH_ROUNDS=3 BENCH_CHILDREN=1000; Postgres: BATON_TEST_PG_URL or the local test database)
 *
 * Last line: `ratio: N.NN` — children/s of "any" over "parent" (median over
 * rounds and stores; higher is better: what spreading over two instances
 * gains, or costs, against running them all in the parent's step).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { PgStores } from "../layers/pg/index.ts"
import { SqliteStores } from "../layers/sqlite/index.ts"
import * as Baton from "../src/runtime/Baton.ts"
import type { Placement } from "../src/runtime/Children.ts"
import * as Workflow from "../src/runtime/Workflow.ts"

const rounds = Math.max(2, Number(process.env.BENCH_ROUNDS ?? 3))
const children = Number(process.env.BENCH_CHILDREN ?? 1000)
const url = process.env.BATON_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-children-"))

/** What one run saw, in `performance.now()` ms. */
interface Timing {
  launchedAt: number
  readonly startedAt: Array<number>
  readonly endedAt: Array<number>
  continuedAt: number
}
let timing: Timing = { launchedAt: 0, startedAt: [], endedAt: [], continuedAt: 0 }

const ChildState = Annotation.Root({ i: Annotation<number>(), out: Annotation<number>() })
const child = Workflow.make({
  name: "bench-child",
  version: "1",
  graph: new StateGraph(ChildState)
    .addNode("work", Workflow.step((s: { i: number }) => {
      timing.startedAt[s.i] = performance.now()
      const out = { out: s.i + 1 }
      timing.endedAt[s.i] = performance.now()
      return out
    }))
    .addEdge(START, "work")
    .addEdge("work", END)
})

const ParentState = Annotation.Root({ n: Annotation<number>(), placement: Annotation<Placement>(), sum: Annotation<number>() })
const parent = Workflow.make({
  name: "bench-parent",
  version: "1",
  children: [child],
  graph: new StateGraph(ParentState)
    .addNode("fan", Workflow.step(async (s: { n: number; placement: Placement }, ctx) => {
      if (timing.launchedAt === 0) timing.launchedAt = performance.now()
      const outs = await ctx.launch(child, Array.from({ length: s.n }, (_, i) => ({ i })), { placement: s.placement })
      return { sum: outs.reduce<number>((a, o) => a + (o as { out: number }).out, 0) }
    }))
    .addNode("next", Workflow.step(() => {
      timing.continuedAt = performance.now()
      return {}
    }))
    .addEdge(START, "fan")
    .addEdge("fan", "next")
    .addEdge("next", END)
})

type Kind = "sqlite" | "pg"

const admin = <A>(f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(url), maxConnections: 1 }), f)).pipe(Effect.provide(Reactivity.layer))
  )

/** Two instances over fresh stores of `kind`; `close` ends both. */
const open = async (kind: Kind, round: number) => {
  const scope = Effect.runSync(Scope.make())
  const instance = (id: string, stores: Layer.Layer<any, any>) =>
    Effect.runPromise(Layer.buildWithScope(Baton.layer({ workflows: [parent], instanceId: id }).pipe(Layer.provide(stores)), scope))
      .then((ctx) => Context.get(ctx as Context.Context<Baton.Baton>, Baton.Baton))
  let batons: Array<Context.Service.Shape<typeof Baton.Baton>>
  if (kind === "sqlite") {
    // One connection shared by both instances: node:sqlite is synchronous, two connections in one process would wait on each other.
    const shared = await Effect.runPromise(Layer.buildWithScope(
      SqliteStores.layer({ path: Path.join(dir, `round-${round}.sqlite`), synchronous: "NORMAL" }),
      scope
    ))
    const stores = Layer.succeedContext(shared)
    batons = [await instance("a", stores), await instance("b", stores)]
  } else {
    const schema = `baton_bench_children_${process.pid}_${round}`
    await admin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`)
    // Added first, run last: the schema goes once both instances closed.
    Effect.runSync(Scope.addFinalizer(scope, Effect.promise(() => admin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))))
    const stores = () => PgStores.layer({ url, schema, maxConnections: 8 })
    batons = [await instance("a", stores()), await instance("b", stores())]
  }
  return { batons, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN
}
/** The middle value (the mean of the two middle ones for an even count). */
const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

interface Result {
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly lastEndToContinue: number
}

const runOnce = async (kind: Kind, round: number, placement: Placement): Promise<Result> => {
  const { batons, close } = await open(kind, round * 2 + (placement === "any" ? 0 : 1))
  try {
    timing = { launchedAt: 0, startedAt: [], endedAt: [], continuedAt: 0 }
    const out = await Effect.runPromise(batons[0]!.execute(parent, { n: children, placement }))
    if (out._tag !== "Finished") throw new Error(`bench: the parent ended ${out._tag}`)
    const sum = (out.output as { sum: number }).sum
    if (sum !== (children * (children + 1)) / 2) throw new Error(`bench: wrong outputs (sum ${sum})`)
    const lastEnd = Math.max(...timing.endedAt)
    const waits = timing.startedAt.map((t) => t - timing.launchedAt)
    return {
      perSecond: children / ((lastEnd - timing.launchedAt) / 1000),
      p50: quantile(waits, 0.5),
      p99: quantile(waits, 0.99),
      lastEndToContinue: timing.continuedAt - lastEnd
    }
  } finally {
    await close()
  }
}

const main = async () => {
  console.log(`bench:children — ${children} children, 2 instances, ${rounds - 1} counted rounds (round 0 warms up); ${Os.cpus().length} cores, load ${Os.loadavg()[0]!.toFixed(2)}`)
  const results: Record<Kind, Record<Placement, Array<Result>>> = { sqlite: { any: [], parent: [] }, pg: { any: [], parent: [] } }
  const ratios: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    for (const kind of (round % 2 === 0 ? ["sqlite", "pg"] : ["pg", "sqlite"]) as Array<Kind>) {
      const order: Array<Placement> = round % 2 === 0 ? ["any", "parent"] : ["parent", "any"]
      const got: Partial<Record<Placement, Result>> = {}
      for (const placement of order) got[placement] = await runOnce(kind, round, placement)
      const any = got.any!
      const inline = got.parent!
      console.log(
        `round ${round} ${kind}: any ${any.perSecond.toFixed(0)} children/s (launch→start p50 ${any.p50.toFixed(1)} ms, p99 ${any.p99.toFixed(1)} ms, ` +
          `last end→parent continues ${any.lastEndToContinue.toFixed(1)} ms) | parent ${inline.perSecond.toFixed(0)} children/s (last end→continues ${inline.lastEndToContinue.toFixed(1)} ms)` +
          (round === 0 ? "  [warm-up]" : "")
      )
      if (round === 0) continue
      results[kind].any.push(any)
      results[kind].parent.push(inline)
      ratios.push(any.perSecond / inline.perSecond)
    }
  }
  for (const kind of ["sqlite", "pg"] as const) {
    const a = results[kind].any
    const p = results[kind].parent
    console.log(
      `${kind} median: any ${median(a.map((r) => r.perSecond)).toFixed(0)} children/s, launch→start p50 ${median(a.map((r) => r.p50)).toFixed(1)} ms ` +
        `p99 ${median(a.map((r) => r.p99)).toFixed(1)} ms, last end→parent continues ${median(a.map((r) => r.lastEndToContinue)).toFixed(1)} ms; ` +
        `parent ${median(p.map((r) => r.perSecond)).toFixed(0)} children/s`
    )
  }
  Fs.rmSync(dir, { recursive: true, force: true })
  console.log(`ratio: ${median(ratios).toFixed(2)}`)
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
