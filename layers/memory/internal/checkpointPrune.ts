/**
 * Retention over the in-memory checkpoint rows: the threads that hold
 * checkpoints, page by page, and the prune of one thread (see
 * `CheckpointRows.pruneThread`). Synchronous, so no write comes between.
 */
import type { CheckpointRow, PruneRule, Pruned, ThreadKey } from "../../../src/stores/CheckpointRows.ts"
import { key, type MemoryRows } from "./rows.ts"

const compareKeys = (a: ThreadKey, b: ThreadKey) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : 0

/** Up to `limit` (tenant, thread) pairs holding checkpoints, in key order, after `after`. */
export const listThreads = (rows: MemoryRows, after: ThreadKey | undefined, limit: number): ReadonlyArray<ThreadKey> => {
  const seen = new Map<string, ThreadKey>()
  for (const [k, checkpoints] of rows.checkpoints) {
    if (checkpoints.size === 0) continue
    const [tenantId, threadId] = JSON.parse(k) as Array<string>
    const thread = { tenantId: tenantId!, threadId: threadId! }
    if (after !== undefined && compareKeys(thread, after) <= 0) continue
    seen.set(key(tenantId!, threadId!), thread)
  }
  return [...seen.values()].sort(compareKeys).slice(0, Math.max(0, limit))
}

/** The ids of one namespace the rule deletes, oldest first (never the newest). */
const doomed = (checkpoints: ReadonlyMap<string, CheckpointRow>, rule: PruneRule): Array<string> => {
  const ids = [...checkpoints.keys()].sort().reverse()
  const keep = Math.max(1, rule.keepLast ?? ids.length)
  return ids.filter((id, rank) => {
    if (rank === 0) return false
    if (rank >= keep) return true
    const createdAt = checkpoints.get(id)!.createdAt
    return rule.createdBefore !== undefined && createdAt !== undefined && createdAt < rule.createdBefore
  }).reverse()
}

/** Deletes up to `room` blobs of one namespace that none of its remaining checkpoints names (none when one lists no versions). */
const collectBlobs = (
  rows: MemoryRows,
  tenantId: string,
  threadId: string,
  ns: string,
  remaining: ReadonlyMap<string, CheckpointRow>,
  room: number
): { readonly blobs: number; readonly more: boolean } => {
  const named = new Set<string>()
  for (const row of remaining.values()) {
    if (row.channelVersions === undefined) return { blobs: 0, more: false }
    for (const [channel, version] of row.channelVersions) named.add(key(channel, version))
  }
  let deleted = 0
  for (const [k, blob] of rows.blobs) {
    if (blob.tenantId !== tenantId || blob.threadId !== threadId || blob.checkpointNs !== ns) continue
    if (named.has(key(blob.channel, blob.version))) continue
    if (deleted >= room) return { blobs: deleted, more: true }
    rows.blobs.delete(k)
    deleted += 1
  }
  return { blobs: deleted, more: false }
}

/** Deletes at most `limit` checkpoints of the thread the rule no longer keeps, their writes and unnamed blobs. */
export const pruneThread = (rows: MemoryRows, tenantId: string, threadId: string, rule: PruneRule, limit: number): Pruned => {
  let checkpoints = 0
  let writes = 0
  let blobs = 0
  let more = false
  for (const [k, stored] of rows.checkpoints) {
    const [t, th, ns] = JSON.parse(k) as Array<string>
    if (t !== tenantId || th !== threadId) continue
    const ids = doomed(stored, rule)
    const room = Math.max(0, limit - checkpoints)
    const blobRoom = Math.max(0, limit - blobs)
    if (ids.length > room) more = true
    const taken = ids.slice(0, room)
    for (const id of taken) {
      stored.delete(id)
      const cpKey = key(tenantId, threadId, ns!, id)
      writes += rows.writes.get(cpKey)?.size ?? 0
      rows.writes.delete(cpKey)
    }
    checkpoints += taken.length
    // At the namespace's last batch, or a later one when blobs were left over: at most `limit` a batch (see the SQL prune).
    if (ids.length <= room && blobRoom > 0) {
      const collected = collectBlobs(rows, tenantId, threadId, ns!, stored, blobRoom)
      blobs += collected.blobs
      if (collected.more) more = true
    }
  }
  return { checkpoints, writes, blobs, more }
}
