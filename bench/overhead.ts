/**
 * What baton's runtime costs over plain LangGraph: the same 20-node linear
 * graph run to the end, one run at a time, each run on a fresh thread.
 *
 * - baton: `Baton.execute` over `SqliteStores.layer` on a temp file, every
 *   node a `Workflow.step` (so it gets a step context, tracked like a real
 *   baton node). A run pays the thread and record writes, the lease acquire
 *   and release, a fenced checkpoint write per step (each checks the lease
 *   in its own transaction, and renews it when a renewal is due) and the
 *   status change at the end.
 * - saver: the same graph compiled with baton's own checkpoint saver over
 *   `SqliteStores.layerCheckpointStore` (no runtime: no lease, records,
 *   history or step context; unfenced, as no pass hands it a fence), invoked
 *   with `durability: "sync"`. It splits the ratio: baton / saver is what the
 *   runtime adds, saver / plain what the storage costs over the official one.
 * - plain: the same graph compiled with LangGraph's official `SqliteSaver`
 *   (better-sqlite3, WAL, synchronous=NORMAL — the durability baton's SQLite
 *   client uses by default) on its own temp file, invoked with
 *   `durability: "sync"` as baton invokes it.
 *
 * Each round opens the sides on fresh files (outside the timing), then
 * times `BENCH_RUNS` runs of each, the sides taking turns of `BENCH_BLOCK`
 * runs so that load from elsewhere on the machine hits them alike; the order
 * of the sides rotates by round. Round 0 is a warm-up and is not counted.
 *
 *   npm run bench:overhead     (BENCH_ROUNDS=7 BENCH_RUNS=50 BENCH_BLOCK=10 BENCH_NODES=20)
 *   BENCH_CLOCK=cpu npm run bench:overhead   (CPU time instead of wall clock: for a busy machine)
 *   BENCH_STATEMENTS=1 BENCH_ONLY=baton BENCH_ROUNDS=1 npm run bench:overhead   (baton's statements per run)
 *   BENCH_ONLY=baton npm exec -- node --cpu-prof bench/overhead.ts   (one side alone, to profile it)
 *   BENCH_EVENTS=on BENCH_CLOCK=cpu npm run bench:overhead    (baton with live output on: what it costs)
 *   BENCH_HISTORY=off BENCH_CLOCK=cpu npm run bench:overhead   (baton without an ExecutionHistoryStore: what the
 *                                                               history's visit notes and snapshot cost)
 *
 * Prints ms per run of each side per round, the medians, the split
 * (baton / saver, saver / plain) and last `ratio: N.NN` (baton / plain;
 * lower is better, the target is ≤ 1.1).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"
import Database from "better-sqlite3"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { StatementSync } from "node:sqlite"
import { SqliteStores } from "../layers/sqlite/index.ts"
import * as Baton from "../src/runtime/Baton.ts"
import { CheckpointStore } from "../src/stores/CheckpointStore.ts"
import { ExecutionHistoryStore } from "../src/stores/ExecutionHistoryStore.ts"
import * as Workflow from "../src/runtime/Workflow.ts"

const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 7))
const runs = Number(process.env.BENCH_RUNS ?? 50)
const nodes = Number(process.env.BENCH_NODES ?? 20)
/** Runs per block: the sides take turns, a block each. */
const block = Math.max(1, Number(process.env.BENCH_BLOCK ?? 10))
type SideName = "baton" | "saver" | "plain"
const sideNames: ReadonlyArray<SideName> = ["baton", "saver", "plain"]
/** "baton", "saver" or "plain": run only that side (for a profile of it alone); no ratio is printed. */
const only = sideNames.find((name) => name === process.env.BENCH_ONLY)
/**
 * "cpu": time each side by the process's CPU time (user + system) instead of
 * the wall clock — steadier on a machine busy with other work (both sides run
 * in this one process, one at a time; SQLite in WAL with synchronous=NORMAL
 * does not wait on the disk at a commit, so CPU time is the work).
 */
const cpuClock = process.env.BENCH_CLOCK === "cpu"
const clockMs = cpuClock
  ? () => {
    const u = process.cpuUsage()
    return (u.user + u.system) / 1000
  }
  : () => performance.now()
/**
 * BENCH_STATEMENTS=1: counts the statements baton's SQLite client runs
 * (node:sqlite; the plain side uses better-sqlite3 and is not counted) and
 * prints them per run, by statement, after the rounds.
 */
