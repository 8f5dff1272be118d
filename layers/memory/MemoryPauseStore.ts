/**
 * In-memory `PauseStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { NotPausedError, UnknownPauseError } from "../../src/stores/Errors.ts"
import { holds, refused } from "../../src/stores/internal/fence.ts"
import type { Pause } from "../../src/stores/Pause.ts"
import * as PauseStore from "../../src/stores/PauseStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const toPause = (row: Rows.PauseRow): Pause => ({
  ...row,
  payload: JSON.parse(row.payload),
  decision: row.decision === null ? null : JSON.parse(row.decision)
})

/**
 * The in-memory `PauseStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) => {
  const save = (pause: Pause) => {
    const k = Rows.key(pause.tenantId, pause.pauseId)
    if (rows.pauses.has(k)) return false
    rows.pauses.set(k, {
      ...pause,
      payload: JSON.stringify(pause.payload ?? null),
      decision: null,
      resolvedAt: null,
      resolvedBy: null
    })
    return true
  }
  return PauseStore.make({
    save: (pause) => Effect.sync(() => save(pause)),
    // Synchronous: the lease check and the write are one atomic step.
    saveFenced: (pause, lease, now) =>
      Effect.suspend(() => {
        if (rows.pauses.has(Rows.key(pause.tenantId, pause.pauseId))) return Effect.succeed(false)
        const row = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (!holds(row, lease, now)) return Effect.fail(refused("pause save", row, lease, now))
        return Effect.succeed(save(pause))
      }),
    get: (tenantId, pauseId) => Effect.sync(() => Option.map(Option.fromNullishOr(rows.pauses.get(Rows.key(tenantId, pauseId))), toPause)),
    resolve: ({ decision, now, pauseId, resolvedBy, tenantId }) =>
      Effect.suspend((): Effect.Effect<Pause, NotPausedError | UnknownPauseError> => {
        const row = rows.pauses.get(Rows.key(tenantId, pauseId))
        if (row === undefined) return Effect.fail(new UnknownPauseError({ tenantId, pauseId }))
        if (row.status !== "Pending") return Effect.fail(new NotPausedError({ tenantId, pauseId, status: row.status }))
        row.status = "Resolved"
        row.decision = JSON.stringify(decision ?? null)
        row.resolvedAt = now
        row.resolvedBy = resolvedBy
        return Effect.succeed(toPause(row))
      }),
    take: (tenantId, pauseId) =>
      Effect.sync(() => {
        const row = rows.pauses.get(Rows.key(tenantId, pauseId))
        if (row === undefined || row.status !== "Resolved") return false
        row.status = "Taken"
        return true
      }),
    withdraw: (tenantId, pauseId, now) =>
      Effect.sync(() => {
        const row = rows.pauses.get(Rows.key(tenantId, pauseId))
        if (row === undefined || (row.status !== "Pending" && row.status !== "Resolved")) return false
        row.status = "Cancelled"
        row.resolvedAt = now
        return true
      }),
    listByRoot: (tenantId, rootExecutionId, statuses) =>
      Effect.sync(() =>
        [...rows.pauses.values()]
          .filter((p) => p.tenantId === tenantId && p.rootExecutionId === rootExecutionId && statuses.includes(p.status))
          .sort((a, b) => a.createdAt - b.createdAt || (a.pauseId < b.pauseId ? -1 : 1))
          .map(toPause)
      ),
    findResolvedRoots: (limit, after) =>
      Effect.sync(() => {
        const roots = new Map<string, { tenantId: string; rootExecutionId: string }>()
        for (const p of rows.pauses.values()) {
          if (p.status !== "Resolved" || (Option.isSome(after) && Rows.compareRoot(p, after.value) <= 0)) continue
          roots.set(Rows.key(p.tenantId, p.rootExecutionId), { tenantId: p.tenantId, rootExecutionId: p.rootExecutionId })
        }
        return [...roots.values()].sort(Rows.compareRoot).slice(0, limit)
      }),
    deleteThread: (tenantId, threadId) => Effect.sync(() => Rows.deleteWhere(rows.pauses, (p) => p.tenantId === tenantId && p.threadId === threadId)),
    deleteSettledBefore: (cutoff) =>
      Effect.sync(() =>
        Rows.deleteWhere(rows.pauses, (p) => (p.status === "Taken" || p.status === "Cancelled") && p.resolvedAt !== null && p.resolvedAt < cutoff)
      ),
    ping: Effect.void
  })
})

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(PauseStore.PauseStore, make)
