/**
 * The suite of the `baton` executable, run by Cli.sqlite.test.ts and
 * Cli.pg.test.ts: the executable run as a real process (this Node) against a SQLite
 * file and against a Postgres schema of its own: every command, `--json`
 * parsed, exit codes checked. The fleet's rows are made first in this
 * process with the library (on the TestClock: its lease of a Running tree
 * expired long ago by the real clock the CLI reads, so the tree is an orphan).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { Baton, RecordStore } from "../../src/index.ts"
import { approval, makeSideEffects, slow } from "../runtime/fixtures.ts"

const main = Path.join(import.meta.dirname, "../../src/cli/main.ts")

interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  readonly json: any
}

/** Runs `baton …args` as a process and waits for it to exit. */
export const baton = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<Ran>((resolve) => {
      execFile(process.execPath, [main, ...args], { timeout: 60_000, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1
        let json: any = undefined
        try {
          json = JSON.parse(stdout)
        } catch {}
        resolve({ code, stdout, stderr, json })
      })
    })
  )

const fx = makeSideEffects()
const review = approval(fx)
const long = slow(fx, "45 seconds")

/**
 * The rows: t1 finished, t2 and t3 paused (tenant acme), one slow tree Running whose holder is gone,
 * and in tenant beta a Finished record under t1's execution id (ids are unique per tenant only).
 */
const seed = (stores: Layer.Layer<any, any>) =>
  Effect.gen(function*() {
    const b = yield* Baton.Baton
    const outs = []
    for (const threadId of ["t1", "t2", "t3"]) outs.push(yield* b.execute(review, { log: [] }, { tenantId: "acme", threadId }))
    const first = outs[0]!
    assert.strictEqual(first._tag, "Paused")
    if (first._tag === "Paused") yield* b.resume({ tenantId: "acme", pauseId: first.pauses[0]!.pauseId, decision: "yes" })
    const records = yield* RecordStore.RecordStore
    const finished = yield* records.getRecord("acme", first.executionId)
    assert.isTrue(Option.isSome(finished))
    if (Option.isSome(finished)) yield* records.createRecord({ ...finished.value, tenantId: "beta" })
    // Running on the TestClock: its lease expired at 30 s after 1970 by the real clock.
    yield* b.start(long, { log: [] }, { threadId: "t-slow" })
    const page = yield* b.list({ tenantId: "default", status: "Running" })
    assert.strictEqual(page.executions.length, 1)
    return { finishedId: first.executionId, paused: outs.slice(1) as Array<{ readonly executionId: string; readonly threadId: string; readonly pauses: ReadonlyArray<{ readonly pauseId: string }> }> }
  }).pipe(Effect.provide(Baton.layer({ workflows: [review, long] }).pipe(Layer.provideMerge(stores))))

