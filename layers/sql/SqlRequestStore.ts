/**
 * `RequestStore` over any `SqlClient`: one row per (tenant, request key).
 *
 * `claim` is one `INSERT … ON CONFLICT DO UPDATE … WHERE the kept key
 * expired … RETURNING`: of two instances claiming a free key, exactly one
 * gets a row back; the others read the kept row and compare fingerprints.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { type BatonConfigError, RequestConflictError, StoreError } from "../../src/stores/Errors.ts"
import * as RequestStore from "../../src/stores/RequestStore.ts"
import { firstOf, fromJson, num, run, toJson } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "RequestStore"
/** How many times `claim` tries when the kept key it found goes before it reads it. */
const claimAttempts = 5

const entryOf = (row: Record<string, unknown>): RequestStore.RequestEntry => ({
  tenantId: String(row.tenant_id),
  requestKey: String(row.request_key),
  fingerprint: String(row.fingerprint),
  handle: fromJson(row.handle),
  answer: fromJson(row.answer),
  answered: row.answer !== null && row.answer !== undefined,
  createdAt: num(row.created_at),
  expiresAt: num(row.expires_at)
})

/**
 * The backend over the client, without migration or argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RequestStore.RequestStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { sql, tables: t } = yield* Store.open(options)
    const requests = sql(t.requests)
    // The thread a kept handle names (every handle is a JSON object with a `threadId`).
    const handleThread = sql.onDialectOrElse({
      pg: () => sql.literal("(handle::jsonb ->> 'threadId')"),
      orElse: () => sql.literal("json_extract(handle, '$.threadId')")
    })
    const columns = sql`tenant_id, request_key, fingerprint, handle, answer, created_at, expires_at`

    /** One try: the claim, else the kept live row (none when it expired or went in between: try again). */
    const claimOnce = (c: Parameters<RequestStore.RequestStoreShape["claim"]>[0]) =>
      Effect.gen(function*() {
        const claimed = yield* sql`INSERT INTO ${requests} AS cur (tenant_id, request_key, fingerprint, handle, answer, created_at, expires_at)
          VALUES (${c.tenantId}, ${c.requestKey}, ${c.fingerprint}, ${toJson(c.handle)}, NULL, ${c.now}, ${c.now + c.ttlMillis})
          ON CONFLICT (tenant_id, request_key) DO UPDATE SET
            fingerprint = excluded.fingerprint, handle = excluded.handle, answer = NULL,
            created_at = excluded.created_at, expires_at = excluded.expires_at
          WHERE cur.expires_at <= ${c.now}
          RETURNING request_key`
        if (claimed.length > 0) return Option.some<RequestStore.ClaimResult>({ _tag: "Claimed" })
        const kept = yield* sql`SELECT ${columns} FROM ${requests}
          WHERE tenant_id = ${c.tenantId} AND request_key = ${c.requestKey} AND expires_at > ${c.now}`
        if (kept.length === 0) return Option.none<RequestStore.ClaimResult>()
        const entry = entryOf(kept[0]!)
        if (entry.fingerprint !== c.fingerprint) {
          return yield* Effect.fail(new RequestConflictError({ tenantId: c.tenantId, requestKey: c.requestKey }))
        }
        return Option.some<RequestStore.ClaimResult>({ _tag: "Existing", entry })
      })

    return {
      claim: (c) =>
        run(store, "claim", () =>
          Effect.gen(function*() {
            // A kept key that expires (or is deleted) between the two statements is free: claim again.
            for (let attempt = 0; attempt < claimAttempts; attempt++) {
              const result = yield* claimOnce(c)
              if (Option.isSome(result)) return result.value
            }
            return yield* new StoreError({
              store,
              operation: "claim",
              kind: "Busy",
              reason: `request key ${c.requestKey} was kept and freed by other calls ${claimAttempts} times while this claim tried; nothing was claimed`
            })
          })),
      recordAnswer: (tenantId, requestKey, handle, answer, now) =>
        run(store, "recordAnswer", () => Effect.map(
          sql`UPDATE ${requests} SET answer = ${toJson(answer)}
              WHERE tenant_id = ${tenantId} AND request_key = ${requestKey} AND handle = ${toJson(handle)} AND expires_at > ${now}
              RETURNING request_key`,
          (rows) => rows.length > 0
        )),
      get: (tenantId, requestKey, now) =>
        run(store, "get", () => Effect.map(
          sql`SELECT ${columns} FROM ${requests} WHERE tenant_id = ${tenantId} AND request_key = ${requestKey} AND expires_at > ${now}`,
          firstOf(entryOf)
        )),
      deleteThread: (tenantId, threadId) =>
        run(store, "deleteThread", () => Effect.map(
          sql`DELETE FROM ${requests} WHERE tenant_id = ${tenantId} AND ${handleThread} = ${threadId} RETURNING request_key`,
          (rows) => rows.length
        )),
      deleteExpired: (now, limit) =>
        run(store, "deleteExpired", () => Store.deleteBatch(sql, t.requests, "request_key", sql`expires_at <= ${now}`, "expires_at", limit)),
      ping: Store.ping(store, sql)
    } satisfies RequestStore.RequestStoreShape
  })

const constructors = Store.constructors(RequestStore.RequestStore, RequestStore.make, makeBackend)

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `RequestStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires
 * `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
