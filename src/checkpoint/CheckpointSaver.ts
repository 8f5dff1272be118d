/**
 * baton's LangGraph checkpointer: one implementation of the saver logic
 * (serialization with LangGraph's serde, write ordering, tuples, listing,
 * fencing) over any {@link CheckpointRows} storage — memory, SQLite, Postgres.
 *
 * @since 0.1.0
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey
} from "@langchain/langgraph-checkpoint"
import { LeaseLostError } from "../stores/Errors.ts"
import type { BlobRow, CheckpointRow, CheckpointRows, TupleRows, WriteRow } from "../stores/CheckpointRows.ts"
import { executionKey, writeTimerKey } from "./internal/configKeys.ts"
import { isDefaultSerde, loadsTyped } from "./internal/serde.ts"
import { type Fence, type FenceCheck, type FencedWrite, fenceKey, tenantConfigKey } from "../stores/Fence.ts"
import { defaultTenant } from "../stores/Ids.ts"

/** Writes by the checkpoint they belong to. */
const byCheckpoint = (writes: ReadonlyArray<WriteRow>): Map<string, Array<WriteRow>> => {
  const out = new Map<string, Array<WriteRow>>()
  for (const w of writes) {
    const list = out.get(w.checkpointId)
    if (list === undefined) out.set(w.checkpointId, [w])
    else list.push(w)
  }
  return out
}

/** A channel with no value at its version (no blob, or an "empty" one). */
const empty: unique symbol = Symbol("empty")

/** How many listed checkpoints `list` reads at once. */
const listBatch = 50

const tenantOf = (config: RunnableConfig): string => {
  const t = config.configurable?.[tenantConfigKey]
  return typeof t === "string" && t.length > 0 ? t : defaultTenant
}

const requireString = (config: RunnableConfig, field: string, operation: string): string => {
  const v = config.configurable?.[field]
  if (typeof v !== "string" || v.length === 0) {
    throw new Error(`${operation}: config.configurable.${field} must be a non-empty string (got ${v === undefined ? "nothing" : typeof v}).`)
  }
  return v
}

/** When a checkpoint was written: the fence's Clock time for a pass's write, else the checkpoint's own timestamp. */
const createdAtOf = (check: FenceCheck | undefined, fence: Fence | undefined, checkpoint: Checkpoint): number | undefined => {
  if (check !== undefined) return check.now
  if (fence !== undefined) return fence.now()
  const parsed = Date.parse(checkpoint.ts)
  return Number.isFinite(parsed) ? parsed : undefined
}

/**
 * Times one write: call at its start, call the answer at its end.
 *
 * @category models
 * @since 0.1.0
 */
export type WriteTimer = () => () => void

/** Runs `write`, timed by the pass's timer when there is one. */
const timed = async <A>(config: RunnableConfig, write: () => Promise<A>): Promise<A> => {
  const timer = config.configurable?.[writeTimerKey] as WriteTimer | undefined
  if (timer === undefined) return write()
  const stop = timer()
  try {
    return await write()
  } finally {
    stop()
  }
}

/**
 * baton's LangGraph checkpoint saver over a store's `CheckpointRows`: what
 * `CheckpointStores.fromRows` wraps, and what a pass hands LangGraph. Its
 * writes are fenced when the pass's config names a fence (a write by a holder
 * whose lease is gone fails with `LeaseLostError` and writes nothing), and
 * every read and write is scoped to the tenant the config names (the default
 * tenant when it names none). Built by hand over rows
 * (`new CheckpointSaver.BatonCheckpointSaver(rows)`, the rows from
 * `MemoryCheckpointStore.makeRows` or `SqlCheckpointStore.makeRows`), it is a
 * saver for a plain LangGraph graph, unfenced.
 *
 * @category savers
 * @since 0.1.0
 */
export class BatonCheckpointSaver extends BaseCheckpointSaver {
  readonly rows: CheckpointRows
  /** Whether reads may take the exact fast path of `internal/serde.ts` (the default serializer). */
  private readonly plainReads: boolean

  constructor(rows: CheckpointRows, serde?: SerializerProtocol) {
    super(serde)
    this.rows = rows
    this.plainReads = isDefaultSerde(this.serde)
  }