/** The suite, over one target: its CLI flags and the same stores for the seeding. */
export const cliSuite = (target: {
  readonly name: string
  readonly args: () => ReadonlyArray<string>
  /** The same target named by environment variables instead of flags. */
  readonly env: () => Record<string, string>
  /** Another set of variables that names it too (the app's own variable, read as a fallback). */
  readonly envAlias?: () => Record<string, string>
  readonly stores: () => Layer.Layer<any, any>
}) => {
  describe(`baton CLI over ${target.name}`, () => {
    let finishedId = ""
    let paused: Array<{ readonly executionId: string; readonly threadId: string; readonly pauses: ReadonlyArray<{ readonly pauseId: string }> }> = []

    it.effect("seeds the fleet's rows with the library", () =>
      Effect.map(seed(target.stores()), (s) => {
        paused = s.paused
        finishedId = s.finishedId
        assert.strictEqual(paused.length, 2)
      }))

    it.effect("migrate, status, list, show, leases, pauses, sweep — as tables and as JSON", () =>
      Effect.gen(function*() {
        const args = target.args()
        const migrated = yield* baton([...args, "--json", "migrate"])
        assert.strictEqual(migrated.code, 0, migrated.stderr)
        assert.isTrue(migrated.json.migrated)
        assert.isAbove(migrated.json.version, 0)

        const [status, statusTable, all, pausedList, listTable, shown, missing, anyTenant, twoTenants, nowhere, leases, pauses, sweep, shownTable] = yield* Effect.all([
          baton([...args, "--json", "status"]),
          baton([...args, "status"]),
          baton([...args, "--json", "list"]),
          baton([...args, "--json", "list", "--status", "Paused", "--tenant", "acme"]),
          baton([...args, "list", "--tenant", "acme"]),
          baton([...args, "--json", "show", paused[0]!.executionId, "--tenant", "acme"]),
          baton([...args, "show", "exec_nope", "--tenant", "acme"]),
          baton([...args, "--json", "show", paused[0]!.executionId]),
          baton([...args, "show", finishedId]),
          baton([...args, "show", "exec_nope"]),
          baton([...args, "--json", "leases"]),
          baton([...args, "--json", "pauses", "--tenant", "acme"]),
          baton([...args, "--json", "sweep"]),
          baton([...args, "show", paused[0]!.executionId, "--tenant", "acme"])
        ], { concurrency: 4 })
        assert.strictEqual(status.code, 0, status.stderr)
        assert.deepStrictEqual(status.json.executions, { Running: 1, Paused: 2, Finished: 2, Failed: 0, Cancelled: 0 })
        assert.strictEqual(status.json.orphans, 1)
        assert.match(statusTable.stdout, /STATUS\s+EXECUTIONS\n.*Running\s+1/s)

        assert.strictEqual(all.json.length, 5)
        // --json speaks the API's vocabulary.
        assert.deepStrictEqual(Object.keys(all.json[0]).sort(), ["error", "executionId", "rootExecutionId", "status", "tenantId", "threadId", "updatedAt", "workflowName"])
        assert.deepStrictEqual(pausedList.json.map((r: any) => r.threadId).sort(), ["t2", "t3"])
        assert.strictEqual(typeof all.json[0].updatedAt, "number")
        assert.isTrue(all.json.every((r: any) => r.error === null || typeof r.error === "string"), "error is text or null")
        assert.isTrue(all.json.some((r: any) => r.error === null), "an execution without an error has null, not empty text")
        assert.match(listTable.stdout, /^TENANT\s+EXECUTION\s+THREAD\s+WORKFLOW\s+STATUS/)
        assert.strictEqual(listTable.stdout.trim().split("\n").length, 4, "a header and three rows")

        assert.strictEqual(shown.code, 0, shown.stderr)
        assert.strictEqual(shown.json.status, "Paused")
        assert.deepStrictEqual(shown.json.pendingPauses.map((p: any) => p.pauseId), [paused[0]!.pauses[0]!.pauseId])
        // --json gives every time as the API does: epoch milliseconds, in the record and in its pauses alike.
        assert.strictEqual(typeof shown.json.createdAt, "number")
        assert.strictEqual(typeof shown.json.pendingPauses[0].createdAt, "number")
        // The table shows the whole record too: where it sits in its tree, its workflow's version, when it began.
        assert.strictEqual(shownTable.code, 0, shownTable.stderr)
        const fields = new Map(shownTable.stdout.split("\n").map((line) => line.trim().split(/\s{2,}/)).filter((cells) => cells.length === 2).map(([k, v]) => [k!, v!]))
        assert.strictEqual(fields.get("status"), "Paused")
        assert.strictEqual(fields.get("version"), shown.json.workflowVersion)
        assert.strictEqual(fields.get("depth"), String(shown.json.depth))
        assert.strictEqual(fields.get("parent"), "-", "a root has no parent")
        assert.strictEqual(fields.get("created"), new Date(shown.json.createdAt).toISOString())
        assert.strictEqual(missing.code, 3)
        assert.include(missing.stderr, "no execution exec_nope")
        // Without --tenant, show finds an execution in whichever tenant holds it; one id in two tenants needs --tenant.
        assert.strictEqual(anyTenant.code, 0, anyTenant.stderr)
        assert.deepStrictEqual([anyTenant.json.tenantId, anyTenant.json.executionId, anyTenant.json.status], ["acme", paused[0]!.executionId, "Paused"])
        assert.strictEqual(twoTenants.code, 2)
        assert.include(twoTenants.stderr, `execution ${finishedId} is in 2 tenants (acme, beta): give --tenant T to pick one`)
        assert.strictEqual(nowhere.code, 3)
        assert.include(nowhere.stderr, "no execution exec_nope in any tenant")

        assert.strictEqual(leases.json.length, 1)
        assert.isFalse(leases.json[0].live)
        // A Running tree without a lease row: its lease fields are null in JSON (no row), not empty text.
        assert.deepStrictEqual([leases.json[0].holder, leases.json[0].epoch, leases.json[0].expiresAt], [null, null, null])

        assert.deepStrictEqual(pauses.json.map((p: any) => p.threadId).sort(), ["t2", "t3"])
        assert.deepStrictEqual(pauses.json[0].payload, { question: "send it?" })
        assert.strictEqual(typeof pauses.json[0].createdAt, "number")

        assert.strictEqual(sweep.json.orphans, 1)
        assert.strictEqual(sweep.json.strandedDecisions, 0)
      }), 120_000)

    it.effect("resume records a decision once; cancel ends a paused thread; exit codes for scripts", () =>
      Effect.gen(function*() {
        const args = target.args()
        const pauseId = paused[0]!.pauses[0]!.pauseId
        const resumed = yield* baton([...args, "--json", "resume", pauseId, `"yes"`, "--tenant", "acme"])
        assert.strictEqual(resumed.code, 0, resumed.stderr)
        assert.isTrue(resumed.json.recorded)
        const again = yield* baton([...args, "resume", pauseId, `"no"`, "--tenant", "acme"])
        assert.strictEqual(again.code, 4, "a pause is answered once")
        const [unknown, notJson, sweep, cancelUnknown, badStatus, noStores, fromEnv, zeroLimit, negativeLimit] = yield* Effect.all([
          baton([...args, "resume", "pause_nope", `"no"`, "--tenant", "acme"]),
          baton([...args, "resume", pauseId, "{yes", "--tenant", "acme"]),
          baton([...args, "--json", "sweep"]),
          baton([...args, "cancel", "t-none", "--tenant", "acme"]),
          baton([...args, "list", "--status", "Sleeping"]),
          baton(["status"]),
          baton(["--json", "leases"], target.env()),
          baton([...args, "--json", "list", "--limit", "0"]),
          baton([...args, "--json", "list", "--limit", "-1"])
        ], { concurrency: 4 })
        assert.strictEqual(unknown.code, 3)
        assert.strictEqual(notJson.code, 2)
        assert.strictEqual(sweep.json.strandedDecisions, 1, "the decision waits for an instance's sweep")

        const cancelled = yield* baton([...args, "--json", "cancel", "t3", "--tenant", "acme"])
        assert.strictEqual(cancelled.code, 0, cancelled.stderr)
        assert.isTrue(cancelled.json.cancelled)
        const status = yield* baton([...args, "--json", "status"])
        assert.strictEqual(status.json.executions.Cancelled, 1)
        assert.strictEqual(cancelUnknown.code, 3)
        assert.strictEqual(badStatus.code, 2)
        assert.strictEqual(noStores.code, 2)
        assert.include(noStores.stderr, "--sqlite PATH or --pg URL")
        assert.strictEqual(fromEnv.code, 0, fromEnv.stderr)
        assert.strictEqual(fromEnv.json.length, 1, "the stores named by environment variables")
        if (target.envAlias !== undefined) {
          const fromAlias = yield* baton(["--json", "leases"], target.envAlias())
          assert.strictEqual(fromAlias.code, 0, fromAlias.stderr)
          assert.strictEqual(fromAlias.json.length, 1, "the stores named by the app's own variable")
        }
        // A limit below 1 is bad usage (-1 used to list every row but the last one).
        for (const bad of [zeroLimit, negativeLimit]) {
          assert.strictEqual(bad.code, 2, bad.stdout)
          assert.include(bad.stderr, "Invalid value for flag --limit")
          assert.include(bad.stderr, "a whole number ≥ 1")
        }
      }), 120_000)

    it.effect("signal keeps a signal for a running thread; a finished or unknown thread is refused with nothing written", () =>
      Effect.gen(function*() {
        const args = target.args()
        const [sent, finished, unknown, notJson] = yield* Effect.all([
          baton([...args, "--json", "signal", "t-slow", "approve", `{"by":"cli"}`]),
          baton([...args, "signal", "t1", "approve", "{}", "--tenant", "acme"]),
          baton([...args, "signal", "t-none", "approve", "{}"]),
          baton([...args, "signal", "t-slow", "approve", "{nope"])
        ], { concurrency: 2 })
        assert.strictEqual(sent.code, 0, sent.stderr)
        assert.deepStrictEqual([sent.json.sent, sent.json.threadId, sent.json.name, typeof sent.json.seq], [true, "t-slow", "approve", "number"])
        assert.strictEqual(finished.code, 4, "a finished thread: conflict")
        assert.include(finished.stderr, "Nothing was written")
        assert.strictEqual(unknown.code, 3)
        assert.strictEqual(notJson.code, 2)
      }), 120_000)

    it.effect("checkpoints lists a thread's state history, newest first, a page at a time; another tenant's thread is not found", () =>
      Effect.gen(function*() {
        const args = target.args()
        const page = yield* baton([...args, "--json", "checkpoints", "t1", "--tenant", "acme", "--limit", "2"])
        assert.strictEqual(page.code, 0, page.stderr)
        assert.strictEqual(page.json.checkpoints.length, 2)
        assert.isTrue(page.json.checkpoints.every((c: any) => c.executionId === finishedId), "written by t1's execution")
        assert.isAbove(page.json.checkpoints[0].step, page.json.checkpoints[1].step, "newest first")
        const next = yield* baton([...args, "--json", "checkpoints", "t1", "--tenant", "acme", "--cursor", page.json.next])
        assert.strictEqual(next.code, 0, next.stderr)
        assert.strictEqual(next.json.checkpoints[next.json.checkpoints.length - 1].source, "input", "down to the input checkpoint")
        const human = yield* baton([...args, "checkpoints", "t1", "--tenant", "acme"])
        assert.include(human.stdout, "CHECKPOINT ")
        const other = yield* baton([...args, "checkpoints", "t1", "--tenant", "nobody"])
        assert.strictEqual(other.code, 3, other.stderr)
      }), 120_000)
  })
}