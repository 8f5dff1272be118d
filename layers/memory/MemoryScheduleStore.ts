/**
 * In-memory `ScheduleStore`: schedules in the shared `MemoryState`,
 * definitions and states as JSON text.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as ScheduleStore from "../../src/stores/ScheduleStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const rowOf = (row: Rows.ScheduleMemoryRow): ScheduleStore.ScheduleRow => ({
  tenantId: row.tenantId,
  scheduleId: row.scheduleId,
  definition: JSON.parse(row.definition) as unknown,
  paused: row.paused,
  nextFireAt: row.nextFireAt,
  state: JSON.parse(row.state) as unknown,
  version: row.version,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt
})

/** Earliest `nextFireAt` first, then tenant, then id. */
const byDue = (a: Rows.ScheduleMemoryRow, b: Rows.ScheduleMemoryRow) =>
  a.nextFireAt - b.nextFireAt || (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.scheduleId < b.scheduleId ? -1 : a.scheduleId > b.scheduleId ? 1 : 0)

/**
 * The in-memory `ScheduleStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  ScheduleStore.make({
    create: (s) =>
      Effect.sync(() => {
        const k = Rows.key(s.tenantId, s.scheduleId)
        const kept = rows.schedules.get(k)
        if (kept !== undefined) return { created: false, schedule: rowOf(kept) }
        const row: Rows.ScheduleMemoryRow = {
          tenantId: s.tenantId,
          scheduleId: s.scheduleId,
          definition: JSON.stringify(s.definition),
          paused: s.paused,
          nextFireAt: s.nextFireAt,
          state: "null",
          version: 1,
          createdAt: s.now,
          updatedAt: s.now
        }
        rows.schedules.set(k, row)
        return { created: true, schedule: rowOf(row) }
      }),
    get: (tenantId, scheduleId) =>
      Effect.sync(() => Option.map(Option.fromNullishOr(rows.schedules.get(Rows.key(tenantId, scheduleId))), rowOf)),
    list: (tenantId, options) =>
      Effect.sync(() =>
        [...rows.schedules.values()]
          .filter((r) => r.tenantId === tenantId && (options.after === undefined || r.scheduleId > options.after))
          .sort((a, b) => (a.scheduleId < b.scheduleId ? -1 : 1))
          .slice(0, options.limit)
          .map(rowOf)
      ),
    update: (tenantId, scheduleId, expected, change, now) =>
      Effect.sync(() => {
        const k = Rows.key(tenantId, scheduleId)
        const kept = rows.schedules.get(k)
        if (kept === undefined || kept.version !== expected) return Option.none()
        const row: Rows.ScheduleMemoryRow = {
          ...kept,
          paused: change.paused ?? kept.paused,
          nextFireAt: change.nextFireAt ?? kept.nextFireAt,
          state: "state" in change ? JSON.stringify(change.state ?? null) : kept.state,
          version: kept.version + 1,
          updatedAt: now
        }
        rows.schedules.set(k, row)
        return Option.some(rowOf(row))
      }),
    due: (now, limit) =>
      Effect.sync(() => [...rows.schedules.values()].filter((r) => !r.paused && r.nextFireAt <= now).sort(byDue).slice(0, limit).map(rowOf)),
    nextDue: Effect.sync(() => {
      let earliest: number | undefined
      for (const r of rows.schedules.values()) if (!r.paused && (earliest === undefined || r.nextFireAt < earliest)) earliest = r.nextFireAt
      return Option.fromNullishOr(earliest)
    }),
    delete: (tenantId, scheduleId) => Effect.sync(() => rows.schedules.delete(Rows.key(tenantId, scheduleId))),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(ScheduleStore.ScheduleStore, make)
