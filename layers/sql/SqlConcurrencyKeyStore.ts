/**
 * `ConcurrencyKeyStore` over any `SqlClient`: one row per (tenant, key) with
 * its limit and next arrival number, one entry row per execution.
 *
 * `enqueue` and `release` are one transaction each (a `release` that finds
 * no entry is only that read) that first locks the key's row (Postgres
 * `SELECT … FOR UPDATE`, the row inserted first when missing; SQLite's `BEGIN IMMEDIATE` holds the database's write lock from
 * the start), then counts the key's admitted entries and admits the
 * earliest waiting ones up to the limit — so admissions of one key are
 * serialized across connections and instances, and never exceed the limit.
 * The reads use the indexes of migration 17.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as ConcurrencyKeyStore from "../../src/stores/ConcurrencyKeyStore.ts"
import { type BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { firstOf, num, numOrNull, run, transaction } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "ConcurrencyKeyStore"

const entryOf = (row: Record<string, unknown>): ConcurrencyKeyStore.KeyEntry => ({
  tenantId: String(row.tenant_id),
  key: String(row.concurrency_key),
  executionId: String(row.execution_id),
  seq: num(row.seq),
  admitted: num(row.admitted) === 1,
  enqueuedAt: num(row.enqueued_at),
  admittedAt: numOrNull(row.admitted_at)
})

const bySeq = (a: ConcurrencyKeyStore.KeyEntry, b: ConcurrencyKeyStore.KeyEntry) => a.seq - b.seq

/**
 * The backend over the client, without migration or argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<ConcurrencyKeyStore.ConcurrencyKeyStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { limitOf, sql, tables: t } = yield* Store.open(options)
    const keys = sql(t.concurrencyKeys)
    const entries = sql(t.concurrencyEntries)
    const columns = sql`tenant_id, execution_id, concurrency_key, seq, admitted, enqueued_at, admitted_at`
    const getEntry = (tenantId: string, executionId: string) =>
      Effect.map(sql`SELECT ${columns} FROM ${entries} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId}`, firstOf(entryOf))
    /** The key's row, locked for the rest of the transaction (SQLite: the transaction holds the write lock already). */
    const lockKey = (tenantId: string, key: string) =>
      Effect.map(
        sql.onDialectOrElse({
          pg: () => sql`SELECT key_limit, next_seq FROM ${keys} WHERE tenant_id = ${tenantId} AND concurrency_key = ${key} FOR UPDATE`,
          orElse: () => sql`SELECT key_limit, next_seq FROM ${keys} WHERE tenant_id = ${tenantId} AND concurrency_key = ${key}`
        }),
        (rows) => rows.length === 0 ? undefined : { limit: num(rows[0]!.key_limit), nextSeq: num(rows[0]!.next_seq) }
      )
    /** Admits the earliest waiting entries while fewer than `limit` are admitted (under the key's lock). */
    const promote = (tenantId: string, key: string, limit: number, now: number) =>
      Effect.gen(function*() {
        const counted = yield* sql`SELECT COUNT(*) AS n FROM ${entries} WHERE tenant_id = ${tenantId} AND concurrency_key = ${key} AND admitted = 1`
        const free = limit - num(counted[0]?.n ?? 0)
        if (free <= 0) return []
        const rows = yield* sql`UPDATE ${entries} SET admitted = 1, admitted_at = ${now}
          WHERE tenant_id = ${tenantId} AND execution_id IN (
            SELECT execution_id FROM ${entries}
            WHERE tenant_id = ${tenantId} AND concurrency_key = ${key} AND admitted = 0
            ORDER BY seq LIMIT ${limitOf(free)}
          )
          RETURNING ${columns}`
        return rows.map(entryOf).sort(bySeq)
      })

    return {
      enqueue: (e) =>
        run(store, "enqueue", () =>
          transaction(sql, Effect.gen(function*() {
            const kept = yield* getEntry(e.tenantId, e.executionId)
            if (Option.isSome(kept)) return { entry: kept.value, admitted: [] }
            let locked = yield* lockKey(e.tenantId, e.key)
            if (locked === undefined) {
              yield* sql`INSERT INTO ${keys} (tenant_id, concurrency_key, key_limit, next_seq)
                VALUES (${e.tenantId}, ${e.key}, ${e.limit}, 1) ON CONFLICT (tenant_id, concurrency_key) DO NOTHING`
              locked = yield* lockKey(e.tenantId, e.key)
            }
            const seq = locked?.nextSeq ?? 1
            yield* sql`UPDATE ${keys} SET key_limit = ${e.limit}, next_seq = ${seq + 1}
              WHERE tenant_id = ${e.tenantId} AND concurrency_key = ${e.key}`
            const inserted = yield* sql`INSERT INTO ${entries} (tenant_id, execution_id, concurrency_key, seq, admitted, enqueued_at, admitted_at)
              VALUES (${e.tenantId}, ${e.executionId}, ${e.key}, ${seq}, 0, ${e.now}, NULL)
              ON CONFLICT (tenant_id, execution_id) DO NOTHING RETURNING execution_id`
            if (inserted.length === 0) {
              // Entered by a concurrent call meanwhile: its entry stands.
              const raced = yield* getEntry(e.tenantId, e.executionId)
              if (Option.isNone(raced)) {
                // Entered and released by other calls between the two statements: this transaction is rolled back.
                return yield* new StoreError({
                  store,
                  operation: "enqueue",
                  kind: "Busy",
                  reason: `the entry of execution ${e.executionId} was entered and released by other calls while this enqueue ran; this enqueue was rolled back and wrote nothing`
                })
              }
              return { entry: raced.value, admitted: [] }
            }
            const admitted = yield* promote(e.tenantId, e.key, e.limit, e.now)
            const entry = yield* getEntry(e.tenantId, e.executionId)
            return { entry: Option.getOrThrow(entry), admitted }
          }))),
      release: (tenantId, executionId, now) =>
        run(store, "release", () =>
          // Most executions that end have no entry: a plain read says so without taking the write lock, as the
          // transaction's own read would have (an entry written after it is the admitter's to free, either way).
          Effect.flatMap(getEntry(tenantId, executionId), (found) =>
            Option.isNone(found) ? Effect.succeed({ released: false, admitted: [] }) : transaction(sql, Effect.gen(function*() {
            const kept = yield* getEntry(tenantId, executionId)
            if (Option.isNone(kept)) return { released: false, admitted: [] }
            const locked = yield* lockKey(tenantId, kept.value.key)
            const deleted = yield* sql`DELETE FROM ${entries} WHERE tenant_id = ${tenantId} AND execution_id = ${executionId} RETURNING execution_id`
            // Released by a concurrent call, which admitted in its place.
            if (deleted.length === 0) return { released: false, admitted: [] }
            return { released: true, admitted: yield* promote(tenantId, kept.value.key, locked?.limit ?? 1, now) }
          })))),
      get: (tenantId, executionId) => run(store, "get", () => getEntry(tenantId, executionId)),
      list: (tenantId, key) =>
        run(store, "list", () =>
          Effect.map(
            sql`SELECT ${columns} FROM ${entries} WHERE tenant_id = ${tenantId} AND concurrency_key = ${key} ORDER BY seq`,
            (rows) => rows.map(entryOf)
          )),
      listAdmitted: (limit, after) =>
        run(store, "listAdmitted", () =>
          Effect.map(
            Option.isNone(after)
              ? sql`SELECT ${columns} FROM ${entries} WHERE admitted = 1 ORDER BY tenant_id, execution_id LIMIT ${limitOf(limit)}`
              : sql`SELECT ${columns} FROM ${entries} WHERE admitted = 1
                  AND (tenant_id > ${after.value.tenantId} OR (tenant_id = ${after.value.tenantId} AND execution_id > ${after.value.executionId}))
                  ORDER BY tenant_id, execution_id LIMIT ${limitOf(limit)}`,
            (rows) => rows.map(entryOf)
          )),
      ping: Store.ping(store, sql)
    } satisfies ConcurrencyKeyStore.ConcurrencyKeyStoreShape
  })

const constructors = Store.constructors(ConcurrencyKeyStore.ConcurrencyKeyStore, ConcurrencyKeyStore.make, makeBackend)

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `ConcurrencyKeyStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires
 * `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
