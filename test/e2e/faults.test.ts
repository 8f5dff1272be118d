/**
 * Fault probes of child executions and undo, with real processes over a
 * Postgres schema, through the package's public API (`faultsWorker.ts`):
 *
 * - a parent whose instance is SIGKILLed while its 20 children (placement
 *   `"any"`) run, and wait queued, on two other processes: every child applies
 *   its effect once under its one idempotency key, another process finishes
 *   the parent, and no execution stays Running; and again with the parent's
 *   instance SIGKILLed inside its launching step and a worker SIGKILLed
 *   mid-child (the other worker finishes every child, each effect once per key);
 * - the holder of a tree SIGKILLed inside an undo: the other process takes the
 *   tree, skips the undo already compensated, runs the interrupted one again
 *   under its key and the rest, and the execution ends Failed with every
 *   compensation applied once per key; no execution stays Running.
 *
 * Real processes run on real time: the waits are bounded.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { fileURLToPath } from "node:url"
import { PgStores } from "../../layers/pg/index.ts"
import { testSchemas, url } from "../pg/db.ts"
import { killAll, type Proc, sleep, start, within } from "./processes.ts"

const worker = fileURLToPath(new URL("./faultsWorker.ts", import.meta.url))
const pgSchema = testSchemas("faults")
const now = () => performance.timeOrigin + performance.now()

afterAll(() => killAll())

type Row = Record<string, unknown>

/** The schema migrated and the ledger made, and the test's own plain-SQL view of both. */
const makeDb = async () => {
  const schema = pgSchema()
  const runtime = ManagedRuntime.make(PgStores.layer({ url, schema, wakeups: false, maxConnections: 2, applicationName: "faults-observer" }))
  const all = (text: string) => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Row>(text))).then((rows) => [...rows])
  for (const t of ["f_effects", "f_comp"]) {
    await all(`CREATE TABLE ${t} (key TEXT PRIMARY KEY, node TEXT NOT NULL, execution TEXT NOT NULL, instance TEXT NOT NULL)`)
  }
  for (const t of ["f_runs", "f_comp_runs"]) {
    await all(`CREATE TABLE ${t} (seq BIGSERIAL PRIMARY KEY, key TEXT NOT NULL, node TEXT NOT NULL, instance TEXT NOT NULL)`)
  }
  return { schema, all, close: () => runtime.dispose() }
}

const startWorker = (schema: string, id: string, maxClaimed: number): Proc => start(worker, [schema, id, String(maxClaimed)], id)
const ready = (procs: ReadonlyArray<Proc>) =>
  within(30_000, "every process is ready", Promise.all(procs.map((p) => p.until((l) => l === `${p.id} ready`))))

interface Summary {
  readonly executionId: string
  readonly parentExecutionId: string | null
  readonly threadId: string
  readonly workflowName: string
  readonly status: string
  readonly error: { readonly tag: string; readonly message: string } | null
}

/** Every execution, through `Baton.list` on a live process. */
const list = async (p: Proc): Promise<Array<Summary>> => {
  const pending = p.next((l) => l.startsWith(`${p.id} list `))
  p.send("list")
  const line = await within(10_000, `${p.id} lists the executions`, pending)
  return JSON.parse(line.slice(`${p.id} list `.length)) as Array<Summary>
}

const status = async (p: Proc, executionId: string): Promise<Summary & { readonly unwinding: unknown; readonly holder: unknown }> => {
  const pending = p.next((l) => l.startsWith(`${p.id} status `))
  p.send(`status ${executionId}`)
  const line = await within(10_000, `${p.id} reads the status`, pending)
  return JSON.parse(line.slice(`${p.id} status `.length))
}

