/**
 * Request key races on SQLite: two instances, each with its own connection
 * to one file (see test/runtime/calls/RequestsRaces.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { killAll, start } from "../e2e/processes.ts"
import { oneStartPerKey } from "../runtime/calls/RequestsRaces.ts"
import { tempDb } from "./tmp.ts"

afterAll(killAll)

const path = tempDb("requests")
const worker = fileURLToPath(new URL("./requestsWorker.ts", import.meta.url))

/** Rows of the shared file, on a read-only connection of the test's own. */
const rows = (file: string, sql: string) => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return db.prepare(sql).all() as Array<Record<string, unknown>>
  } finally {
    db.close()
  }
}

describe("request keys on SQLite, two connections", () => {
  it.live("8 concurrent start/execute calls of one request key across two instances: one execution, its step once; 8 racing keyed resumes: one continuation", () =>
    oneStartPerKey(SqliteStores.layer({ path }), SqliteStores.layer({ path }), 8), { timeout: 60_000 })

  it.live("a process SIGKILLed mid-step after its keyed start was recorded: a second process calling with the key gets that execution, finished, started once", () =>
    Effect.gen(function*() {
      const file = tempDb("requests-kill")
      const first = start(worker, [file, "proc-a", "order-1"], "proc-a")
      const started = yield* Effect.promise(() => first.until((l) => l.startsWith("started ")))
      const [, executionId, threadId] = started.split(" ")
      yield* Effect.promise(() => first.until((l) => l.startsWith("working ")))
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)
      const second = start(worker, [file, "proc-b", "order-1", "--finish"], "proc-b")
      const again = yield* Effect.promise(() => second.until((l) => l.startsWith("started ") || l.startsWith("failed ")))
      assert.strictEqual(again, `started ${executionId} ${threadId}`, "the same handle")
      const out = yield* Effect.promise(() => second.until((l) => l.startsWith("output ") || l.startsWith("failed ")))
      assert.strictEqual(out, `output ${executionId} Finished {"log":["worked@proc-b"]}`, second.stderr())
      assert.strictEqual(yield* Effect.promise(() => second.exited), 0)
      assert.deepStrictEqual(rows(file, "SELECT execution_id FROM baton_records").map((r) => r.execution_id), [executionId], "one execution recorded")
      const working = [...first.lines, ...second.lines].filter((l) => l.startsWith("working "))
      assert.deepStrictEqual(working.map((l) => l.split(" ")[1]), [executionId, executionId], "the step ran in A, then again (once) in B")
    }), { timeout: 30_000 })
})
