/**
 * `baton replay`, `baton golden` and `baton eval` run as real processes
 * against a SQLite file: an execution recorded here on two instances (paused
 * on A, answered on B), replayed in the child process against the workflows
 * module it loads (the recorded code, and a changed one).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Baton, Evaluation } from "../../src/index.ts"
import { makeModel, summarize } from "../runtime/evaluation/fixtures.ts"
import { tempDb, tempDir } from "../sqlite/tmp.ts"
import { baton } from "./cliSuite.ts"

const path = tempDb("cli-eval")
const dir = tempDir("cli-eval-cases")
const same = Path.join(import.meta.dirname, "evalWorkflows.ts")
const changed = Path.join(import.meta.dirname, "evalWorkflowsChanged.ts")
const extra = Path.join(import.meta.dirname, "evalWorkflowsExtra.ts")

/** One execution of `summarize` in tenant acme: paused on instance A, answered on instance B. */
const seed = Effect.gen(function*() {
  const model = makeModel()
  const wf = summarize(model)
  const on = (instanceId: string) => Baton.layer({ workflows: [wf], instanceId }).pipe(Layer.provide(SqliteStores.layer({ path })))
  const a = Context.get(yield* Layer.build(on("A")), Baton.Baton)
  const b = Context.get(yield* Layer.build(on("B")), Baton.Baton)
  const paused = yield* a.execute(wf, { topic: "tides" }, { tenantId: "acme" })
  if (paused._tag !== "Paused") return yield* Effect.die("expected a pause")
  const done = yield* b.resume({ tenantId: "acme", pauseId: paused.pauses[0]!.pauseId, decision: "yes" })
  assert.strictEqual(done._tag, "Finished")
  assert.strictEqual(model.calls, 2)
  return paused.executionId
}).pipe(Effect.scoped)

describe("baton replay, golden and eval over SQLite", () => {
  it.effect("replays, writes a golden case and evaluates it against the recorded and a changed workflow", () =>
    Effect.gen(function*() {
      const executionId = yield* seed
      const stores = ["--sqlite", path]

      const replayed = yield* baton([...stores, "--json", "replay", executionId, "--tenant", "acme", "--workflows", same])
      assert.strictEqual(replayed.code, 0, replayed.stderr)
      assert.strictEqual(replayed.json.passed, true)
      assert.deepStrictEqual([replayed.json.answered, replayed.json.unused, replayed.json.calledForReal], [2, 0, 0])
      assert.deepStrictEqual(replayed.json.actual.output, { topic: "tides", draft: "answer 1 to draft tides", verdict: "yes", summary: "answer 2 to finish answer 1 to draft tides (yes)" })

      const mismatch = yield* baton([...stores, "replay", executionId, "--tenant", "acme", "--workflows", changed])
      assert.strictEqual(mismatch.code, 1, mismatch.stderr)
      assert.include(mismatch.stdout, "FAIL")
      assert.include(mismatch.stdout, `$.summary: expected "answer 2 to finish answer 1 to draft tides (yes)", got "ANSWER 2 TO FINISH ANSWER 1 TO DRAFT TIDES (YES)"`)

      // Without --tenant the execution is found in the one tenant that holds it; in another it is not found (3).
      const anyTenant = yield* baton([...stores, "replay", executionId, "--workflows", same])
      assert.strictEqual(anyTenant.code, 0, anyTenant.stderr)
      const otherTenant = yield* baton([...stores, "replay", executionId, "--tenant", "other", "--workflows", same])
      assert.strictEqual(otherTenant.code, 3, otherTenant.stderr)
      assert.include(otherTenant.stderr, `no execution ${executionId} in tenant other`)

      // A replay that cannot finish (a model call the record has no answer for) is a failure (1), said in one line.
      const unrecorded = yield* baton([...stores, "replay", executionId, "--workflows", extra])
      assert.strictEqual(unrecorded.code, 1, unrecorded.stderr)
      assert.match(unrecorded.stderr, /^baton: Model call 1 of visit 1 of node .finish./, unrecorded.stderr)
      assert.strictEqual(unrecorded.stderr.trim().split("\n").length, 1, `one line, no stack trace: ${unrecorded.stderr}`)

      const file = Path.join(dir, "tides.json")
      const golden = yield* baton([...stores, "golden", executionId, "--tenant", "acme", "--out", file, "--name", "tides"])
      assert.strictEqual(golden.code, 0, golden.stderr)
      assert.include(golden.stdout, "2 model answer(s), 1 decision(s), Finished")
      const written = yield* Evaluation.decodeCase(Fs.readFileSync(file, "utf8"), file)
      assert.deepStrictEqual([written.name, written.workflowName, written.tenantId, written.decisions], ["tides", "summarize", "acme", ["yes"]])

      const passing = yield* baton(["eval", dir, "--workflows", same])
      assert.strictEqual(passing.code, 0, passing.stderr + passing.stdout)
      assert.include(passing.stdout, "PASS tides (summarize)")
      assert.include(passing.stdout, "1 passed, 0 failed")

      const failing = yield* baton(["--json", "eval", file, "--workflows", changed])
      assert.strictEqual(failing.code, 1, failing.stderr)
      assert.deepStrictEqual([failing.json.passed, failing.json.failed], [0, 1])
      assert.strictEqual(failing.json.results[0].diff.length, 1)
    }), 120_000)

  it.effect("bad usage exits 2 and says what to do", () =>
    Effect.gen(function*() {
      const notACase = Path.join(dir, "not-a-case.txt")
      Fs.writeFileSync(notACase, JSON.stringify({ hello: "world" }))
      const [noModule, noWorkflows, badCase, noFlag] = yield* Effect.all([
        baton(["eval", dir, "--workflows", Path.join(dir, "missing.ts")]),
        baton(["eval", dir, "--workflows", Path.join(import.meta.dirname, "httpCalls.ts")]),
        baton(["eval", notACase, "--workflows", same]),
        baton(["eval", dir])
      ])
      assert.strictEqual(noModule.code, 2, noModule.stderr)
      assert.include(noModule.stderr, "could not be imported")
      assert.strictEqual(noWorkflows.code, 2, noWorkflows.stderr)
      assert.include(noWorkflows.stderr, "it exports no workflow")
      assert.strictEqual(badCase.code, 2, badCase.stderr)
      assert.include(badCase.stderr, "is not a golden case")
      assert.strictEqual(noFlag.code, 2, noFlag.stderr)
    }), 120_000)
})
