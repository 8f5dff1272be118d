/**
 * `baton schedules …` as a real process over a SQLite file: list, show,
 * pause, resume and delete a schedule the library created, with `--json`,
 * tenant and owner scoping and exit codes (3 unknown, 4 another owner).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as Schedules from "../../src/runtime/Schedules.ts"
import { report } from "../runtime/schedules/fixtures.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { baton } from "./cliSuite.ts"

const path = tempDb("cli-schedules")

describe("baton schedules (SQLite)", () => {
  it.effect("list, show, pause, resume and delete; another owner is refused, an unknown id is not found", () =>
    Effect.gen(function*() {
      const api = yield* Schedules.make
      yield* api.create("nightly", report, { log: [] }, { tenantId: "acme", ownerId: "ops", cron: "0 2 * * *", timeZone: "Europe/Berlin" })
      yield* api.create("quarter", report, { log: [] }, { tenantId: "acme", every: "15 minutes" })
      const at = ["--sqlite", path, "--json"]
      const listed = yield* baton([...at, "schedules", "list", "--tenant", "acme", "--owner", "ops"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.deepStrictEqual(listed.json.map((s: any) => s.scheduleId), ["nightly", "quarter"])
      assert.deepStrictEqual((yield* baton([...at, "schedules", "list", "--tenant", "acme"])).json.map((s: any) => s.scheduleId), ["quarter"], "without the owner, only the unowned")
      const paused = yield* baton([...at, "schedules", "pause", "nightly", "--tenant", "acme", "--owner", "ops"])
      assert.deepStrictEqual([paused.code, paused.json.paused], [0, true])
      const shown = yield* baton(["--sqlite", path, "schedules", "show", "nightly", "--tenant", "acme", "--owner", "ops"])
      assert.strictEqual(shown.code, 0)
      assert.match(shown.stdout, /0 2 \* \* \* \(Europe\/Berlin\)\s+true/)
      const resumed = yield* baton([...at, "schedules", "resume", "nightly", "--tenant", "acme", "--owner", "ops"])
      assert.deepStrictEqual([resumed.code, resumed.json.paused], [0, false])
      const otherOwner = yield* baton([...at, "schedules", "delete", "nightly", "--tenant", "acme", "--owner", "eve"])
      assert.strictEqual(otherOwner.code, 4)
      assert.match(otherOwner.stderr, /ScheduleOwnerError|another owner/)
      const deleted = yield* baton([...at, "schedules", "delete", "nightly", "--tenant", "acme", "--owner", "ops"])
      assert.deepStrictEqual([deleted.code, deleted.json], [0, { deleted: true }])
      const gone = yield* baton([...at, "schedules", "show", "nightly", "--tenant", "acme"])
      assert.strictEqual(gone.code, 3)
      assert.match(gone.stderr, /No schedule nightly exists for tenant acme/)
    }).pipe(Effect.provide(SqliteStores.layer({ path }))), { timeout: 60_000 })
})
