/**
 * The `baton` executable over tenants spread over three SQLite files
 * (`--shards FILE`, see cliSuite): the suite's tenants acme, beta and
 * default each on a shard of their own, so every command that names a
 * tenant must route to its shard and every fleet-wide one must fan out.
 * Then what a shards file that cannot work and a shard that is down do.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ShardedStores } from "../../layers/sharded/index.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { Baton } from "../../src/index.ts"
import { approval, makeSideEffects } from "../runtime/fixtures.ts"
import { tempDir } from "../sqlite/tmp.ts"
import { baton, cliSuite } from "./cliSuite.ts"

const dir = tempDir("cli-sharded")
const route = { tenants: { acme: "a", beta: "b" }, default: "c" }
const file = Path.join(dir, "shards.json")
// SQLite paths relative to the file's folder.
Fs.writeFileSync(file, JSON.stringify({ shards: ["a", "b", "c"].map((name) => ({ name, sqlite: `${name}.sqlite` })), route }))
const shardLayer = (name: string) => SqliteStores.layer({ path: Path.join(dir, `${name}.sqlite`) })

cliSuite({
  name: "three SQLite shards",
  args: () => ["--shards", file],
  env: () => ({ BATON_SHARDS: file }),
  stores: () => ShardedStores.layer({ shards: ["a", "b", "c"].map((name) => ({ name, layer: shardLayer(name) })), route })
})

describe("baton CLI over shards: each tenant's rows on its own shard", () => {
  it.effect("a shard's file, opened alone, holds only its tenants' executions", () =>
    Effect.gen(function*() {
      const lists = yield* Effect.all(["a", "b", "c"].map((name) => baton(["--sqlite", Path.join(dir, `${name}.sqlite`), "--json", "list"])))
      const tenants = lists.map((l) => [...new Set(l.json.map((r: any) => r.tenantId))])
      assert.deepStrictEqual(tenants, [["acme"], ["beta"], ["default"]])
    }), 120_000)

  it.effect("describe prints each shard's database and the route", () =>
    Effect.gen(function*() {
      const [described, table] = yield* Effect.all([baton(["--shards", file, "--json", "describe"]), baton(["--shards", file, "describe"])])
      assert.strictEqual(described.code, 0, described.stderr)
      assert.strictEqual(described.json.stores.backend, "sharded")
      assert.deepStrictEqual(described.json.stores.shards.map((s: any) => [s.name, s.backend, s.location]), [
        ["a", "sqlite", Path.join(dir, "a.sqlite")],
        ["b", "sqlite", Path.join(dir, "b.sqlite")],
        ["c", "sqlite", Path.join(dir, "c.sqlite")]
      ])
      assert.deepStrictEqual(described.json.stores.route, route)
      assert.include(table.stdout, "shard b: sqlite")
      assert.include(table.stdout, "tenant acme → a")
      assert.include(table.stdout, "any other tenant → c")
    }), 120_000)

  it.effect("check probes every shard and reports each", () =>
    Effect.gen(function*() {
      const checked = yield* baton(["--shards", file, "--json", "check", "--instances", "1"])
      assert.include([0, 6], checked.code, checked.stderr)
      assert.deepStrictEqual(checked.json.shards.map((s: any) => [s.name, s.stores._tag, s.stores.path]), [
        ["a", "Sqlite", Path.join(dir, "a.sqlite")],
        ["b", "Sqlite", Path.join(dir, "b.sqlite")],
        ["c", "Sqlite", Path.join(dir, "c.sqlite")]
      ])
    }), 120_000)
})

describe("baton CLI over a single shard", () => {
  it.effect("a shards file of one shard is a fleet of one database", () =>
    Effect.gen(function*() {
      const one = Path.join(dir, "one.json")
      Fs.writeFileSync(one, JSON.stringify({ shards: [{ name: "only", sqlite: "a.sqlite" }], route: { default: "only" } }))
      const [viaShards, direct] = yield* Effect.all([baton(["--shards", one, "--json", "list"]), baton(["--sqlite", Path.join(dir, "a.sqlite"), "--json", "list"])])
      assert.strictEqual(viaShards.code, 0, viaShards.stderr)
      assert.deepStrictEqual(viaShards.json, direct.json)
    }), 120_000)
})

describe("baton CLI with a shards file that cannot work", () => {
  const write = (name: string, content: string) => {
    const path = Path.join(dir, name)
    Fs.writeFileSync(path, content)
    return path
  }
  it.effect("exit 2, the message naming the field to fix", () =>
    Effect.gen(function*() {
      const cases: Array<[string, string]> = [
        [Path.join(dir, "missing.json"), "cannot be read"],
        [write("notjson.json", "{shards"), "is not JSON"],
        [write("none.json", JSON.stringify({ shards: [], route: { default: "a" } })), "shards: give at least one shard"],
        [write("twice.json", JSON.stringify({ shards: [{ name: "a", sqlite: "a.sqlite" }, { name: "a", sqlite: "b.sqlite" }], route: { default: "a" } })), `shards[1].name: shard "a" is named twice`],
        [write("both.json", JSON.stringify({ shards: [{ name: "a", sqlite: "a.sqlite", pg: "postgres://127.0.0.1/x" }], route: { default: "a" } })), `shards[0]: give one of "sqlite"`],
        [write("nodefault.json", JSON.stringify({ shards: [{ name: "a", sqlite: "a.sqlite" }], route: { default: "z" } })), `route.default: "z" is not a shard (the shards are a)`],
        [write("badtenant.json", JSON.stringify({ shards: [{ name: "a", sqlite: "a.sqlite" }], route: { tenants: { acme: "q" }, default: "a" } })), `route.tenants.acme: "q" is not a shard`],
        [write("sametables.json", JSON.stringify({ shards: [{ name: "a", sqlite: "a.sqlite" }, { name: "a2", sqlite: "./a.sqlite" }], route: { default: "a" } })), `shards[1]: the same tables as shards[0] ("a")`],
        [write("extra.json", JSON.stringify({ shards: [{ name: "a", sqlite: "a.sqlite", size: 3 }], route: { default: "a" } })), "size"]
      ]
      const ran = yield* Effect.all(cases.map(([path]) => baton(["--shards", path, "status"])), { concurrency: 4 })
      ran.forEach((r, i) => {
        assert.strictEqual(r.code, 2, `${cases[i]![0]}: ${r.stderr}`)
        assert.include(r.stderr, `shards file ${cases[i]![0]}: `)
        assert.include(r.stderr, cases[i]![1])
      })
      const several = yield* baton(["--shards", file, "--sqlite", Path.join(dir, "a.sqlite"), "status"])
      assert.strictEqual(several.code, 2)
      assert.include(several.stderr, "give one of --sqlite, --pg and --shards")
      // describe does not take a file that cannot work for no stores named.
      const described = yield* baton(["--shards", cases[2]![0], "describe"])
      assert.strictEqual(described.code, 2, described.stdout)
      assert.include(described.stderr, "shards: give at least one shard")
    }), 120_000)
})

describe("baton CLI over shards with one shard down", () => {
  it.effect("a fleet-wide list answers from the other shards and warns of the one it could not read; the down shard's tenant gets a store failure", () =>
    Effect.gen(function*() {
      const review = approval(makeSideEffects())
      const downDir = tempDir("cli-sharded-down")
      const up = Path.join(downDir, "up.sqlite")
      yield* Effect.gen(function*() {
        yield* (yield* Baton.Baton).execute(review, { log: [] }, { tenantId: "acme", threadId: "t-up" })
      }).pipe(Effect.provide(Baton.layer({ workflows: [review] }).pipe(Layer.provide(SqliteStores.layer({ path: up })))))
      // Shard "gone" is a Postgres server on a local port where nothing listens: its bundle cannot be built.
      const shardsFile = Path.join(downDir, "shards.json")
      const gone = { name: "gone", pg: "postgres://postgres@127.0.0.1:1/baton" }
      Fs.writeFileSync(shardsFile, JSON.stringify({ shards: [{ name: "up", sqlite: "up.sqlite" }, gone], route: { tenants: { lost: "gone" }, default: "up" } }))
      const [all, lost, acme, lostPauses, showAnywhere, checked] = yield* Effect.all([
        baton(["--shards", shardsFile, "--json", "list"]),
        baton(["--shards", shardsFile, "--json", "list", "--tenant", "lost"]),
        baton(["--shards", shardsFile, "--json", "list", "--tenant", "acme"]),
        baton(["--shards", shardsFile, "--json", "pauses", "--tenant", "lost"]),
        baton(["--shards", shardsFile, "show", "exec_nope"]),
        baton(["--shards", shardsFile, "--json", "check", "--instances", "1"])
      ], { concurrency: 3 })
      // What it could read is printed; the exit code says it is not the whole fleet's.
      assert.strictEqual(all.code, 5, all.stderr)
      assert.deepStrictEqual(all.json.map((r: any) => r.threadId), ["t-up"])
      assert.include(all.stderr, "baton: warning: ")
      assert.include(all.stderr, `the answer above is not the whole fleet's: shard "gone" could not be read`)
      // A tenant named goes to its shard: a down shard's tenant is a store failure, not an empty list.
      assert.strictEqual(lostPauses.code, 5, lostPauses.stderr)
      assert.include(lostPauses.stderr, `"gone"`)
      // Not found on the shards that answered is not "in no tenant".
      assert.strictEqual(showAnywhere.code, 5, showAnywhere.stderr)
      assert.include(showAnywhere.stderr, `no execution exec_nope in any tenant, on the shards that could be read: shard "gone" could not be read`)
      // check reports the shard it probed and the one it could not.
      assert.strictEqual(checked.code, 5, checked.stderr)
      assert.deepStrictEqual(checked.json.shards.map((s: any) => [s.name, s.stores?._tag, typeof s.error]), [["up", "Sqlite", "undefined"], ["gone", undefined, "string"]])
      assert.include(checked.stderr, `shard "gone" could not be checked`)
      assert.strictEqual(lost.code, 5, `the down shard's tenant: a store failed (${lost.stderr})`)
      assert.include(lost.stderr, `"gone"`)
      // migrate does not call a fleet migrated while one of its databases is not.
      const migrated = yield* baton(["--shards", shardsFile, "--json", "migrate"])
      assert.strictEqual(migrated.code, 5, migrated.stderr)
      assert.isFalse(migrated.json.migrated)
      assert.deepStrictEqual(migrated.json.shards.map((s: any) => [s.name, s.migrated]), [["up", true], ["gone", false]])
      assert.include(migrated.stderr, "1 of 2 shard(s) not migrated (gone)")
      assert.strictEqual(acme.code, 0, acme.stderr)
      assert.deepStrictEqual(acme.json.map((r: any) => r.threadId), ["t-up"])
      // Every shard's bundle is built when the command starts: the warning that one is down is printed, and is true.
      assert.match(acme.stderr, /^(baton: warning: ShardedStores: shard "gone" is down[^\n]*\n)*$/)
    }), 120_000)
})

describe("baton CLI over shards that cannot be opened", () => {
  it.effect("check opens each shard as a one-database check does: a file that is no database is reported, exit 5; with every shard down no message speaks of the others", () =>
    Effect.gen(function*() {
      const garbageDir = tempDir("cli-sharded-garbage")
      Fs.writeFileSync(Path.join(garbageDir, "g.sqlite"), "this is not a database\n".repeat(100))
      const mixed = Path.join(garbageDir, "mixed.json")
      Fs.writeFileSync(mixed, JSON.stringify({ shards: [{ name: "up", sqlite: "up.sqlite" }, { name: "g", sqlite: "g.sqlite" }], route: { default: "up" } }))
      const checked = yield* baton(["--shards", mixed, "--json", "check", "--instances", "1"])
      assert.strictEqual(checked.code, 5, checked.stderr)
      assert.deepStrictEqual(checked.json.shards.map((s: any) => [s.name, typeof s.error]), [["up", "undefined"], ["g", "string"]])
      assert.include(checked.stderr, `shard "g" could not be checked; the others were: their reports are above`)

      // A shard named wrongly is fixed in the file: exit 2, in the file's words.
      const noFolder = Path.join(garbageDir, "nofolder.json")
      Fs.writeFileSync(noFolder, JSON.stringify({ shards: [{ name: "up", sqlite: "up.sqlite" }, { name: "nd", sqlite: "no/such/folder/x.sqlite" }], route: { default: "up" } }))
      const [statusNoFolder, migrateNoFolder] = yield* Effect.all([baton(["--shards", noFolder, "status"]), baton(["--shards", noFolder, "migrate"])])
      assert.strictEqual(statusNoFolder.code, 2, statusNoFolder.stderr)
      assert.include(statusNoFolder.stderr, `shards file ${noFolder}: shards[1] ("nd"): \`sqlite\` is "`)
      assert.strictEqual(migrateNoFolder.code, 2, migrateNoFolder.stderr)
      assert.include(migrateNoFolder.stderr, "1 of 2 shard(s) not migrated (nd): fix what each one's error names, then run migrate again; the others are at version")

      const allDown = Path.join(garbageDir, "alldown.json")
      Fs.writeFileSync(allDown, JSON.stringify({ shards: [{ name: "x", pg: "postgres://postgres@127.0.0.1:1/x" }, { name: "y", sqlite: "g.sqlite" }], route: { default: "x" } }))
      const [migrated, checkedAll] = yield* Effect.all([baton(["--shards", allDown, "migrate"]), baton(["--shards", allDown, "check"])])
      assert.strictEqual(migrated.code, 5, migrated.stderr)
      assert.include(migrated.stderr, "2 of 2 shard(s) not migrated (x, y): run migrate again once they are reachable\n")
      assert.strictEqual(checkedAll.code, 5, checkedAll.stderr)
      assert.include(checkedAll.stderr, `shard "x", "y" could not be checked\n`)
    }), 120_000)
})