  /** `serde.loadsTyped`, exact, without the reviver's walk where it would change nothing. */
  private loads(type: string, data: Uint8Array): Promise<any> | any {
    return loadsTyped(this.serde, this.plainReads, type, data)
  }

  /**
   * Before a write: refuse if the pass's fence says so; for a fenced store
   * return what the store checks in its transaction; for an unfenced one
   * renew first.
   */
  private async fenceFor(config: RunnableConfig): Promise<{ fence: Fence; check: FenceCheck | undefined } | undefined> {
    const fence = config.configurable?.[fenceKey] as Fence | undefined
    if (fence === undefined) return undefined
    const refused = fence.refusal()
    if (refused !== undefined) throw refused
    if (this.rows.fenced) {
      // A fence without a (valid) renewal period renews on every write, as a renewal would.
      const renewMillis = typeof fence.renewMillis === "number" && fence.renewMillis > 0 ? fence.renewMillis : 0
      return { fence, check: { lease: fence.lease, ttlMillis: fence.ttlMillis, renewMillis, now: fence.now() } }
    }
    await fence.renewBeforeWrite()
    return { fence, check: undefined }
  }

  /**
   * Runs a write under its guard: a refusal by the store tells the fence the
   * lease is lost; a fenced write that landed tells it what the store holds
   * now — a confirmed renewal read at `check.now` when the write renewed.
   */
  private async fenced(
    guard: { fence: Fence; check: FenceCheck | undefined } | undefined,
    write: (check: FenceCheck | undefined) => Promise<FencedWrite | undefined>
  ) {
    let result: FencedWrite | undefined
    try {
      // Checked again right before the write starts (the guard was taken a turn earlier), and told to the holder
      // in the same synchronous run: a holder about to release either refuses this write or waits for it.
      const refused = guard?.fence.refusal()
      if (refused !== undefined) throw refused
      const pending = write(guard?.check)
      guard?.fence.writing?.(pending)
      result = await pending
    } catch (e) {
      if (guard !== undefined && e instanceof LeaseLostError) guard.fence.lost(e)
      throw e
    }
    if (guard?.check !== undefined && result !== undefined) guard.fence.confirmed(guard.check.now, result.expiresAt, result.renewed)
  }