const statements = new Map<string, number>()
if (process.env.BENCH_STATEMENTS === "1") {
  for (const method of ["run", "all", "get", "iterate"] as const) {
    const original = (StatementSync.prototype as any)[method]
    ;(StatementSync.prototype as any)[method] = function(this: StatementSync, ...args: Array<unknown>) {
      const text = this.sourceSQL.replace(/\s+/g, " ").slice(0, 100)
      statements.set(text, (statements.get(text) ?? 0) + 1)
      return original.apply(this, args)
    }
  }
}
const batonRuns = { count: 0 }
/** `BENCH_HISTORY=off`: baton without an `ExecutionHistoryStore` (what the history's visit notes and snapshot cost). */
const withoutHistory = process.env.BENCH_HISTORY === "off"
/** `BENCH_EVENTS=on`: baton with live output on (what it costs: LangGraph's stream instead of invoke, the appends). */
const withEvents = process.env.BENCH_EVENTS === "on"
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bench-overhead-"))

const State = Annotation.Root({
  count: Annotation<number>(),
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})
type S = typeof State.State
type Update = { count: number; log: Array<string> }

/** The node's trivial work: count one and note its name. */
const work = (name: string) => (s: S): Update => ({ count: s.count + 1, log: [name] })

/** The same linear graph of `nodes` nodes; `node` turns a body into the graph's node function. */
const build = (node: (name: string) => any) => {
  let g: any = new StateGraph(State)
  const names = Array.from({ length: nodes }, (_, i) => `n${String(i).padStart(2, "0")}`)
  for (const name of names) g = g.addNode(name, node(name))
  g = g.addEdge(START, names[0]!)
  for (let i = 1; i < names.length; i++) g = g.addEdge(names[i - 1]!, names[i]!)
  return g.addEdge(names[names.length - 1]!, END) as StateGraph<typeof State.spec>
}

const workflow = Workflow.make<S>({
  name: "overhead",
  version: "1",
  graph: build((name) => Workflow.step(async (s: S, _ctx) => work(name)(s)))
})

const check = (output: unknown, side: string) => {
  const o = output as Partial<S> | undefined
  if (o?.count !== nodes || o.log?.length !== nodes) {
    throw new Error(`bench: ${side} ended with ${JSON.stringify(o)}, expected count ${nodes} and ${nodes} log lines`)
  }
}

interface Side {
  /** One run on a fresh thread. */
  readonly run: (i: number) => Promise<void>
  readonly close: () => Promise<void>
}

/** One baton instance (the runtime Layer over SqliteStores) on a fresh file. */
const openBaton = async (file: string): Promise<Side> => {
  const scope = Effect.runSync(Scope.make())
  const stores = SqliteStores.layer({ path: file, synchronous: "NORMAL" })
  const context = await Effect.runPromise(Layer.buildWithScope(
    Baton.layer({ workflows: [workflow], instanceId: "bench", liveOutput: withEvents }).pipe(
      // Without an ExecutionHistoryStore the runtime keeps no history: no visit notes, no snapshot.
      Layer.provide(withoutHistory ? Layer.effectContext(Effect.map(Layer.build(stores), Context.omit(ExecutionHistoryStore))) : stores)
    ),
    scope
  ))
  const baton = Context.get(context, Baton.Baton)
  return {
    run: async () => {
      batonRuns.count++
      const out = await Effect.runPromise(baton.execute(workflow, { count: 0, log: [] }))
      if (out._tag !== "Finished") throw new Error(`bench: a baton run ended ${out._tag}`)
      check(out.output, "baton")
    },
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The same graph on baton's saver alone (SqliteStores' checkpoint store, no runtime) on a fresh file. */
const openSaver = async (file: string, round: number): Promise<Side> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(SqliteStores.layerCheckpointStore({ path: file, synchronous: "NORMAL" }), scope))
  const graph = build((name) => async (s: S) => work(name)(s)).compile({ checkpointer: Context.get(context, CheckpointStore).saver })
  return {
    run: async (i) => {
      const out = await graph.invoke({ count: 0, log: [] }, {
        configurable: { thread_id: `saver-${round}-${i}` },
        durability: "sync"
      })
      check(out, "saver")
    },
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The same graph on LangGraph's official SqliteSaver on a fresh file, WAL + synchronous=NORMAL. */
const openPlain = async (file: string, round: number): Promise<Side> => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  const graph = build((name) => async (s: S) => work(name)(s)).compile({ checkpointer: new SqliteSaver(db) })
  return {
    run: async (i) => {
      const out = await graph.invoke({ count: 0, log: [] }, {
        configurable: { thread_id: `plain-${round}-${i}` },
        durability: "sync"
      })
      check(out, "plain")
    },
    close: async () => {
      db.close()
    }
  }
}

