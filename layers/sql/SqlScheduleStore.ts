/**
 * `ScheduleStore` over any `SqlClient`: one row per (tenant, schedule id),
 * its definition and state as JSON text, `paused` as 0 / 1.
 *
 * `create` is one `INSERT … ON CONFLICT DO NOTHING RETURNING` (of two
 * instances creating one id exactly one gets a row back; the other reads the
 * kept row); `update` is one `UPDATE … WHERE version = expected RETURNING`;
 * `due` reads the index over (paused, next_fire_at) of migration 14.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { type BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import * as ScheduleStore from "../../src/stores/ScheduleStore.ts"
import { firstOf, fromJson, num, run, toJson } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "ScheduleStore"
/** How many times `create` inserts when the kept schedule it found goes before it reads it. */
const createAttempts = 5

const rowOf = (row: Record<string, unknown>): ScheduleStore.ScheduleRow => ({
  tenantId: String(row.tenant_id),
  scheduleId: String(row.schedule_id),
  definition: fromJson(row.definition),
  paused: num(row.paused) === 1,
  nextFireAt: num(row.next_fire_at),
  state: fromJson(row.state),
  version: num(row.version),
  createdAt: num(row.created_at),
  updatedAt: num(row.updated_at)
})

/**
 * The backend over the client, without migration or argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeBackend = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<ScheduleStore.ScheduleStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { limitOf, sql, tables: t } = yield* Store.open(options)
    const schedules = sql(t.schedules)
    const columns = sql`tenant_id, schedule_id, definition, paused, next_fire_at, state, version, created_at, updated_at`
    const getRow = (tenantId: string, scheduleId: string) =>
      Effect.map(sql`SELECT ${columns} FROM ${schedules} WHERE tenant_id = ${tenantId} AND schedule_id = ${scheduleId}`, firstOf(rowOf))

    return {
      create: (s) =>
        run(store, "create", () =>
          Effect.gen(function*() {
            // A kept schedule deleted between the insert and the read leaves the id free: insert again.
            for (let attempt = 0; attempt < createAttempts; attempt++) {
              const made = yield* sql`INSERT INTO ${schedules} (tenant_id, schedule_id, definition, paused, next_fire_at, state, version, created_at, updated_at)
                VALUES (${s.tenantId}, ${s.scheduleId}, ${toJson(s.definition)}, ${s.paused ? 1 : 0}, ${s.nextFireAt}, ${toJson(null)}, 1, ${s.now}, ${s.now})
                ON CONFLICT (tenant_id, schedule_id) DO NOTHING
                RETURNING ${columns}`
              if (made.length > 0) return { created: true, schedule: rowOf(made[0]!) }
              const kept = yield* getRow(s.tenantId, s.scheduleId)
              if (Option.isSome(kept)) return { created: false, schedule: kept.value }
            }
            return yield* new StoreError({
              store,
              operation: "create",
              kind: "Busy",
              reason: `schedule ${s.scheduleId} was created and deleted by other calls ${createAttempts} times while this create tried; nothing was written by it`
            })
          })),
      get: (tenantId, scheduleId) => run(store, "get", () => getRow(tenantId, scheduleId)),
      list: (tenantId, o) =>
        run(store, "list", () =>
          Effect.map(
            o.after === undefined
              ? sql`SELECT ${columns} FROM ${schedules} WHERE tenant_id = ${tenantId} ORDER BY schedule_id LIMIT ${limitOf(o.limit)}`
              : sql`SELECT ${columns} FROM ${schedules} WHERE tenant_id = ${tenantId} AND schedule_id > ${o.after} ORDER BY schedule_id LIMIT ${limitOf(o.limit)}`,
            (rows) => rows.map(rowOf)
          )),
      update: (tenantId, scheduleId, expected, change, now) =>
        run(store, "update", () => {
          const sets = [
            sql`version = version + 1`,
            sql`updated_at = ${now}`,
            ...(change.paused === undefined ? [] : [sql`paused = ${change.paused ? 1 : 0}`]),
            ...(change.nextFireAt === undefined ? [] : [sql`next_fire_at = ${change.nextFireAt}`]),
            ...("state" in change ? [sql`state = ${toJson(change.state)}`] : [])
          ]
          return Effect.map(
            sql`UPDATE ${schedules} SET ${sql.csv(sets)}
                WHERE tenant_id = ${tenantId} AND schedule_id = ${scheduleId} AND version = ${expected}
                RETURNING ${columns}`,
            firstOf(rowOf)
          )
        }),
      due: (now, limit) =>
        run(store, "due", () =>
          Effect.map(
            sql`SELECT ${columns} FROM ${schedules} WHERE paused = 0 AND next_fire_at <= ${now}
                ORDER BY next_fire_at, tenant_id, schedule_id LIMIT ${limitOf(limit)}`,
            (rows) => rows.map(rowOf)
          )),
      nextDue: run(store, "nextDue", () => Store.earliest(sql, t.schedules, "next_fire_at", sql`paused = 0`)),
      delete: (tenantId, scheduleId) =>
        run(store, "delete", () => Store.deleteKeyed(sql, t.schedules, "schedule_id", tenantId, scheduleId)),
      ping: Store.ping(store, sql)
    } satisfies ScheduleStore.ScheduleStoreShape
  })

const constructors = Store.constructors(ScheduleStore.ScheduleStore, ScheduleStore.make, makeBackend)

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = constructors.make

/**
 * `ScheduleStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires
 * `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = constructors.layer