  /**
   * The tuples of `rows`, read with as few store calls as there are
   * (tenant, thread, namespace) groups among them: one `getWrites` for the
   * group's pending writes (asked at once, while the checkpoints are
   * deserialized), one `getBlobs` for every channel version its checkpoints
   * name (and, only for v < 4 checkpoints, one more `getWrites` for their
   * parents' sends). Each tuple deserializes values of its own, never shared,
   * when the caller takes it.
   */
  private async *tuples(rows: ReadonlyArray<CheckpointRow>): AsyncGenerator<CheckpointTuple> {
    const groups: Array<Array<number>> = []
    const groupOf = new Map<string, Array<number>>()
    rows.forEach((row, i) => {
      const k = `${row.tenantId}\u0000${row.threadId}\u0000${row.checkpointNs}`
      const group = groupOf.get(k)
      if (group !== undefined) return group.push(i)
      const fresh = [i]
      groupOf.set(k, fresh)
      groups.push(fresh)
    })
    const readWrites = (members: ReadonlyArray<number>, ids: ReadonlyArray<string>) => {
      const { checkpointNs, tenantId, threadId } = rows[members[0]!]!
      return this.rows.getWrites(tenantId, threadId, checkpointNs, ids).then(byCheckpoint)
    }
    const writes = groups.map((members) => readWrites(members, members.map((i) => rows[i]!.checkpointId)))
    // Not left unhandled while the checkpoints are deserialized (awaited below).
    for (const w of writes) w.catch(() => {})
    const [checkpoints, metadatas] = await Promise.all([
      Promise.all(rows.map((row) => this.loads(row.type, row.checkpoint) as Promise<Checkpoint>)),
      Promise.all(rows.map((row) => this.loads(row.metadataType, row.metadata) as Promise<CheckpointMetadata>))
    ])
    const read = await Promise.all(groups.map(async (members, g) => {
      const { checkpointNs, tenantId, threadId } = rows[members[0]!]!
      const versions = new Map<string, { channel: string; version: string }>()
      const parents: Array<string> = []
      for (const i of members) {
        for (const [channel, version] of Object.entries(checkpoints[i]!.channel_versions ?? {})) {
          versions.set(`${channel}\u0000${version}`, { channel, version: String(version) })
        }
        if (checkpoints[i]!.v < 4 && rows[i]!.parentCheckpointId !== null) parents.push(rows[i]!.parentCheckpointId!)
      }
      const [blobs, ofCheckpoints, ofParents] = await Promise.all([
        versions.size === 0 ? [] : this.rows.getBlobs(tenantId, threadId, checkpointNs, [...versions.values()]),
        writes[g]!,
        parents.length === 0 ? undefined : readWrites(members, parents)
      ])
      const byVersion = new Map<string, BlobRow>()
      for (const b of blobs) byVersion.set(`${b.channel}\u0000${b.version}`, b)
      return { byVersion, ofCheckpoints, ofParents }
    }))
    const groupIndex = new Array<number>(rows.length)
    groups.forEach((members, g) => members.forEach((i) => (groupIndex[i] = g)))
    // Values are deserialized one tuple at a time, as the caller takes it: a batch's values never live all at once.
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!
      const { byVersion, ofCheckpoints, ofParents } = read[groupIndex[i]!]!
      const [checkpoint, pendingWrites] = await Promise.all([
        this.assemble(row, checkpoints[i]!, byVersion, ofParents),
        this.pendingWrites(ofCheckpoints.get(row.checkpointId) ?? [])
      ])
      yield this.toTuple(row, checkpoint, metadatas[i]!, pendingWrites, undefined)
    }
  }

  /**
   * One checkpoint's tuple (what `tuples` does for a batch, in fewer steps);
   * with `read`, its writes and (when known) blobs as the store read them with the row.
   */
  private async tuple(row: CheckpointRow, config?: RunnableConfig, read?: TupleRows): Promise<CheckpointTuple> {
    const { checkpointNs, tenantId, threadId } = row
    const writes = read !== undefined ? Promise.resolve(read.writes) : this.rows.getWrites(tenantId, threadId, checkpointNs, [row.checkpointId])
    writes.catch(() => {}) // awaited below, after the checkpoint is deserialized
    const [checkpoint, metadata] = await Promise.all([
      this.loads(row.type, row.checkpoint) as Promise<Checkpoint>,
      this.loads(row.metadataType, row.metadata) as Promise<CheckpointMetadata>
    ])
    const versions = Object.entries(checkpoint.channel_versions ?? {}).map(([channel, version]) => ({ channel, version: String(version) }))
    const parent = checkpoint.v < 4 ? row.parentCheckpointId : null
    const [blobs, own, ofParent] = await Promise.all([
      versions.length === 0 ? [] : read?.blobs ?? this.rows.getBlobs(tenantId, threadId, checkpointNs, versions),
      writes,
      parent === null ? undefined : this.rows.getWrites(tenantId, threadId, checkpointNs, [parent])
    ])
    const byVersion = new Map<string, BlobRow>()
    for (const b of blobs) byVersion.set(`${b.channel}\u0000${b.version}`, b)
    const [loaded, pendingWrites] = await Promise.all([
      this.assemble(row, checkpoint, byVersion, ofParent === undefined ? undefined : byCheckpoint(ofParent)),
      this.pendingWrites(own)
    ])
    return this.toTuple(row, loaded, metadata, pendingWrites, config)
  }

  private toTuple(
    row: CheckpointRow,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    pendingWrites: Array<CheckpointPendingWrite>,
    config: RunnableConfig | undefined
  ): CheckpointTuple {
    const result: CheckpointTuple = {
      config: config ?? { configurable: { thread_id: row.threadId, checkpoint_ns: row.checkpointNs, checkpoint_id: row.checkpointId } },
      checkpoint,
      metadata,
      pendingWrites
    }
    if (row.parentCheckpointId !== null) {
      result.parentConfig = {
        configurable: { thread_id: row.threadId, checkpoint_ns: row.checkpointNs, checkpoint_id: row.parentCheckpointId }
      }
    }
    return result
  }

  /** The checkpoint with its channel values assembled from blobs (and, for v < 4, pending sends migrated from its parent's writes). */
  private async assemble(
    row: CheckpointRow,
    checkpoint: Checkpoint,
    blobs: ReadonlyMap<string, BlobRow>,
    parentWrites: ReadonlyMap<string, ReadonlyArray<WriteRow>> | undefined
  ): Promise<Checkpoint> {
    const values: Record<string, unknown> = { ...checkpoint.channel_values }
    const channels = Object.entries(checkpoint.channel_versions ?? {})
    const read = await Promise.all(channels.map(([channel, version]) => {
      const b = blobs.get(`${channel}\u0000${version}`)
      return b === undefined || b.type === "empty" ? empty : this.loads(b.type, b.value)
    }))
    // In the checkpoint's channel order, whichever value was read first (some are read at once, some by the serializer).
    channels.forEach(([channel], i) => {
      if (read[i] !== empty) values[channel] = read[i]
    })
    const loaded: Checkpoint = { ...checkpoint, channel_values: values }
    if (checkpoint.v < 4 && row.parentCheckpointId !== null) {
      const sends = (parentWrites?.get(row.parentCheckpointId) ?? []).filter((w) => w.channel === TASKS).sort((a, b) =>
        compareWritesSortKeys(writesSortKey(a.taskPath, a.taskId, a.idx), writesSortKey(b.taskPath, b.taskId, b.idx))
      )
      values[TASKS] = await Promise.all(sends.map((w) => this.loads(w.type, w.value)))
      const known = Object.values(loaded.channel_versions)
      loaded.channel_versions = {
        ...loaded.channel_versions,
        [TASKS]: known.length > 0 ? maxChannelVersion(...known) : this.getNextVersion(undefined)
      }
    }
    return loaded
  }

  /** A checkpoint's pending writes in LangGraph's order, deserialized. */
  private pendingWrites(writes: ReadonlyArray<WriteRow>): Promise<Array<CheckpointPendingWrite>> {
    const sorted = writes
      .map((w) => ({ w, key: writesSortKey(w.taskPath, w.taskId, w.idx) }))
      .sort((a, b) => compareWritesSortKeys(a.key, b.key))
    return Promise.all(
      sorted.map(async ({ w }) => [w.taskId, w.channel, await this.loads(w.type, w.value)] as CheckpointPendingWrite)
    )
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id
    if (typeof threadId !== "string" || threadId.length === 0) return undefined
    const ns: string = config.configurable?.checkpoint_ns ?? ""
    const id = getCheckpointId(config)
    if (this.rows.getTuple !== undefined) {
      const read = await this.rows.getTuple(tenantOf(config), threadId, ns, id || undefined)
      return read === undefined ? undefined : this.tuple(read.checkpoint, id ? config : undefined, read)
    }
    const row = await this.rows.getCheckpoint(tenantOf(config), threadId, ns, id || undefined)
    if (row === undefined) return undefined
    return this.tuple(row, id ? config : undefined)
  }

  /**
   * Newest first. The listed checkpoints are read in batches of
   * 50 (`listBatch`) (each batch's blobs and writes in one call per thread
   * and namespace), a batch being read when the caller reaches it.
   */
  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const { before, limit, filter } = options ?? {}
    const filterEntries = filter === undefined ? [] : Object.entries(filter)
    const rows = await this.rows.listCheckpoints(tenantOf(config), {
      threadId: config.configurable?.thread_id,
      checkpointNs: config.configurable?.checkpoint_ns,
      checkpointId: config.configurable?.checkpoint_id,
      before: before?.configurable?.checkpoint_id,
      // With a metadata filter the limit applies after filtering.
      limit: filterEntries.length === 0 ? limit : undefined
    })
    let remaining = limit ?? Infinity
    let batch: Array<CheckpointRow> = []
    for (const row of rows) {
      if (remaining <= 0) break
      if (filterEntries.length > 0) {
        const metadata = (await this.loads(row.metadataType, row.metadata)) as Record<string, unknown>
        if (!filterEntries.every(([k, v]) => metadata?.[k] === v)) continue
      }
      remaining -= 1
      batch.push(row)
      if (batch.length >= listBatch) {
        yield* this.tuples(batch)
        batch = []
      }
    }
    if (batch.length > 0) yield* this.tuples(batch)
  }

  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return timed(config, () => this.putUntimed(config, checkpoint, metadata, newVersions))
  }

  private async putUntimed(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = requireString(config, "thread_id", "put")
    const checkpointNs: string = config.configurable?.checkpoint_ns ?? ""
    const tenantId = tenantOf(config)
    const { channel_values, ...rest } = copyCheckpoint(checkpoint)
    const [[type, bytes], [metadataType, metadataBytes], blobs] = await Promise.all([
      this.serde.dumpsTyped({ ...rest, channel_values: {} }),
      this.serde.dumpsTyped(metadata),
      Promise.all(Object.entries(newVersions ?? {}).map(async ([channel, version]): Promise<BlobRow> => {
        const [blobType, value] = channel in channel_values
          ? await this.serde.dumpsTyped(channel_values[channel])
          : ["empty", new Uint8Array()] as const
        return { tenantId, threadId, checkpointNs, channel, version: String(version), type: blobType, value }
      }))
    ])
    const parent = config.configurable?.checkpoint_id
    const guard = await this.fenceFor(config)
    const executionId = config.configurable?.[executionKey]
    const row: CheckpointRow = {
      tenantId,
      threadId,
      checkpointNs,
      checkpointId: checkpoint.id,
      parentCheckpointId: typeof parent === "string" && parent.length > 0 ? parent : null,
      type,
      checkpoint: bytes,
      metadataType,
      metadata: metadataBytes,
      channelVersions: Object.entries(checkpoint.channel_versions ?? {}).map(([channel, version]) => [channel, String(version)] as const),
      createdAt: createdAtOf(guard?.check, guard?.fence, checkpoint),
      executionId: typeof executionId === "string" && executionId.length > 0 ? executionId : undefined
    }
    await this.fenced(guard, (check) => this.rows.putCheckpoint(row, blobs, check))
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } }
  }

  putWrites(config: RunnableConfig, writes: Array<PendingWrite>, taskId: string, taskPath?: string): Promise<void> {
    return timed(config, () => this.putWritesUntimed(config, writes, taskId, taskPath))
  }

  private async putWritesUntimed(config: RunnableConfig, writes: Array<PendingWrite>, taskId: string, taskPath?: string): Promise<void> {
    const threadId = requireString(config, "thread_id", "putWrites")
    const checkpointId = requireString(config, "checkpoint_id", "putWrites")
    const checkpointNs: string = config.configurable?.checkpoint_ns ?? ""
    const tenantId = tenantOf(config)
    const rows: Array<WriteRow> = await Promise.all(writes.map(async ([channel, value], idx) => {
      const [type, bytes] = await this.serde.dumpsTyped(value)
      return {
        tenantId,
        threadId,
        checkpointNs,
        checkpointId,
        taskId,
        idx: WRITES_IDX_MAP[channel] ?? idx,
        channel,
        type,
        value: bytes,
        taskPath: taskPath ?? ""
      }
    }))
    const guard = await this.fenceFor(config)
    await this.fenced(guard, (check) => this.rows.putWrites(rows, check))
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.rows.deleteThread(defaultTenant, threadId)
  }
}

