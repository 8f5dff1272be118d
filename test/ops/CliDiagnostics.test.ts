/**
 * `baton describe` and `baton check` as real processes: describe names each
 * value's source (a `BATON_*` variable, or the default) and the stores' (flag
 * or variable); check prints the warnings' stable ids and exits 6 when there
 * are any, 0 when there are none — over SQLite, and over Postgres through
 * pgbouncer in transaction mode (which `.ci/run` starts).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomName, withAdmin } from "../pg/db.ts"
import { bouncerUrls, bouncersUp } from "../pg/bouncers.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { baton } from "./cliSuite.ts"

const path = tempDb("cli-diag")
const prefix = `${randomName("diag")}_`

afterAll(() =>
  withAdmin((sql) =>
    Effect.flatMap(
      sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE ${`${prefix}%`}`,
      (tables) => Effect.forEach(tables, (t) => sql`DROP TABLE IF EXISTS ${sql(t.tablename)} CASCADE`, { discard: true })
    )
  ))

describe("baton describe", () => {
  it.effect("every option with its source; the stores with theirs", () =>
    Effect.gen(function*() {
      const ran = yield* baton(["--json", "describe"], { BATON_LEASE: "40 seconds", BATON_SQLITE: path })
      assert.strictEqual(ran.code, 0, ran.stderr)
      const byField = Object.fromEntries(ran.json.settings.map((s: any) => [s.field, s]))
      assert.deepInclude(byField.lease, { key: "BATON_LEASE", value: 40_000, source: "environment" })
      assert.deepInclude(byField.sweepInterval, { value: 30_000, source: "default" })
      assert.deepInclude(ran.json.stores, { backend: "sqlite", location: path, source: "environment" })
      const flagged = yield* baton(["--pg", "postgres://app:secret@127.0.0.1:5432/test", "describe"])
      assert.strictEqual(flagged.code, 0, flagged.stderr)
      assert.match(flagged.stdout, /^lease\s+BATON_LEASE\s+30s\s+default$/m)
      assert.match(flagged.stdout, /stores: pg postgres:\/\/app:\*\*\*@127\.0\.0\.1:5432\/test \(flag\)/)
      assert.notInclude(flagged.stdout, "secret")
    }))

  it.effect("a value that cannot work is refused naming the field (usage, 2)", () =>
    Effect.gen(function*() {
      const ran = yield* baton(["describe"], { BATON_LEASE: "10 seconds", BATON_RENEW_EVERY: "20 seconds" })
      assert.strictEqual(ran.code, 2)
      assert.match(ran.stderr, /renewEvery/)
    }))
})

describe("baton check", () => {
  it.effect("no warnings: exit 0; a warning: its id and exit 6", () =>
    Effect.gen(function*() {
      const clean = yield* baton(["--sqlite", path, "check"])
      assert.strictEqual(clean.code, 0, clean.stdout + clean.stderr)
      assert.match(clean.stdout, /stores: SQLite .* on \S+/)
      assert.match(clean.stdout, /no warnings/)
      const warned = yield* baton(["--sqlite", path, "--json", "check"], { BATON_RENEW_EVERY: "15 seconds", BATON_REQUEST_RETENTION: "2 days" })
      assert.strictEqual(warned.code, 6, warned.stderr)
      assert.deepStrictEqual(warned.json.warnings.map((w: any) => w.id), ["renew-at-least-half-lease", "request-retention-exceeds-pause-retention"])
      const human = yield* baton(["--sqlite", path, "check"], { BATON_SWEEP_INTERVAL: "1 minute" })
      assert.strictEqual(human.code, 6)
      assert.match(human.stdout, /^warning sweep-interval-exceeds-lease: sweepInterval \(1m\) is longer than the lease/m)
    }))

  it.effect("over pgbouncer in transaction mode: pgbouncer-transaction-mode", () =>
    Effect.gen(function*() {
      yield* bouncersUp
      const ran = yield* baton(["--pg", bouncerUrls.transaction, "--json", "check"], { BATON_LEASE: "24 hours", BATON_TABLE_PREFIX: prefix })
      assert.strictEqual(ran.code, 6, ran.stderr)
      assert.strictEqual(ran.json.stores.pooling, "transaction")
      assert.include(ran.json.warnings.map((w: any) => w.id), "pgbouncer-transaction-mode")
    }))

  it.effect("--instances must be a whole number ≥ 1", () =>
    Effect.gen(function*() {
      const ran = yield* baton(["--sqlite", path, "check", "--instances", "0"])
      assert.strictEqual(ran.code, 2)
    }))
})
