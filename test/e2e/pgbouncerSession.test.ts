/**
 * Behind pgbouncer in session mode (`.ci/run` starts it on 127.0.0.1:6433;
 * `BATON_TEST_PGBOUNCER_SESSION_URL` names another) everything works as
 * over a direct connection: the pooler keeps one server session per client
 * connection and resets it (`DISCARD ALL`, which frees advisory locks) when
 * the client goes, so the liveness lock dies with its process. Two real
 * processes run with crash takeover on; a SIGKILLed one's tree moves at once
 * (not at its 30 s lease's expiry), and each effect happens once.
 *
 * Real processes run on real time: the waits are bounded.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { bouncerUrls, requireBouncers, testPrefix } from "../pg/bouncers.ts"
import { killAll, start, within } from "./processes.ts"

const worker = fileURLToPath(new URL("./takeoverWorker.ts", import.meta.url))
const prefix = testPrefix("pgbs")
const now = () => performance.timeOrigin + performance.now()

beforeAll(requireBouncers, 20_000)
afterAll(() => killAll())

describe("behind pgbouncer in session mode", () => {
  it("crash takeover works as direct: a SIGKILLed instance's tree moves at once", async () => {
    const env = process.env.BATON_TEST_PG_URL
    process.env.BATON_TEST_PG_URL = bouncerUrls.session
    const isReady = (l: string) => / ready /.test(l)
    const a = start(worker, ["pg", `prefix=${prefix}`, "pgbs-a"], "pgbs-a")
    await within(30_000, `A ready over pgbouncer at ${bouncerUrls.session}`, a.until(isReady))
    const b = start(worker, ["pg", `prefix=${prefix}`, "pgbs-b"], "pgbs-b")
    await within(30_000, "B ready", b.until(isReady))
    if (env === undefined) delete process.env.BATON_TEST_PG_URL
    else process.env.BATON_TEST_PG_URL = env
    for (const p of [a, b]) assert.match(p.lines.find(isReady)!, /ready liveness \(/, "crash takeover on, as over a direct connection")
    a.send("execute pgbs-t1")
    const longOnA = await within(20_000, "A starts the long step", a.until((l) => l.startsWith("pgbs-a run long pgbs-t1 ")))
    a.child.kill("SIGKILL")
    const killedAt = now()
    const longOnB = await within(20_000, "B takes the tree", b.until((l) => l.startsWith("pgbs-b run long pgbs-t1 ")))
    const took = Number(longOnB.split(" ").at(-1)) - killedAt
    assert.isBelow(took, 5_000, `SIGKILL → B's first step in ${took.toFixed(0)} ms, on a 30 s lease: not at lease expiry`)
    assert.strictEqual(longOnB.split(" ")[4], longOnA.split(" ")[4], "the interrupted step runs again under its idempotency key")
    await within(10_000, "B finishes it", b.until((l) => l.startsWith("pgbs-b effect done pgbs-t1 ")))
    const effects = b.lines.concat(a.lines).filter((l) => l.includes(" effect "))
    const keys = effects.map((l) => l.split(" ")[4])
    assert.strictEqual(new Set(keys).size, keys.length, `each effect once: ${effects.join(" | ")}`)
    b.child.kill("SIGKILL")
    await b.exited
  }, 120_000)
})