/**
 * Wraps a saver that cannot fence in its store (any `BaseCheckpointSaver`):
 * before each write of a pass it checks the local fence and renews the lease,
 * then writes. A holder frozen between the renewal and the write can still
 * overwrite — the window of one round trip that a fenced store closes.
 */
export class RenewingCheckpointSaver extends BaseCheckpointSaver {
  readonly inner: BaseCheckpointSaver

  constructor(inner: BaseCheckpointSaver) {
    super(inner.serde)
    this.inner = inner
  }

  private async renew(config: RunnableConfig) {
    const fence = config.configurable?.[fenceKey] as Fence | undefined
    if (fence === undefined) return
    const refused = fence.refusal()
    if (refused !== undefined) throw refused
    await fence.renewBeforeWrite()
  }

  getTuple(config: RunnableConfig) {
    return this.inner.getTuple(config)
  }

  list(config: RunnableConfig, options?: CheckpointListOptions) {
    return this.inner.list(config, options)
  }

  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions) {
    return timed(config, async () => {
      await this.renew(config)
      return this.inner.put(config, checkpoint, metadata, newVersions)
    })
  }

  putWrites(config: RunnableConfig, writes: Array<PendingWrite>, taskId: string, taskPath?: string) {
    return timed(config, async () => {
      await this.renew(config)
      return this.inner.putWrites(config, writes, taskId, taskPath)
    })
  }

  deleteThread(threadId: string) {
    return this.inner.deleteThread(threadId)
  }

  override getNextVersion(current: number | undefined) {
    return this.inner.getNextVersion(current)
  }
}
