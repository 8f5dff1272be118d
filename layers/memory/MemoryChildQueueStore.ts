/**
 * In-memory `ChildQueueStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import * as ChildQueueStore from "../../src/stores/ChildQueueStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const toChild = (row: Rows.ChildRow): ChildQueueStore.QueuedChild => ({
  ...row,
  launchId: row.launchId ?? null,
  position: row.position ?? 0,
  configHash: row.configHash ?? null,
  input: JSON.parse(row.input),
  result: row.result === null ? null : JSON.parse(row.result)
})

/** A claimer's workflow runs the row: same name, and same config hash when the row has one. */
const runs = (w: ChildQueueStore.RunnableWorkflow, row: Rows.ChildRow) =>
  w.name === row.workflowName && (row.configHash == null || row.configHash === w.configHash)

/** Claim order: deepest first, then longest waiting, then id. */
const claimOrder = (a: Rows.ChildRow, b: Rows.ChildRow) =>
  b.depth - a.depth || a.queuedAt - b.queuedAt || (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0)

/**
 * The in-memory `ChildQueueStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  ChildQueueStore.make({
    saveIfAbsent: (child) =>
      Effect.sync(() => {
        const k = Rows.key(child.tenantId, child.executionId)
        if (rows.children.has(k)) return false
        rows.children.set(k, {
          ...child,
          launchId: child.launchId ?? null,
          position: child.position ?? 0,
          input: JSON.stringify(child.input ?? null),
          result: null,
          claimedBy: null,
          claimExpiresAt: null
        })
        return true
      }),
    claim: (instanceId, ttl, now, workflows) =>
      Effect.sync(() => {
        let best: Rows.ChildRow | undefined
        for (const row of rows.children.values()) {
          if (workflows !== undefined && !workflows.some((w) => runs(w, row))) continue
          const claimable = row.status === "Queued" || (row.status === "Running" && (row.claimExpiresAt ?? 0) <= now)
          if (claimable && (best === undefined || claimOrder(row, best) < 0)) best = row
        }
        if (best === undefined) return Option.none()
        best.status = "Running"
        best.claimedBy = instanceId
        best.claimExpiresAt = now + ttl
        return Option.some(toChild(best))
      }),
    renewClaim: (tenantId, executionId, instanceId, ttl, now) =>
      Effect.sync(() => {
        const row = rows.children.get(Rows.key(tenantId, executionId))
        if (row === undefined || row.status !== "Running" || row.claimedBy !== instanceId || (row.claimExpiresAt ?? 0) <= now) {
          return false
        }
        row.claimExpiresAt = now + ttl
        return true
      }),
    complete: ({ executionId, instanceId, outcome, result, tenantId }) =>
      Effect.sync(() => {
        const row = rows.children.get(Rows.key(tenantId, executionId))
        if (row === undefined || row.status !== "Running" || row.claimedBy !== instanceId) return false
        row.status = outcome
        row.result = JSON.stringify(result ?? null)
        row.claimExpiresAt = null
        return true
      }),
    get: (tenantId, executionId) =>
      Effect.sync(() => Option.map(Option.fromNullishOr(rows.children.get(Rows.key(tenantId, executionId))), toChild)),
    releaseClaim: (tenantId, executionId, instanceId) =>
      Effect.sync(() => {
        const row = rows.children.get(Rows.key(tenantId, executionId))
        if (row === undefined || row.status !== "Running" || row.claimedBy !== instanceId) return false
        row.status = "Queued"
        row.claimedBy = null
        row.claimExpiresAt = null
        return true
      }),
    requeuePaused: (tenantId, executionId) =>
      Effect.sync(() => {
        const row = rows.children.get(Rows.key(tenantId, executionId))
        if (row === undefined || row.status !== "Paused") return false
        row.status = "Queued"
        row.claimedBy = null
        row.claimExpiresAt = null
        row.result = null
        return true
      }),
    listLaunch: (tenantId, launchId) =>
      Effect.sync(() =>
        [...rows.children.values()]
          .filter((row) => row.tenantId === tenantId && row.launchId === launchId)
          .sort((a, b) => (a.position ?? 0) - (b.position ?? 0))
          .map(toChild)
      ),
    countOpen: (tenantId, launchId) =>
      Effect.sync(() => {
        let n = 0
        for (const row of rows.children.values()) {
          if (row.tenantId === tenantId && row.launchId === launchId && (row.status === "Queued" || row.status === "Running")) n++
        }
        return n
      }),
    failQueued: (tenantId, root, result) =>
      Effect.sync(() => {
        let n = 0
        for (const row of rows.children.values()) {
          if (row.tenantId === tenantId && row.rootExecutionId === root && row.status === "Queued") {
            row.status = "Failed"
            row.result = JSON.stringify(result ?? null)
            n++
          }
        }
        return n
      }),
    deleteRoot: (tenantId, root) =>
      Effect.sync(() => Rows.deleteWhere(rows.children, (row) => row.tenantId === tenantId && row.rootExecutionId === root)),
    ping: Effect.void
  }))

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(ChildQueueStore.ChildQueueStore, make)
