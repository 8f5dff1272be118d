/**
 * `TreeStore` over any `SqlClient`: keys of one execution tree, values as JSON text.
 *
 * `saveIfAbsent` is one `INSERT … ON CONFLICT DO NOTHING RETURNING`: of two
 * instances writing the same key, exactly one gets a row back.
 * `saveIfAbsentFenced` is one statement too — `INSERT … SELECT … WHERE
 * EXISTS (the lease is still this holder's) ON CONFLICT DO NOTHING
 * RETURNING` — so the fence and the write are one atomic step: on SQLite
 * under the database write lock; on Postgres the lease row is read `FOR
 * SHARE`, so a takeover committing at the same time either waits for the
 * write or makes it see the new holder and write nothing.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as TreeStore from "../../src/stores/TreeStore.ts"
import { findableKeyCondition } from "./internal/findableKeys.ts"
import * as Direct from "./internal/direct.ts"
import { firstOf, fromJson, run, toJson } from "./internal/rows.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "TreeStore"

/**
 * The backend over the client, without migration or the reserved-key rule.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<TreeStore.TreeStoreBackend, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // Sorted reads bind keys and write limits so that SQLite compiles them once (see internal/stablePlan.ts).
    const { limitOf, sortedKey, sql, tables: t } = yield* Store.open(options)
    // A findable key is named as the literal its partial index repeats (see SqlMigrations 12); another key is bound.
    const findable = new Map(TreeStore.findableNames.map((n) => [TreeStore.reservedPrefix + n, sql.literal(findableKeyCondition(n))]))
    const tree = sql(t.tree)
    // The hot calls (a step's history note, the cancel request read) run synchronously on a free node:sqlite
    // connection, without effect's per-statement machinery (see internal/direct.ts); elsewhere — Postgres, a
    // connection a fiber holds, a locked database — as statements on the client.
    const direct = Direct.make(sql)
    const insertText = Direct.texts((_: void) =>
      sql`INSERT INTO ${tree} (tenant_id, root_execution_id, tree_key, value) VALUES (${""}, ${""}, ${""}, ${""})
          ON CONFLICT (tenant_id, root_execution_id, tree_key) DO NOTHING`
    )
    const getText = Direct.texts((_: void) =>
      sql`SELECT value FROM ${tree} WHERE tenant_id = ${""} AND root_execution_id = ${""} AND tree_key = ${""}`
    )
    // One text per number of keys.
    const getManyText = Direct.texts((n: number) =>
      sql`SELECT tree_key, value FROM ${tree} WHERE tenant_id = ${""} AND root_execution_id = ${""}
          AND tree_key IN ${sql.in(Array.from({ length: n }, () => ""))} ORDER BY tree_key`
    )
    const entriesOf = (rows: ReadonlyArray<any>) => rows.map((row) => ({ key: String(row.tree_key), value: fromJson(row.value) }))
    const fast = <A>(op: () => Direct.Op<A>, slow: () => Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> =>
      Effect.suspend(() => {
        try {
          const done = direct.trySync(op)
          return done === undefined ? slow() : Effect.succeed(done.value)
        } catch (error) {
          return Effect.fail(error as SqlError)
        }
      })

    return {
      saveIfAbsent: (tenantId, root, key, value) =>
        run(store, "saveIfAbsent", () =>
          fast(
            function*() {
              // The change count tells (on SQLite, RETURNING costs more than the insert).
              return (yield Direct.changes(insertText(), [tenantId, root, key, toJson(value)]))[0].changes > 0
            },
            () =>
              Effect.map(
                sql`INSERT INTO ${tree} (tenant_id, root_execution_id, tree_key, value)
                  VALUES (${tenantId}, ${root}, ${key}, ${toJson(value)})
                  ON CONFLICT (tenant_id, root_execution_id, tree_key) DO NOTHING
                  RETURNING tree_key`,
                (rows) => rows.length > 0
              )
          )),
      saveIfAbsentFenced: (tenantId, root, key, value, lease, now) =>
        run(store, "saveIfAbsentFenced", () =>
          LeaseRows.insertIfAbsent(sql, t.leases, "tree write", lease, now,
            sql`INSERT INTO ${tree} (tenant_id, root_execution_id, tree_key, value)
              SELECT ${tenantId}, ${root}, ${key}, ${toJson(value)}
              WHERE EXISTS (${LeaseRows.live(sql, t.leases, lease, now)})
              ON CONFLICT (tenant_id, root_execution_id, tree_key) DO NOTHING
              RETURNING tree_key`,
            Effect.map(
              sql`SELECT 1 AS found FROM ${tree} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} AND tree_key = ${key}`,
              (kept) => kept.length > 0
            )
          )),
      get: (tenantId, root, key) =>
        run(store, "get", () =>
          fast(
            function*() {
              const rows = yield Direct.query(getText(), [tenantId, root, key])
              return rows.length === 0 ? Option.none() : Option.some(fromJson(rows[0].value))
            },
            () =>
              Effect.map(
                sql`SELECT value FROM ${tree} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} AND tree_key = ${key}`,
                firstOf((row) => fromJson(row.value))
              )
          )),
      getMany: (tenantId, root, keys) =>
        run(store, "getMany", () =>
          fast(
            function*() {
              return entriesOf(yield Direct.query(getManyText(keys.length), [tenantId, root, ...keys]))
            },
            () =>
              Effect.map(
                sql`SELECT tree_key, value FROM ${tree} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root}
                    AND tree_key IN ${sql.in(keys)} ORDER BY tree_key`,
                entriesOf
              )
          )),
      // Keys sort in byte order on both databases (Postgres columns are COLLATE "C"),
      // so the keys with a prefix are the run starting at the prefix itself.
      list: (tenantId, root, prefix) =>
        run(store, "list", () => Effect.map(
          sql`SELECT tree_key, value FROM ${tree}
              WHERE tenant_id = ${sortedKey(tenantId)} AND root_execution_id = ${sortedKey(root)} AND tree_key >= ${prefix}
              ORDER BY tree_key`,
          (rows) => {
            const out: Array<{ key: string; value: unknown }> = []
            for (const row of rows) {
              const key = String(row.tree_key)
              if (!key.startsWith(prefix)) break
              out.push({ key, value: fromJson(row.value) })
            }
            return out
          }
        )),
      deleteRoot: (tenantId, root) =>
        run(store, "deleteRoot", () => Effect.map(
          sql`DELETE FROM ${tree} WHERE tenant_id = ${tenantId} AND root_execution_id = ${root} RETURNING tree_key`,
          (rows) => rows.length
        )),
      findRootsWithKey: (key, limit, after) =>
        run(store, "findRootsWithKey", () => {
          const keyIs = findable.get(key) ?? sql`tree_key = ${key}`
          return Effect.map(
            Option.isNone(after)
              ? sql`SELECT tenant_id, root_execution_id FROM ${tree} WHERE ${keyIs}
                    ORDER BY tenant_id, root_execution_id LIMIT ${limitOf(limit)}`
              : sql`SELECT tenant_id, root_execution_id FROM ${tree} WHERE ${keyIs}
                      AND (tenant_id, root_execution_id) > (${after.value.tenantId}, ${after.value.rootExecutionId})
                    ORDER BY tenant_id, root_execution_id LIMIT ${limitOf(limit)}`,
            (rows) => rows.map((r: any) => ({ tenantId: String(r.tenant_id), rootExecutionId: String(r.root_execution_id) }))
          )
        }),
      ping: Store.ping(store, sql)
    } satisfies TreeStore.TreeStoreBackend
  })

const constructors = Store.constructors(TreeStore.TreeStore, TreeStore.make, makeBackend)

/**
 * The service over the client (argument checks and reserved keys included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `TreeStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
