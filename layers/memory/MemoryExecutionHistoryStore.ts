/**
 * In-memory `ExecutionHistoryStore`: snapshots kept as JSON text in the
 * shared `MemoryState`, the save fenced by the lease rows of the same state.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as ExecutionHistoryStore from "../../src/stores/ExecutionHistoryStore.ts"
import { holds, refused } from "../../src/stores/internal/fence.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

/** Whether snapshot `s` comes after the cursor in listing order. */
const afterCursor = (s: ExecutionHistoryStore.ExecutionSnapshot, after: ExecutionHistoryStore.HistoryCursor | undefined) =>
  after === undefined || s.endedAt > after.endedAt || (s.endedAt === after.endedAt && s.executionId > after.executionId)

/**
 * The in-memory `ExecutionHistoryStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) => {
  const all = () => [...rows.history.values()].map((r) => JSON.parse(r.json) as ExecutionHistoryStore.ExecutionSnapshot)
  return ExecutionHistoryStore.make({
    saveIfAbsent: (snapshot, lease, now) =>
      Effect.suspend(() => {
        const k = Rows.key(snapshot.tenantId, snapshot.executionId)
        if (rows.history.has(k)) return Effect.succeed(false)
        const current = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (!holds(current, lease, now)) return Effect.fail(refused("history snapshot", current, lease, now))
        rows.history.set(k, { endedAt: snapshot.endedAt, json: JSON.stringify(snapshot) })
        return Effect.succeed(true)
      }),
    get: (tenantId, executionId) =>
      Effect.sync(() => {
        const row = rows.history.get(Rows.key(tenantId, executionId))
        return row === undefined ? Option.none() : Option.some(JSON.parse(row.json) as ExecutionHistoryStore.ExecutionSnapshot)
      }),
    list: (q) =>
      Effect.sync(() =>
        all()
          .filter((s) =>
            s.tenantId === q.tenantId &&
            (q.workflowName === undefined || s.workflowName === q.workflowName) &&
            (q.from === undefined || s.endedAt >= q.from) &&
            (q.to === undefined || s.endedAt < q.to) &&
            afterCursor(s, q.after)
          )
          .sort((a, b) => a.endedAt - b.endedAt || (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0))
          .slice(0, q.limit)
      ),
    deleteExecutions: (tenantId, executionIds) =>
      Effect.sync(() => {
        let n = 0
        for (const id of executionIds) if (rows.history.delete(Rows.key(tenantId, id))) n++
        return n
      }),
    deleteEndedBefore: (cutoff, limit) => Effect.sync(() => Rows.deleteWhere(rows.history, (row) => row.endedAt < cutoff, limit)),
    ping: Effect.void
  })
})

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(ExecutionHistoryStore.ExecutionHistoryStore, make)
