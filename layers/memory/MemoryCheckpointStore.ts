/**
 * In-memory `CheckpointStore`: baton's saver over rows kept in `MemoryState`.
 * Fenced: the lease check and the write happen in one synchronous step
 * against the same lease rows `MemoryLeaseStore` keeps.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import { Layer } from "effect"
import type * as MemoryState from "./MemoryState.ts"
import type { CheckpointRow, CheckpointRows, WriteRow } from "../../src/stores/CheckpointRows.ts"
import { listThreads, pruneThread } from "./internal/checkpointPrune.ts"
import * as CheckpointStores from "../../src/checkpoint/CheckpointStores.ts"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { FenceCheck, FencedWrite } from "../../src/stores/Fence.ts"
import { checkFence } from "./internal/fenced.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const byIdDesc = (a: CheckpointRow, b: CheckpointRow) => (a.checkpointId < b.checkpointId ? 1 : a.checkpointId > b.checkpointId ? -1 : 0)

/** The rows contract over the shared rows. */
const rowsOver = (rows: Rows.MemoryRows): CheckpointRows => {
  const fence = (check: FenceCheck | undefined): FencedWrite | undefined => check === undefined ? undefined : checkFence(rows, check)
  return {
    fenced: true,
    putCheckpoint: async (row, blobs, check) => {
      const fenced = fence(check)
      for (const b of blobs) {
        const blobKey = Rows.key(b.tenantId, b.threadId, b.checkpointNs, b.channel, b.version)
        if (!rows.blobs.has(blobKey)) rows.blobs.set(blobKey, b)
      }
      const nsKey = Rows.key(row.tenantId, row.threadId, row.checkpointNs)
      let checkpoints = rows.checkpoints.get(nsKey)
      if (checkpoints === undefined) rows.checkpoints.set(nsKey, checkpoints = new Map())
      checkpoints.set(row.checkpointId, row)
      return fenced
    },
    putWrites: async (writes, check) => {
      const fenced = fence(check)
      for (const w of writes) {
        const cpKey = Rows.key(w.tenantId, w.threadId, w.checkpointNs, w.checkpointId)
        let stored = rows.writes.get(cpKey)
        if (stored === undefined) rows.writes.set(cpKey, stored = new Map())
        const writeKey = Rows.key(w.taskId, String(w.idx))
        if (w.idx >= 0 && stored.has(writeKey)) continue
        stored.set(writeKey, w)
      }
      return fenced
    },
    getCheckpoint: async (tenantId, threadId, ns, checkpointId) => {
      const checkpoints = rows.checkpoints.get(Rows.key(tenantId, threadId, ns))
      if (checkpoints === undefined) return undefined
      if (checkpointId !== undefined) return checkpoints.get(checkpointId)
      let newest: CheckpointRow | undefined
      for (const row of checkpoints.values()) if (newest === undefined || row.checkpointId > newest.checkpointId) newest = row
      return newest
    },
    getWrites: async (tenantId, threadId, ns, checkpointIds): Promise<ReadonlyArray<WriteRow>> =>
      checkpointIds.flatMap((checkpointId) => [...(rows.writes.get(Rows.key(tenantId, threadId, ns, checkpointId))?.values() ?? [])]),
    getBlobs: async (tenantId, threadId, ns, versions) =>
      versions.flatMap(({ channel, version }) => {
        const blob = rows.blobs.get(Rows.key(tenantId, threadId, ns, channel, version))
        return blob === undefined ? [] : [blob]
      }),
    listCheckpoints: async (tenantId, q) => {
      const out: Array<CheckpointRow> = []
      for (const checkpoints of rows.checkpoints.values()) {
        for (const row of checkpoints.values()) {
          if (
            row.tenantId === tenantId &&
            (q.threadId === undefined || row.threadId === q.threadId) &&
            (q.checkpointNs === undefined || row.checkpointNs === q.checkpointNs) &&
            (q.checkpointId === undefined || row.checkpointId === q.checkpointId) &&
            (q.before === undefined || row.checkpointId < q.before)
          ) out.push(row)
        }
      }
      out.sort(byIdDesc)
      return q.limit === undefined ? out : out.slice(0, q.limit)
    },
    deleteThread: async (tenantId, threadId) => {
      const ofThread = (k: string) => {
        const [t, th] = JSON.parse(k) as Array<string>
        return t === tenantId && th === threadId
      }
      for (const k of rows.checkpoints.keys()) if (ofThread(k)) rows.checkpoints.delete(k)
      for (const k of rows.writes.keys()) if (ofThread(k)) rows.writes.delete(k)
      for (const k of rows.blobs.keys()) if (ofThread(k)) rows.blobs.delete(k)
    },
    listThreads: async (after, limit) => listThreads(rows, after, limit),
    pruneThread: async (tenantId, threadId, rule, limit) => pruneThread(rows, tenantId, threadId, rule, limit),
    ping: async () => {}
  }
}

/**
 * The checkpoint rows over the `MemoryState` in context, for building a saver
 * by hand (`new CheckpointSaver.BatonCheckpointSaver(rows)`) or wrapping the
 * rows before `CheckpointStores.fromRows`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeRows: Effect.Effect<CheckpointRows, never, MemoryState.MemoryState> = State.use(rowsOver)

/**
 * The in-memory `CheckpointStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) => CheckpointStores.fromRows(rowsOver(rows)))

/**
 * Requires `MemoryState` (its fenced writes check the leases kept there); `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(CheckpointStore, make)
