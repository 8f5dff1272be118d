/**
 * The versioned schema on SQLite: a new file, a re-open, an upgrade in place
 * from an older version, two connections migrating one new file at once, and
 * table prefixes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Path from "node:path"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { SqlLeaseStore, SqlMigrations, SqlTables } from "../../layers/sql/index.ts"
import { SqliteClient, SqliteStores } from "../../layers/sqlite/index.ts"
import { tempDir } from "./tmp.ts"

const dir = tempDir("migrations")
let n = 0
const freshPath = () => Path.join(dir, `migrations-${++n}.db`)

const clientIn = (scope: Scope.Scope, options: SqliteClient.SqliteClientOptions) =>
  Effect.map(Layer.buildWithScope(SqliteClient.layer(options), scope), (ctx) => Context.get(ctx, SqlClient.SqlClient))

const names = (sql: SqlClient.SqlClient, type: "table" | "index" | "view" | "trigger") =>
  Effect.map(
    sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = ${type} AND name NOT LIKE 'sqlite_%' ORDER BY name`,
    (rows) => rows.map((r) => r.name)
  )

const allIds = SqlMigrations.migrations.map(([id, name]) => [id, name] as const)

describe("SqlMigrations on SQLite", () => {
  it.effect("a new file gets every migration, in order, and every table carries tenant_id where the contract is per tenant", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path: freshPath() })
      const applied = yield* SqlMigrations.migrate().pipe(Effect.provideService(SqlClient.SqlClient, sql))
      assert.deepStrictEqual(applied, allIds)
      assert.strictEqual(yield* SqlMigrations.currentVersion().pipe(Effect.provideService(SqlClient.SqlClient, sql)), SqlMigrations.latestVersion)
      const tables = yield* SqlTables.make()
      const expected = Object.entries(tables).filter(([k]) => k !== "prefix" && k !== "checkpointPuts").map(([, v]) => v).sort()
      assert.deepStrictEqual(yield* names(sql, "table"), expected)
      // The one view: a checkpoint put written as one statement through its trigger.
      assert.deepStrictEqual(yield* names(sql, "view"), [tables.checkpointPuts])
      assert.deepStrictEqual(yield* names(sql, "trigger"), [`${tables.checkpointPuts}_insert`])
      const perTenant = [tables.threads, tables.records, tables.pauseAnswers, tables.leases, tables.pauses, tables.tree, tables.ledger, tables.childQueue, tables.checkpoints, tables.checkpointWrites, tables.checkpointBlobs]
      for (const table of perTenant) {
        const columns = yield* sql.unsafe<{ name: string; dflt_value: string | null }>(`PRAGMA table_info("${table}")`)
        const tenant = columns.find((c) => c.name === "tenant_id")
        assert.isDefined(tenant, `${table} has tenant_id`)
        assert.strictEqual(tenant!.dflt_value, "'default'", `${table}.tenant_id defaults to "default"`)
      }
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("re-opening a migrated file applies nothing and keeps its rows", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const first = yield* Scope.make()
      const ctx = yield* Layer.buildWithScope(SqliteStores.layer({ path }), first)
      const lease = yield* Context.get(ctx, LeaseStore).acquire("t1", "root1", "holder-a", 30_000, 1_000)
      assert.isTrue(Option.isSome(lease))
      yield* Scope.close(first, Exit.void)

      const second = yield* Scope.make()
      const sql = yield* clientIn(second, { path })
      const applied = yield* SqlMigrations.migrate().pipe(Effect.provideService(SqlClient.SqlClient, sql))
      assert.deepStrictEqual(applied, [])
      const leases = yield* SqlLeaseStore.make().pipe(Effect.provideService(SqlClient.SqlClient, sql))
      const stored = yield* leases.get("t1", "root1")
      assert.deepStrictEqual(Option.getOrUndefined(stored), Option.getOrUndefined(lease))
      yield* Scope.close(second, Exit.void)
    }))

  it.effect("a file at an older schema version is upgraded in place when the stores open it, its rows kept", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const old = yield* Scope.make()
      const sql = yield* clientIn(old, { path })
      const applied = yield* SqlMigrations.migrate({ upTo: 1 }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      assert.deepStrictEqual(applied, [allIds[0]])
      assert.strictEqual(yield* SqlMigrations.currentVersion().pipe(Effect.provideService(SqlClient.SqlClient, sql)), 1)
      assert.deepStrictEqual(yield* names(sql, "index"), [], "version 1 has no secondary indexes")
      // A row written at version 1 by code that named no tenant lands in "default".
      const tables = yield* SqlTables.make()
      yield* sql.unsafe(
        `INSERT INTO "${tables.records}" (execution_id, thread_id, root_execution_id, parent_execution_id, depth, workflow_name,
          workflow_version, config_hash, status, error, created_at, updated_at)
         VALUES ('exec-old', 'thread-old', 'exec-old', NULL, 1, 'wf', '1', 'h', 'Running', NULL, 5, 5)`
      )
      yield* Scope.close(old, Exit.void)

      const now = yield* Scope.make()
      const ctx = yield* Layer.buildWithScope(SqliteStores.layer({ path }), now)
      const records = Context.get(ctx, RecordStore)
      const running = yield* records.findByStatus("Running", 10, Option.none())
      assert.deepStrictEqual(running.map((r) => [r.tenantId, r.executionId]), [["default", "exec-old"]])
      const sql2 = yield* clientIn(now, { path })
      assert.strictEqual(yield* SqlMigrations.currentVersion().pipe(Effect.provideService(SqlClient.SqlClient, sql2)), SqlMigrations.latestVersion)
      const indexes = yield* names(sql2, "index")
      for (const expected of [`${tables.records}_status_idx`, `${tables.pauses}_settled_idx`, `${tables.childQueue}_claim_idx`, `${tables.records}_active_root_idx`]) {
        assert.include(indexes, expected)
      }
      yield* Scope.close(now, Exit.void)
    }))

  it.effect("migration 3 refuses a file holding two active roots on one thread (the race it closes), naming its index, and changes nothing", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const sql = yield* clientIn(scope, { path })
      yield* SqlMigrations.migrate({ upTo: 2 }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      const tables = yield* SqlTables.make()
      for (const id of ["exec-a", "exec-b"]) {
        yield* sql.unsafe(
          `INSERT INTO "${tables.records}" (tenant_id, execution_id, thread_id, root_execution_id, parent_execution_id, depth, workflow_name,
            workflow_version, config_hash, status, error, created_at, updated_at)
           VALUES ('t', '${id}', 'thread-1', '${id}', NULL, 1, 'wf', '1', 'h', 'Running', NULL, 5, 5)`
        )
      }
      const error = yield* Effect.flip(SqlMigrations.migrate().pipe(Effect.provideService(SqlClient.SqlClient, sql)))
      assert.strictEqual(error._tag, "StoreError")
      assert.include(error.message, "UNIQUE")
      assert.strictEqual(yield* SqlMigrations.currentVersion().pipe(Effect.provideService(SqlClient.SqlClient, sql)), 2)
      assert.notInclude(yield* names(sql, "index"), `${tables.records}_active_root_idx`)
      // once one of them is settled, the upgrade goes through
      yield* sql.unsafe(`UPDATE "${tables.records}" SET status = 'Cancelled' WHERE execution_id = 'exec-a'`)
      assert.deepStrictEqual(
        (yield* SqlMigrations.migrate().pipe(Effect.provideService(SqlClient.SqlClient, sql))).map(([id]) => id),
        allIds.filter(([id]) => id > 2).map(([id]) => id)
      )
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("two connections migrating one new file at once: both succeed, each migration runs once", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const a = yield* clientIn(scope, { path, busyTimeout: 0 })
      const b = yield* clientIn(scope, { path, busyTimeout: 0 })
      const [ranA, ranB] = yield* Effect.all([
        SqlMigrations.migrate().pipe(Effect.provideService(SqlClient.SqlClient, a)),
        SqlMigrations.migrate().pipe(Effect.provideService(SqlClient.SqlClient, b))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual([...ranA, ...ranB].map(([id]) => id).sort((a, b) => a - b), allIds.map(([id]) => id))
      const tables = yield* SqlTables.make()
      const rows = yield* a.unsafe<{ n: number }>(`SELECT COUNT(*) AS n FROM "${tables.migrations}"`)
      assert.strictEqual(rows[0].n, allIds.length)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("table prefixes keep two deployments apart in one file", () =>
    Effect.gen(function*() {
      const path = freshPath()
      const scope = yield* Scope.make()
      const blue = Context.get(yield* Layer.buildWithScope(SqliteStores.layerLeaseStore({ path, tablePrefix: "blue_" }), scope), LeaseStore)
      const green = Context.get(yield* Layer.buildWithScope(SqliteStores.layerLeaseStore({ path, tablePrefix: "green_" }), scope), LeaseStore)
      assert.isTrue(Option.isSome(yield* blue.acquire("t", "root", "blue-1", 30_000, 0)))
      assert.isTrue(Option.isSome(yield* green.acquire("t", "root", "green-1", 30_000, 0)), "the other prefix's lease is another row")
      const sql = yield* clientIn(scope, { path })
      const tables = yield* names(sql, "table")
      assert.include(tables, "blue_leases")
      assert.include(tables, "green_leases")
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a table prefix that is not a plain identifier is a BatonConfigError", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(Layer.build(SqliteStores.layer({ path: freshPath(), tablePrefix: "bad-prefix; DROP" })).pipe(Effect.scoped))
      assert.strictEqual(e._tag, "BatonConfigError")
      assert.strictEqual((e as any).field, "tablePrefix")
    }))
})