/** Polls `Baton.list` on `p` until `check` holds of it; rejects naming `what` after `ms` of real time. */
const listUntil = async (p: Proc, what: string, ms: number, check: (all: Array<Summary>) => boolean): Promise<Array<Summary>> => {
  const deadline = Date.now() + ms
  for (;;) {
    const all = await list(p)
    if (check(all)) return all
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s (executions: ${JSON.stringify(all.map((e) => [e.workflowName, e.status]))})`)
    await sleep(250)
  }
}

const linesOf = (procs: ReadonlyArray<Proc>, match: (l: string) => boolean) => procs.flatMap((p) => p.lines.filter(match))
const n = (rows: Array<Row>) => Number(rows[0]!["n"])

/**
 * A parent `fan` started on `p` (which claims no children) launches 20 children, placement "any"; `w1` and `w2`
 * claim 4 each at a time, so children also wait queued. `p` is SIGKILLed once a child runs on a worker, or as soon
 * as it starts the launching step (the kill lands in the launch or just after it); with `killWorker`, `w1` is then
 * SIGKILLed as soon as it runs a child, and `w2` is left to finish.
 */
const childrenScenario = async (options: { readonly killParent: "children running" | "launching"; readonly killWorker: boolean }) => {
  const began = Date.now()
  const db = await makeDb()
  try {
    const p = startWorker(db.schema, "p", 0)
    const w1 = startWorker(db.schema, "w1", 4)
    const w2 = startWorker(db.schema, "w2", 4)
    await ready([p, w1, w2])
    p.send("fan fan-1")
    const isLeafRun = (l: string) => / run leaf /.test(l)
    if (options.killParent === "launching") {
      await within(20_000, "p starts the launching step", p.until((l) => l.startsWith("p run fan ")))
    } else {
      await within(20_000, "a child runs on a worker", Promise.race([w1.until(isLeafRun), w2.until(isLeafRun)]))
    }
    p.child.kill("SIGKILL")
    await p.exited
    const runningAtKill = linesOf([w1, w2], isLeafRun).length
    if (options.killParent === "children running") assert.isBelow(runningAtKill, 20, "children were still queued when the parent's instance died")
    const live = options.killWorker ? [w2] : [w1, w2]
    let killedMidChild = 0
    if (options.killWorker) {
      await within(20_000, "a child runs on w1", w1.until(isLeafRun))
      w1.child.kill("SIGKILL")
      await w1.exited
      const applied = new Set((await db.all("SELECT key FROM f_effects WHERE instance = 'w1'")).map((r) => String(r["key"])))
      killedMidChild = linesOf([w1], isLeafRun).map((l) => l.split(" ")[3]!).filter((k) => !applied.has(k)).length
    }

    const all = await listUntil(live[0]!, "the parent finishes", 40_000, (all) =>
      all.some((e) => e.threadId === "fan-1" && e.status === "Finished") && all.every((e) => e.status !== "Running"))
    const root = all.find((e) => e.threadId === "fan-1")!
    const children = all.filter((e) => e.parentExecutionId === root.executionId)
    assert.strictEqual(children.length, 20, "20 child executions on record")
    assert.deepStrictEqual(all.filter((e) => e.status !== "Finished"), [], "every execution Finished, none Running")
    assert.strictEqual(all.length, 21, "the parent and its 20 children, nothing else")

    // Each child: its effect applied under its one key (the outside world dedups by it).
    const leafEffects = await db.all("SELECT key, execution, instance FROM f_effects WHERE node = 'leaf'")
    assert.strictEqual(leafEffects.length, 20, "20 child effects, one per key")
    assert.deepStrictEqual(
      new Set(leafEffects.map((r) => String(r["execution"]))),
      new Set(children.map((c) => c.executionId)),
      "one key per child execution, every child's effect applied"
    )
    assert.deepStrictEqual(leafEffects.filter((r) => r["instance"] === "p"), [], "no child ran on the parent's process")
    // Runs that reached the effect: once per key, except a run on the killed worker that died between its
    // effect and its checkpoint (then it runs again under the same key: at least once).
    const twice = await db.all("SELECT key, array_agg(instance ORDER BY seq) AS instances FROM f_runs WHERE node = 'leaf' GROUP BY key HAVING count(*) > 1")
    for (const r of twice) {
      const instances = r["instances"] as Array<string>
      assert.isTrue(options.killWorker && instances.length === 2 && instances[0] === "w1", `a child's effect ran again only after its worker died: ${JSON.stringify(r)}`)
    }
    // The parent: its launching step's effect (after the launch) and its next step, once each, by a live process.
    const parentEffects = await db.all("SELECT node, instance FROM f_effects WHERE node IN ('fan', 'after') ORDER BY node")
    assert.deepStrictEqual(parentEffects.map((r) => r["node"]), ["after", "fan"])
    for (const r of parentEffects) assert.include(live.map((l) => l.id), r["instance"], "the parent was continued by a live process")
    assert.strictEqual(n(await db.all("SELECT count(*) AS n FROM f_runs WHERE node IN ('fan', 'after')")), 2, "the parent's effects ran once each")
    console.log(
      `faults children (parent killed ${options.killParent}${options.killWorker ? ", w1 killed mid-child" : ""}): ` +
        `${((Date.now() - began) / 1000).toFixed(1)} s; ${runningAtKill} child step(s) started at the parent's kill; ` +
        `${killedMidChild} child step(s) killed on w1 before their effect, ${twice.length} effect(s) run twice under their key; ` +
        `children's effects on w1 ${leafEffects.filter((r) => r["instance"] === "w1").length}, on w2 ${leafEffects.filter((r) => r["instance"] === "w2").length}`
    )
    for (const w of live) w.child.kill("SIGKILL")
    await Promise.all(live.map((w) => w.exited))
  } finally {
    await db.close()
  }
}

