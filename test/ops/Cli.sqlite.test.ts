/** The `baton` executable against a SQLite file (see cliSuite). */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { baton, cliSuite } from "./cliSuite.ts"

const review = approval(makeSideEffects())

const path = tempDb("cli")
cliSuite({
  name: "SQLite",
  args: () => ["--sqlite", path],
  env: () => ({ BATON_SQLITE: path }),
  envAlias: () => ({ BATON_SQLITE_PATH: path }),
  stores: () => SqliteStores.layer({ path })
})

/**
 * A fleet whose stores carry a table prefix of their own (`tablePrefix`, what
 * deployments sharing a database differ by): the CLI reads them with
 * `--prefix` or `BATON_TABLE_PREFIX` (the variable the app's layerConfig
 * reads), and without it sees the default prefix's tables, not the app's.
 */
describe("baton CLI over SQLite with a table prefix", () => {
  const prefixed = tempDb("cli-prefix")
  it.effect("--prefix and BATON_TABLE_PREFIX name the app's tables", () =>
    Effect.gen(function*() {
      yield* Effect.gen(function*() {
        yield* (yield* Baton.Baton).execute(review, { log: [] }, { tenantId: "acme", threadId: "t-prefixed" })
      }).pipe(Effect.provide(Baton.layer({ workflows: [review] }).pipe(Layer.provide(SqliteStores.layer({ path: prefixed, tablePrefix: "app_" })))))
      const [byFlag, byEnv, unprefixed] = yield* Effect.all([
        baton(["--sqlite", prefixed, "--prefix", "app_", "--json", "list"]),
        baton(["--sqlite", prefixed, "--json", "list"], { BATON_TABLE_PREFIX: "app_" }),
        baton(["--sqlite", prefixed, "--json", "list"])
      ])
      assert.strictEqual(byFlag.code, 0, byFlag.stderr)
      assert.deepStrictEqual(byFlag.json.map((r: any) => r.threadId), ["t-prefixed"])
      assert.deepStrictEqual(byEnv.json?.map((r: any) => r.threadId), ["t-prefixed"], byEnv.stderr)
      assert.deepStrictEqual(unprefixed.json, [], "the default prefix's tables are another deployment's")
    }), 120_000)
})

/**
 * Stores the CLI was pointed at wrongly are bad usage (exit 2, the message
 * naming what to fix), not "a store failed" (5), which scripts read as a
 * store that may come back.
 */
describe("baton CLI with stores named wrongly", () => {
  it.effect("a SQLite path in a folder that does not exist, or a malformed Postgres URL → exit 2", () =>
    Effect.gen(function*() {
      const noFolder = yield* baton(["status", "--sqlite", "/no/such/folder/baton.sqlite"])
      assert.strictEqual(noFolder.code, 2, noFolder.stderr)
      assert.include(noFolder.stderr, "/no/such/folder")
      const badUrl = yield* baton(["status", "--pg", "not-a-url"])
      assert.strictEqual(badUrl.code, 2, badUrl.stderr)
    }))
})
