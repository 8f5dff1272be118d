/**
 * In-memory `DebounceStore`: windows in the shared `MemoryState`, definitions
 * and inputs as JSON text; every operation is one synchronous step.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as DebounceStore from "../../src/stores/DebounceStore.ts"
import type { InvalidInputError } from "../../src/stores/Errors.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const windowOf = (row: Rows.DebounceMemoryRow): DebounceStore.DebounceWindow => ({
  ...row,
  definition: JSON.parse(row.definition) as unknown,
  input: JSON.parse(row.input) as unknown
})

const byCursor = (a: Rows.DebounceMemoryRow, b: Rows.DebounceMemoryRow) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0

/**
 * The in-memory `DebounceStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  DebounceStore.make({
    offer: (o) =>
      Effect.suspend((): Effect.Effect<{ readonly opened: boolean; readonly window: DebounceStore.DebounceWindow }, InvalidInputError> => {
        const open = [...rows.debounces.values()].find((w) => w.open && w.tenantId === o.tenantId && w.key === o.key)
        if (open !== undefined) {
          const fireAt = o.maxWaitMillis === undefined ? o.fireAt : Math.min(o.fireAt, open.createdAt + o.maxWaitMillis)
          const next: Rows.DebounceMemoryRow = { ...open, input: JSON.stringify(o.input ?? null), fireAt, version: open.version + 1, updatedAt: o.now }
          rows.debounces.set(Rows.key(open.tenantId, open.executionId), next)
          return Effect.succeed({ opened: false, window: windowOf(next) })
        }
        if (rows.debounces.has(Rows.key(o.tenantId, o.executionId))) return Effect.fail(DebounceStore.executionIdTaken(o.executionId))
        const row: Rows.DebounceMemoryRow = {
          tenantId: o.tenantId,
          key: o.key,
          executionId: o.executionId,
          threadId: o.threadId,
          definition: JSON.stringify(o.definition ?? null),
          input: JSON.stringify(o.input ?? null),
          fireAt: o.fireAt,
          open: true,
          version: 1,
          createdAt: o.now,
          updatedAt: o.now
        }
        rows.debounces.set(Rows.key(o.tenantId, o.executionId), row)
        return Effect.succeed({ opened: true, window: windowOf(row) })
      }),
    close: (tenantId, executionId, expected, now) =>
      Effect.sync(() => {
        const kept = rows.debounces.get(Rows.key(tenantId, executionId))
        if (kept === undefined || !kept.open || kept.version !== expected) return Option.none()
        const closed: Rows.DebounceMemoryRow = { ...kept, open: false, version: kept.version + 1, updatedAt: now }
        rows.debounces.set(Rows.key(tenantId, executionId), closed)
        return Option.some(windowOf(closed))
      }),
    get: (tenantId, executionId) => Effect.sync(() => Option.map(Option.fromNullishOr(rows.debounces.get(Rows.key(tenantId, executionId))), windowOf)),
    due: (now, limit) =>
      Effect.sync(() => {
        const all = [...rows.debounces.values()]
        const due = all.filter((w) => w.open && w.fireAt <= now).sort((a, b) => a.fireAt - b.fireAt || byCursor(a, b))
        const closed = all.filter((w) => !w.open).sort(byCursor)
        return [...due, ...closed].slice(0, limit).map(windowOf)
      }),
    nextDue: Effect.sync(() => {
      let earliest: number | undefined
      for (const w of rows.debounces.values()) if (w.open && (earliest === undefined || w.fireAt < earliest)) earliest = w.fireAt
      return Option.fromNullishOr(earliest)
    }),
    delete: (tenantId, executionId) => Effect.sync(() => rows.debounces.delete(Rows.key(tenantId, executionId))),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(DebounceStore.DebounceStore, make)
