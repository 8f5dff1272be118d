/**
 * `RateLimitStore` over any `SqlClient`: concurrency slots, fixed counting
 * windows and pauses. Keys are application-wide (the contract has no tenant).
 *
 * - A slot is a row (key, slot number); handing one out is a conditional
 *   upsert that only takes a row that is free or expired, so two instances
 *   never hold the same slot, and the live count is checked in the same
 *   transaction.
 * - A window is one row per key holding the current window's start and total;
 *   a later window resets it, an add that would pass the limit changes nothing.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import * as RateLimitStore from "../../src/stores/RateLimitStore.ts"
import { firstOf, num, run, transaction } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "RateLimitStore"

/**
 * The service over the client (argument checks included; no migration).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<RateLimitStore.RateLimitStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const { sql, tables: t } = yield* Store.open(options)
    const slots = sql(t.rateSlots)
    const windows = sql(t.rateWindows)
    const pauses = sql(t.ratePauses)

    const takeSlot = (key: string, slot: number, holder: string, expiresAt: number, now: number) =>
      sql`INSERT INTO ${slots} AS cur (slot_key, slot, holder, epoch, expires_at)
          VALUES (${key}, ${slot}, ${holder}, 1, ${expiresAt})
          ON CONFLICT (slot_key, slot) DO UPDATE SET
            holder = excluded.holder, epoch = cur.epoch + 1, expires_at = excluded.expires_at
          WHERE cur.holder IS NULL OR cur.expires_at <= ${now}
          RETURNING epoch, expires_at`

    const impl: RateLimitStore.RateLimitStoreShape = {
      acquireSlot: (key, max, holder, ttl, now) =>
        run(store, "acquireSlot", () => transaction(sql, Effect.gen(function*() {
          const rows = yield* sql`SELECT slot, holder, expires_at FROM ${slots} WHERE slot_key = ${key}`
          const live = new Set<number>()
          for (const row of rows) {
            if (row.holder !== null && num(row.expires_at) > now) live.add(num(row.slot))
          }
          if (live.size >= max) return Option.none<RateLimitStore.SlotLease>()
          for (let slot = 0; slot < max; slot++) {
            if (live.has(slot)) continue
            const taken = yield* takeSlot(key, slot, holder, now + ttl, now)
            if (taken.length > 0) {
              return Option.some<RateLimitStore.SlotLease>({ key, slot, holder, epoch: num(taken[0].epoch), expiresAt: num(taken[0].expires_at) })
            }
          }
          return Option.none<RateLimitStore.SlotLease>()
        }))),
      heldSlot: (key, holder, now) =>
        run(store, "heldSlot", () => Effect.map(
          sql`SELECT slot, epoch, expires_at FROM ${slots}
              WHERE slot_key = ${key} AND holder = ${holder} AND expires_at > ${now} ORDER BY slot LIMIT 1`,
          (rows) => rows.length === 0
            ? Option.none<RateLimitStore.SlotLease>()
            : Option.some<RateLimitStore.SlotLease>({ key, slot: num(rows[0].slot), holder, epoch: num(rows[0].epoch), expiresAt: num(rows[0].expires_at) })
        )),
      renewSlot: (s, ttl, now) =>
        run(store, "renewSlot", () => Effect.map(
          sql`UPDATE ${slots} SET expires_at = ${now + ttl}
              WHERE slot_key = ${s.key} AND slot = ${s.slot} AND holder = ${s.holder} AND epoch = ${s.epoch} AND expires_at > ${now}
              RETURNING epoch`,
          (rows) => rows.length > 0
        )),
      releaseSlot: (s) =>
        run(store, "releaseSlot", () => Effect.map(
          sql`UPDATE ${slots} SET holder = NULL
              WHERE slot_key = ${s.key} AND slot = ${s.slot} AND holder = ${s.holder} AND epoch = ${s.epoch}
              RETURNING epoch`,
          (rows) => rows.length > 0
        )),
      addToWindow: (key, amount, window, now, limit) => {
        if (limit !== undefined && amount > limit) return Effect.succeed(Option.none())
        const start = Math.floor(now / window) * window
        const added = sql`CASE WHEN excluded.window_start > cur.window_start THEN excluded.total ELSE cur.total + excluded.total END`
        return run(store, "addToWindow", () => Effect.map(
          limit === undefined
            ? sql`INSERT INTO ${windows} AS cur (window_key, window_start, total) VALUES (${key}, ${start}, ${amount})
                  ON CONFLICT (window_key) DO UPDATE SET
                    total = ${added},
                    window_start = CASE WHEN excluded.window_start > cur.window_start THEN excluded.window_start ELSE cur.window_start END
                  RETURNING total`
            : sql`INSERT INTO ${windows} AS cur (window_key, window_start, total) VALUES (${key}, ${start}, ${amount})
                  ON CONFLICT (window_key) DO UPDATE SET
                    total = ${added},
                    window_start = CASE WHEN excluded.window_start > cur.window_start THEN excluded.window_start ELSE cur.window_start END
                  WHERE ${added} <= ${limit}
                  RETURNING total`,
          firstOf((row) => num(row.total))
        ))
      },
      clearWindow: (key) => run(store, "clearWindow", () => Effect.asVoid(sql`DELETE FROM ${windows} WHERE window_key = ${key}`)),
      pauseUntil: (key, until) =>
        run(store, "pauseUntil", () => Effect.map(
          sql`INSERT INTO ${pauses} AS cur (pause_key, paused_until) VALUES (${key}, ${until})
              ON CONFLICT (pause_key) DO UPDATE SET
                paused_until = CASE WHEN excluded.paused_until > cur.paused_until THEN excluded.paused_until ELSE cur.paused_until END
              RETURNING paused_until`,
          (rows) => num(rows[0].paused_until)
        )),
      pausedUntil: (key) =>
        run(store, "pausedUntil", () => Effect.map(
          sql`SELECT paused_until FROM ${pauses} WHERE pause_key = ${key}`,
          firstOf((row) => num(row.paused_until))
        )),
      ping: Store.ping(store, sql)
    }
    return RateLimitStore.make(impl)
  })

/**
 * `RateLimitStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<RateLimitStore.RateLimitStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(RateLimitStore.RateLimitStore, make, options)