const openers: Record<SideName, (file: string, round: number) => Promise<Side>> = { baton: openBaton, saver: openSaver, plain: openPlain }

/**
 * One round: opens the sides (in the order given) on their own fresh files,
 * runs them in turns of `block` runs (the first side's turn first) until each
 * made `runs` runs, and closes them. Interleaving makes a burst of load from elsewhere on
 * the machine hit both sides alike. Answers ms per run of each side.
 */
const round = async (r: number, sides: ReadonlyArray<SideName>) => {
  const opened: Array<Side> = []
  try {
    for (const name of sides) opened.push(await openers[name](Path.join(dir, `${name}-${r}.db`), r))
    const total = sides.map(() => 0)
    for (let done = 0; done < runs; done += block) {
      for (let k = 0; k < opened.length; k++) {
        const start = clockMs()
        for (let i = done; i < Math.min(runs, done + block); i++) await opened[k].run(i)
        total[k] += clockMs() - start
      }
    }
    return total.map((ms) => ms / runs)
  } finally {
    for (const side of opened) await side.close()
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const main = async () => {
  console.log(`overhead bench: ${nodes}-node linear graph, ${runs} runs per round and side (in turns of ${block}), each a fresh thread; ${rounds} rounds + a warm-up; ${cpuClock ? "CPU" : "wall-clock"} time`)
  const ms: Record<SideName, Array<number>> = { baton: [], saver: [], plain: [] }
  try {
    for (let r = 0; r <= rounds; r++) {
      // The order rotates by round (each side goes first, second and third alike).
      const order = only !== undefined ? [only] : sideNames.map((_, k) => sideNames[(k + r) % sideNames.length]!)
      const measured = await round(r, order)
      const line = order.map((name, k) => `${name} ${measured[k]!.toFixed(2)} ms/run`).join(", ")
      if (r === 0) {
        console.log(`warm-up (not counted, ${order[0]} first): ${line}`)
        continue
      }
      order.forEach((name, k) => ms[name].push(measured[k]!))
      if (only !== undefined) {
        console.log(`round ${r}: ${line}`)
        continue
      }
      console.log(`round ${r} (${order[0]} first): ${line}, ratio ${(ms.baton[r - 1]! / ms.plain[r - 1]!).toFixed(2)}`)
    }
  } finally {
    if (!process.env.BENCH_KEEP) Fs.rmSync(dir, { recursive: true, force: true })
  }
  if (statements.size > 0) {
    const total = [...statements.values()].reduce((a, b) => a + b, 0)
    console.log(`baton's SQL statements per run (${batonRuns.count} runs, migrations included): ${(total / batonRuns.count).toFixed(1)}`)
    for (const [text, n] of [...statements].sort((a, b) => b[1] - a[1])) {
      if (n / batonRuns.count >= 0.5) console.log(`${(n / batonRuns.count).toFixed(1).padStart(7)}  ${text}`)
    }
  }
  if (only !== undefined) return
  const [b, v, p] = [median(ms.baton), median(ms.saver), median(ms.plain)]
  const ratios = ms.baton.map((x, i) => x / ms.plain[i]!)
  console.log(`per-round ratios: ${ratios.map((x) => x.toFixed(2)).join(" ")} (median ${median(ratios).toFixed(2)}; a spread wider than ±5 % means the machine was busy)`)
  console.log(`median: baton (Baton.execute, SqliteStores, fenced) ${b.toFixed(2)} ms/run, saver (LangGraph + baton's saver, no runtime) ${v.toFixed(2)} ms/run, plain (LangGraph + official SqliteSaver) ${p.toFixed(2)} ms/run`)
  console.log(`split: runtime baton/saver ${median(ms.baton.map((x, i) => x / ms.saver[i]!)).toFixed(2)} (+${(b - v).toFixed(2)} ms/run), storage saver/plain ${median(ms.saver.map((x, i) => x / ms.plain[i]!)).toFixed(2)} (+${(v - p).toFixed(2)} ms/run)`)
  console.log(`ratio: ${(b / p).toFixed(2)}`)
}

await main()
