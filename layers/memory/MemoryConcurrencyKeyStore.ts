/**
 * In-memory `ConcurrencyKeyStore`: keys and entries in the shared
 * `MemoryState`; every operation is one synchronous step, so it is atomic.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as ConcurrencyKeyStore from "../../src/stores/ConcurrencyKeyStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const entriesOf = (rows: Rows.MemoryRows, tenantId: string, k: string) =>
  [...rows.concurrencyEntries.values()].filter((e) => e.tenantId === tenantId && e.key === k).sort((a, b) => a.seq - b.seq)

/** Admits the earliest waiting entries of the key while fewer than its limit are admitted. */
const promote = (rows: Rows.MemoryRows, tenantId: string, k: string, now: number): ReadonlyArray<ConcurrencyKeyStore.KeyEntry> => {
  const limit = rows.concurrencyKeys.get(Rows.key(tenantId, k))?.limit ?? 1
  const entries = entriesOf(rows, tenantId, k)
  let running = entries.filter((e) => e.admitted).length
  const admitted: Array<ConcurrencyKeyStore.KeyEntry> = []
  for (const e of entries) {
    if (running >= limit) break
    if (e.admitted) continue
    const next: ConcurrencyKeyStore.KeyEntry = { ...e, admitted: true, admittedAt: now }
    rows.concurrencyEntries.set(Rows.key(tenantId, e.executionId), next)
    admitted.push(next)
    running++
  }
  return admitted
}

const byCursor = (a: ConcurrencyKeyStore.KeyEntry, b: ConcurrencyKeyStore.KeyEntry) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0

/**
 * The in-memory `ConcurrencyKeyStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  ConcurrencyKeyStore.make({
    enqueue: (e) =>
      Effect.sync(() => {
        const kept = rows.concurrencyEntries.get(Rows.key(e.tenantId, e.executionId))
        if (kept !== undefined) return { entry: kept, admitted: [] }
        const k = Rows.key(e.tenantId, e.key)
        const keyRow = rows.concurrencyKeys.get(k) ?? { limit: e.limit, nextSeq: 1 }
        rows.concurrencyKeys.set(k, { limit: e.limit, nextSeq: keyRow.nextSeq + 1 })
        rows.concurrencyEntries.set(Rows.key(e.tenantId, e.executionId), {
          tenantId: e.tenantId,
          key: e.key,
          executionId: e.executionId,
          seq: keyRow.nextSeq,
          admitted: false,
          enqueuedAt: e.now,
          admittedAt: null
        })
        const admitted = promote(rows, e.tenantId, e.key, e.now)
        return { entry: rows.concurrencyEntries.get(Rows.key(e.tenantId, e.executionId))!, admitted }
      }),
    release: (tenantId, executionId, now) =>
      Effect.sync(() => {
        const kept = rows.concurrencyEntries.get(Rows.key(tenantId, executionId))
        if (kept === undefined) return { released: false, admitted: [] }
        rows.concurrencyEntries.delete(Rows.key(tenantId, executionId))
        return { released: true, admitted: promote(rows, tenantId, kept.key, now) }
      }),
    get: (tenantId, executionId) => Effect.sync(() => Option.fromNullishOr(rows.concurrencyEntries.get(Rows.key(tenantId, executionId)))),
    list: (tenantId, k) => Effect.sync(() => entriesOf(rows, tenantId, k)),
    listAdmitted: (limit, after) =>
      Effect.sync(() =>
        [...rows.concurrencyEntries.values()]
          .filter((e) => e.admitted && (Option.isNone(after) || byCursor(e, { ...e, ...after.value }) > 0))
          .sort(byCursor)
          .slice(0, limit)
      ),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(ConcurrencyKeyStore.ConcurrencyKeyStore, make)
