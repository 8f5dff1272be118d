/**
 * The storage baton's LangGraph saver runs on: checkpoint, blob and write
 * rows, and the `CheckpointRows` interface a backend implements.
 *
 * @since 0.1.0
 */
import type { FenceCheck, FencedWrite } from "./Fence.ts"
import type { TenantId, ThreadId } from "./Ids.ts"

/** One stored checkpoint: both blobs as LangGraph's serde wrote them. */
export interface CheckpointRow {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly checkpointNs: string
  readonly checkpointId: string
  readonly parentCheckpointId: string | null
  readonly type: string
  readonly checkpoint: Uint8Array
  readonly metadataType: string
  readonly metadata: Uint8Array
  /**
   * The checkpoint's `channel_versions` as (channel, version) pairs, versions
   * as strings (what its blobs are keyed by). Written by `put`; a store may
   * keep it to read the checkpoint's blobs with the row (`getTuple`). Absent
   * on rows read back, and on rows stored before it was kept.
   */
  readonly channelVersions?: ReadonlyArray<readonly [channel: string, version: string]> | undefined
  /**
   * When it was written, in the writer's Clock milliseconds (the fence's
   * `now` for a pass's write). Absent on rows stored before it was kept:
   * retention by age never deletes those.
   *
   * @since 0.1.0
   */
  readonly createdAt?: number | undefined
  /**
   * The execution whose pass wrote it, when the writer said (absent on rows
   * stored before it was kept, and on writes outside a pass).
   *
   * @since 0.1.0
   */
  readonly executionId?: string | undefined
}

/**
 * One channel's value at one version. A checkpoint row keeps no channel
 * values; `put` stores a blob only for the channels that changed (its
 * `newVersions`), and a read assembles the values from the versions the
 * checkpoint names. `type` "empty" marks a channel with no value.
 */
export interface BlobRow {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly checkpointNs: string
  readonly channel: string
  readonly version: string
  readonly type: string
  readonly value: Uint8Array
}

/** One pending write of a task, linked to a checkpoint (no foreign key: it may arrive first). */
export interface WriteRow {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly checkpointNs: string
  readonly checkpointId: string
  readonly taskId: string
  /** Position in the task's writes; negative for LangGraph's special channels (error, interrupt, resume…). */
  readonly idx: number
  readonly channel: string
  readonly type: string
  readonly value: Uint8Array
  readonly taskPath: string
}

/** A checkpoint read with everything its tuple needs (see `CheckpointRows.getTuple`). */
export interface TupleRows {
  readonly checkpoint: CheckpointRow
  /** Its pending writes, in any order. */
  readonly writes: ReadonlyArray<WriteRow>
  /**
   * The stored blobs among its channel versions, in any order; undefined when
   * the store does not know them from the row (a row stored before it kept
   * `channelVersions`): the saver then asks `getBlobs`.
   */
  readonly blobs: ReadonlyArray<BlobRow> | undefined
}

/**
 * A (tenant, thread) that holds checkpoints, as `listThreads` pages them.
 *
 * @since 0.1.0
 */
export interface ThreadKey {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
}

/**
 * What `pruneThread` may delete, per namespace of the thread. The newest
 * checkpoint of every namespace is always kept; another one is deleted when
 * it is not among the `keepLast` newest of its namespace (when set) or was
 * created before `createdBefore` (when set; a row without `createdAt` never
 * is).
 *
 * @since 0.1.0
 */
export interface PruneRule {
  readonly keepLast?: number | undefined
  readonly createdBefore?: number | undefined
}

/**
 * The rows one `pruneThread` deleted; `more` when it stopped at its limit
 * with checkpoints the rule still deletes, or blobs no checkpoint names.
 *
 * @since 0.1.0
 */
export interface Pruned {
  readonly checkpoints: number
  readonly writes: number
  readonly blobs: number
  readonly more: boolean
}

export interface ListQuery {
  readonly threadId?: ThreadId | undefined
  readonly checkpointNs?: string | undefined
  readonly checkpointId?: string | undefined
  /** Only checkpoints whose id sorts before this one. */
  readonly before?: string | undefined
  readonly limit?: number | undefined
}

