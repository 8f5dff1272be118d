/**
 * A schedule across real processes on Postgres: three instances, a tick
 * every 2 s; the instance running the ticks (the leader) is SIGKILLed; the
 * others take over within its 2 s lease. Every tick from the first to the
 * last one fired started exactly one execution: its request key names one
 * execution, recorded once, and no tick is missing.
 *
 * Real processes run on real time: the waits are bounded.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { fileURLToPath } from "node:url"
import { PgStores } from "../../layers/pg/index.ts"
import * as Schedules from "../../src/runtime/Schedules.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import { testSchemas, url } from "../pg/db.ts"
import { killAll, type Proc, sleep, start, within } from "./processes.ts"
import { tickJob } from "./tickJob.ts"

const worker = fileURLToPath(new URL("./scheduleWorker.ts", import.meta.url))
const schemas = testSchemas("schedules_e2e")

afterAll(() => killAll())

const runs = (procs: ReadonlyArray<Proc>) => procs.flatMap((p) => p.lines.filter((l) => l.includes(" run ")))

describe("schedules across real processes (Postgres)", () => {
  it.live("three instances, the leader SIGKILLed: one execution per tick, none missing", () => {
    const schema = schemas()
    const stores = PgStores.layer({ url, schema, maxConnections: 2, wakeups: false })
    return Effect.gen(function*() {
      const procs: Array<Proc> = []
      for (const id of ["a", "b", "c"]) {
        const p = start(worker, [schema, id], id)
        yield* Effect.promise(() => within(30_000, `${id} ready`, p.until((l) => l === `${id} ready`)))
        procs.push(p)
      }
      const schedules = yield* Schedules.make
      const first = Date.now() + 2_000
      yield* schedules.create("every-2s", tickJob(() => {}), { log: [] }, { tenantId: "acme", every: "2 seconds", startAt: first })
      // Three ticks, then kill the instance that ran the last one (the leader starts the ticks it fires).
      yield* Effect.promise(() => within(20_000, "three ticks", (async () => {
        while (runs(procs).length < 3) await sleep(50)
      })()))
      const leaderId = runs(procs).at(-1)!.split(" ")[0]!
      const leader = procs.find((p) => p.id === leaderId)!
      leader.child.kill("SIGKILL")
      const before = runs(procs).length
      yield* Effect.promise(() => within(30_000, "four more ticks after the kill", (async () => {
        while (runs(procs.filter((p) => p !== leader)).length < 4) await sleep(50)
      })()))
      yield* schedules.pause("every-2s", { tenantId: "acme" })
      yield* Effect.promise(() => sleep(1_000)) // a tick under way when the pause was written ends
      const view = yield* schedules.get("every-2s", { tenantId: "acme" })
      assert.isNotNull(view.lastTickAt)
      const ticks = Math.round((view.lastTickAt! - first) / 2_000) + 1
      assert.strictEqual(view.started, ticks, `every tick from the first to the last started (${JSON.stringify(view)})`)
      assert.strictEqual(view.notStarted, 0)
      const requests = yield* RequestStore
      const records = yield* RecordStore
      const executions = new Set<string>()
      for (let k = 0; k < ticks; k++) {
        const kept = yield* requests.get("acme", `@baton/schedule/every-2s/${first + k * 2_000}`, Date.now())
        assert.isTrue(Option.isSome(kept), `tick ${k} has its key`)
        const executionId = (Option.getOrThrow(kept).handle as { executionId: string }).executionId
        assert.isTrue(Option.isSome(yield* records.getRecord("acme", executionId)), `tick ${k}'s execution is recorded`)
        executions.add(executionId)
      }
      assert.strictEqual(executions.size, ticks, "one execution per tick")
      assert.isTrue(runs(procs).length >= before + 4)
      const others = procs.filter((p) => p !== leader).map((p) => p.id)
      assert.isTrue(runs(procs).slice(before).some((l) => others.includes(l.split(" ")[0]!)), "another instance fired after the kill")
    }).pipe(Effect.provide(stores))
  }, { timeout: 120_000 })
})
