/**
 * Behind pgbouncer in transaction pooling mode (`.ci/run` starts it on
 * 127.0.0.1:6432; `BATON_TEST_PGBOUNCER_URL` names another) a session lock
 * would not die with the process: two real processes over it run their
 * executions as usual, see that at start, fall back to lease expiry and say so
 * in readiness — and a SIGKILLed one's tree moves at its lease's expiry (the
 * default 30 s), not at once and not never.
 *
 * Real processes run on real time: the waits are bounded.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { randomName, withAdmin } from "../pg/db.ts"
import { killAll, start, within } from "./processes.ts"

const worker = fileURLToPath(new URL("./takeoverWorker.ts", import.meta.url))
const bouncer = process.env.BATON_TEST_PGBOUNCER_URL ?? "postgres://postgres@127.0.0.1:6432/test"
const prefix = `${randomName("pgb")}_`
const now = () => performance.timeOrigin + performance.now()

afterAll(async () => {
  killAll()
  await withAdmin((sql) =>
    Effect.flatMap(
      sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE ${`${prefix}%`}`,
      (tables) => Effect.forEach(tables, (t) => sql`DROP TABLE IF EXISTS ${sql(t.tablename)} CASCADE`, { discard: true })
    )
  )
})

describe("behind pgbouncer in transaction mode", () => {
  it("the stores work, takeover falls back to lease expiry, and readiness says why", async () => {
    const env = process.env.BATON_TEST_PG_URL
    process.env.BATON_TEST_PG_URL = bouncer
    const isReady = (l: string) => / ready /.test(l)
    const a = start(worker, ["pg", `prefix=${prefix}`, "pgb-a"], "pgb-a")
    await within(30_000, `A ready over pgbouncer at ${bouncer} (is it running? .ci/run starts it)`, a.until(isReady))
    const b = start(worker, ["pg", `prefix=${prefix}`, "pgb-b"], "pgb-b")
    await within(30_000, "B ready", b.until(isReady))
    if (env === undefined) delete process.env.BATON_TEST_PG_URL
    else process.env.BATON_TEST_PG_URL = env
    for (const p of [a, b]) {
      assert.match(p.lines.find(isReady)!, /ready lease expiry: .*\(30 s\), because .*a pooler in transaction or statement mode/)
    }
    // An execution runs to its end over the pooler.
    b.send("execute pgb-short")
    a.send("execute pgb-t1")
    await within(20_000, "A starts the long step", a.until((l) => l.startsWith("pgb-a run long pgb-t1 ")))
    a.child.kill("SIGKILL")
    const killedAt = now()
    const taken = await within(45_000, "B takes the tree at lease expiry", b.until((l) => l.startsWith("pgb-b run long pgb-t1 ")))
    const after = Number(taken.split(" ").at(-1)) - killedAt
    assert.isAbove(after, 25_000, `moved ${after.toFixed(0)} ms after the kill: no fast path is claimed behind the pooler`)
    assert.isBelow(after, 42_000, "at the lease's expiry (30 s less the time A held it) plus a sweep")
    await within(10_000, "B finishes it", b.until((l) => l.startsWith("pgb-b effect done pgb-t1 ")))

    b.child.kill("SIGKILL")
    await b.exited
  }, 120_000)
})