/**
 * The storage a `BatonCheckpointSaver` runs on — what a backend
 * implements. Promise-based because LangGraph calls it from its own promises.
 * - `putCheckpoint` upserts the checkpoint by (tenant, thread, ns, id) and
 *   inserts its blobs by (tenant, thread, ns, channel, version), keeping a
 *   blob that exists (a version's value never changes), in one transaction;
 * - `putWrites` inserts each row by (tenant, thread, ns, id, taskId, idx):
 *   a row with `idx >= 0` that exists is kept, one with `idx < 0` replaced;
 * - with a `fence` (only when `fenced` is true) both check in the same
 *   transaction that the lease row is still (holder, epoch) and live at
 *   `fence.now` (`expiresAt > now`), and write; otherwise they reject with
 *   `LeaseLostError` and write nothing. In that transaction they push the
 *   lease's `expiresAt` to `now + ttl` only when a renewal is due (the stored
 *   expiry is earlier than `now + ttl - renewMillis`, see `FenceCheck`) and
 *   otherwise leave the lease row unwritten; they answer the lease's expiry
 *   as stored after the write and whether they pushed it. Without a fence
 *   they answer undefined. The check must hold until the write commits: a
 *   concurrent acquire, renew or release of the lease row waits for it (or
 *   the write waits for them) — SQLite's `BEGIN IMMEDIATE`, a row lock on
 *   Postgres;
 * - `getCheckpoint` without an id answers the newest (greatest id);
 * - `getTuple` (optional) answers what `getCheckpoint`, `getWrites` and
 *   `getBlobs` would for that checkpoint, in one read (one statement on SQL);
 * - `listCheckpoints` answers newest first;
 * - `getWrites` answers the pending writes of the checkpoints named (one or
 *   many of one thread and namespace: `list` reads a batch at once), in any
 *   order (the saver groups and sorts them);
 * - `getBlobs` answers the stored blobs among the (channel, version) pairs
 *   asked for, in any order (a pair not stored is left out);
 * - `listThreads` (optional, for retention) answers up to `limit` distinct
 *   (tenant, thread) pairs holding checkpoints, in (tenant, thread) order,
 *   after `after` when given;
 * - `pruneThread` (optional, for retention) deletes, in one transaction, at
 *   most `limit` checkpoints of the thread that `rule` no longer keeps (see
 *   `PruneRule`: never the newest of a namespace), their pending writes, and
 *   — in a batch that leaves a namespace with no checkpoint to prune — at
 *   most `limit` of the blobs of that namespace no remaining checkpoint of it
 *   names (none when one of them does not list its channel versions); `more`
 *   when checkpoints or such blobs are left, so that no one transaction
 *   grows with the thread. A writer of the thread waits for it, or it for
 *   the writer.
 */
export interface CheckpointRows {
  readonly fenced: boolean
  readonly putCheckpoint: (
    row: CheckpointRow,
    blobs: ReadonlyArray<BlobRow>,
    fence: FenceCheck | undefined
  ) => Promise<FencedWrite | undefined>
  readonly putWrites: (rows: ReadonlyArray<WriteRow>, fence: FenceCheck | undefined) => Promise<FencedWrite | undefined>
  readonly getCheckpoint: (
    tenantId: TenantId,
    threadId: ThreadId,
    checkpointNs: string,
    checkpointId: string | undefined
  ) => Promise<CheckpointRow | undefined>
  readonly getTuple?: (
    tenantId: TenantId,
    threadId: ThreadId,
    checkpointNs: string,
    checkpointId: string | undefined
  ) => Promise<TupleRows | undefined>
  readonly getWrites: (
    tenantId: TenantId,
    threadId: ThreadId,
    checkpointNs: string,
    checkpointIds: ReadonlyArray<string>
  ) => Promise<ReadonlyArray<WriteRow>>
  readonly getBlobs: (
    tenantId: TenantId,
    threadId: ThreadId,
    checkpointNs: string,
    versions: ReadonlyArray<{ readonly channel: string; readonly version: string }>
  ) => Promise<ReadonlyArray<BlobRow>>
  readonly listCheckpoints: (tenantId: TenantId, query: ListQuery) => Promise<ReadonlyArray<CheckpointRow>>
  readonly deleteThread: (tenantId: TenantId, threadId: ThreadId) => Promise<void>
  /** @since 0.1.0 */
  readonly listThreads?: (after: ThreadKey | undefined, limit: number) => Promise<ReadonlyArray<ThreadKey>>
  /** @since 0.1.0 */
  readonly pruneThread?: (tenantId: TenantId, threadId: ThreadId, rule: PruneRule, limit: number) => Promise<Pruned>
  readonly ping: () => Promise<void>
}