describe("fault probes of children and undo, real processes over Postgres", () => {
  it("the parent's instance SIGKILLed while its 20 children run on two others: each child's effect once, the parent finished elsewhere, nothing Running", async () => {
    await childrenScenario({ killParent: "children running", killWorker: false })
  }, 90_000)

  it("the parent's instance SIGKILLed in its launching step, then a worker SIGKILLed mid-child: 20 children, each child's effect once per key, nothing Running", async () => {
    await childrenScenario({ killParent: "launching", killWorker: true })
  }, 90_000)

  it("the holder SIGKILLed inside an undo: the other process finishes the unwinding, each compensation applied once per key, Failed, nothing Running", async () => {
    const began = Date.now()
    const db = await makeDb()
    try {
      const h = startWorker(db.schema, "h", 0)
      const t = startWorker(db.schema, "t", 0)
      await ready([h, t])
      h.send("undo u-1")
      // c's undo ran and was marked compensated; b's undo is in its minute-long sleep on h.
      await within(20_000, "h starts the undo of b", h.until((l) => l.startsWith("h undo-run b ")))
      h.child.kill("SIGKILL")
      const killedAt = now()
      await h.exited
      await within(10_000, "t runs the undo of b again", t.until((l) => l.startsWith("t undo-run b ")))
      const took = now() - killedAt
      await within(10_000, "t runs the undo of a", t.until((l) => l.startsWith("t undo-run a ")))

      const all = await listUntil(t, "the execution ends", 20_000, (all) =>
        all.some((e) => e.threadId === "u-1" && e.status !== "Running") && all.every((e) => e.status !== "Running"))
      assert.strictEqual(all.length, 1)
      const record = all[0]!
      assert.strictEqual(record.status, "Failed")
      assert.strictEqual(record.error?.tag, "ExecutionFailedError")
      assert.include(record.error?.message ?? "", "d fails", "the step's error, and no failed undo")
      assert.notInclude(record.error?.message ?? "", "undo of step", "no undo failed")
      const view = await status(t, record.executionId)
      assert.strictEqual(view.status, "Failed")
      assert.isNull(view.unwinding, "the unwinding is over")
      assert.isNull(view.holder, "no holder once it ended")

      // Forward: a, b, c applied once each, d ran once (the taking holder runs no step of an unwinding tree).
      const effects = await db.all("SELECT key, node FROM f_effects ORDER BY node")
      assert.deepStrictEqual(effects.map((r) => r["node"]), ["a", "b", "c"])
      assert.strictEqual(n(await db.all("SELECT count(*) AS n FROM f_runs")), 3, "every forward effect ran once")
      assert.strictEqual(linesOf([h, t], (l) => / run d /.test(l)).length, 1, "d ran once")

      // Undo is at least once: b's undo was started twice (on h, killed inside, then on t) under one key.
      // "Once" is what the outside world sees: each compensation's effect applied once per key.
      const starts = (node: string) => linesOf([h, t], (l) => l.includes(` undo-run ${node} `)).map((l) => l.split(" ")[0])
      assert.deepStrictEqual(starts("c"), ["h"], "c's undo, compensated before the kill, is not run again")
      assert.deepStrictEqual(starts("b"), ["h", "t"], "b's undo, killed inside, is run again by the next holder")
      assert.deepStrictEqual(starts("a"), ["t"])
      const bKeys = linesOf([h, t], (l) => l.includes(" undo-run b ")).map((l) => l.split(" ")[3])
      assert.strictEqual(new Set(bKeys).size, 1, "b's undo has one key on every try and instance")
      const comp = await db.all("SELECT key, node, instance FROM f_comp ORDER BY node")
      assert.deepStrictEqual(comp.map((r) => [r["node"], r["instance"]]), [["a", "t"], ["b", "t"], ["c", "h"]], "every compensation applied once")
      for (const r of comp) {
        assert.strictEqual(r["key"], `${String(effects.find((e) => e["node"] === r["node"])!["key"])}:undo`, "the undo's key is its step's key + :undo")
      }
      assert.deepStrictEqual(
        (await db.all("SELECT node FROM f_comp_runs ORDER BY seq")).map((r) => r["node"]),
        ["c", "b", "a"],
        "each compensation's effect reached once, last in first out"
      )
      console.log(`faults undo: ${((Date.now() - began) / 1000).toFixed(1)} s; SIGKILL → the next holder's undo of b in ${took.toFixed(0)} ms`)
      t.child.kill("SIGKILL")
      await t.exited
    } finally {
      await db.close()
    }
  }, 90_000)
})
