/**
 * `CheckpointStore` over any `SqlClient`: the {@link CheckpointRows} that
 * baton's own LangGraph saver (`src/checkpoint/CheckpointSaver.ts`) runs on. Fenced.
 *
 * A fenced write checks, in the write's own transaction, that the lease row
 * (tenant, root) is still (holder, epoch) and live at the writer's `now`, and
 * writes; otherwise it rejects with `LeaseLostError` and writes nothing. It
 * rewrites the lease row only when a renewal is due (`expires_at` earlier
 * than `now + ttl - renewMillis`, see `FenceCheck`): then it pushes
 * `expires_at` to `now + ttl` and the write counts as a renewal. Either way it
 * answers the expiry the row holds after the write.
 * - SQLite: when the lease is as this store last saw it (or as it was taken)
 *   and no renewal is due, one statement that writes only if the lease row
 *   is still exactly that (a put goes through a view whose trigger checks
 *   the lease and writes blobs and checkpoint, `internal/checkpointPuts.ts`);
 *   otherwise `BEGIN IMMEDIATE` (the write lock first, so no acquire can
 *   come between), a `SELECT` of the lease row, an `UPDATE` only when due,
 *   the inserts, `COMMIT`;
 * - Postgres: one statement — a CTE selects the lease row `FOR UPDATE` (a
 *   concurrent acquire, renew or release waits for the write's commit, and
 *   the write re-reads a row one of them changed first), another pushes it
 *   only when due, and the inserts write only if the first found it.
 *
 * A checkpoint row keeps no channel values: each channel version is a blob
 * row written once (`put` stores the changed channels only). Checkpoint,
 * channel and write values are BLOB (SQLite) / BYTEA (Postgres), exactly the
 * bytes LangGraph's serde produced.
 *
 * Hot path: every operation is a generator of statements run by
 * `internal/direct.ts` — synchronously on a free `node:sqlite` connection,
 * else on a reserved connection — with the hot statements compiled once per
 * shape. That skips effect's per-statement machinery, which costs more than
 * the statements themselves on SQLite. These statements are not traced.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { BlobRow, CheckpointRow, CheckpointRows, ListQuery, TupleRows, WriteRow } from "../../src/stores/CheckpointRows.ts"
import * as CheckpointStores from "../../src/checkpoint/CheckpointStores.ts"
import { CheckpointStore, type CheckpointStoreShape } from "../../src/stores/CheckpointStore.ts"
import type { BatonConfigError } from "../../src/stores/Errors.ts"
import { refused } from "../../src/stores/internal/fence.ts"
import { type FenceCheck, type FencedWrite, renewalDueBefore } from "../../src/stores/Fence.ts"
import * as CheckpointPrune from "./internal/checkpointPrune.ts"
import * as CheckpointPuts from "./internal/checkpointPuts.ts"
import * as Direct from "./internal/direct.ts"
import { Begin, changes, Commit, type Op, query, refusable, texts } from "./internal/direct.ts"
import * as LeaseRows from "./internal/leaseRows.ts"
import { bytes, num, storeError, textOrNull } from "./internal/rows.ts"
import * as Store from "./internal/store.ts"
import * as SqlMigrations from "./SqlMigrations.ts"
import * as SqlTables from "./SqlTables.ts"

const store = "CheckpointStore"

/** Rows per multi-row INSERT (SQLite allows 32 766 bound values; Postgres 65 535). */
const chunk = 500

/** The `channel_versions` column: JSON `[[channel, version], …]`, or NULL when the row does not list them. */
const channelVersionsOf = (r: CheckpointRow): string | null => r.channelVersions === undefined ? null : JSON.stringify(r.channelVersions)

const toCheckpoint = (tenantId: string, threadId: string, checkpointNs: string, row: any): CheckpointRow => ({
  tenantId,
  threadId,
  checkpointNs,
  checkpointId: row.checkpoint_id,
  parentCheckpointId: textOrNull(row.parent_checkpoint_id),
  type: row.type,
  checkpoint: bytes(row.checkpoint),
  metadataType: row.metadata_type,
  metadata: bytes(row.metadata),
  ...(row.created_at == null ? {} : { createdAt: num(row.created_at) }),
  ...(row.execution_id == null ? {} : { executionId: row.execution_id })
})

/** The storage over the client (no migration: use {@link layer} or run `SqlMigrations.migrate` first). */
export const makeRows = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<CheckpointRows, BatonConfigError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    // A key compared in a sorted read, and a limit, written so that SQLite compiles the read once (see `internal/stablePlan.ts`).
    const { isPg, limitOf, sortedKey, sql, tables: t } = yield* Store.open(options)
    const context = yield* Effect.context<SqlClient.SqlClient>()
    const runPromise = Effect.runPromiseWith(context)
    const checkpoints = sql(t.checkpoints)
    const writes = sql(t.checkpointWrites)
    const blobs_ = sql(t.checkpointBlobs)
    const direct = Direct.make(sql)

    const checkpointColumns = sql.literal(CheckpointPuts.checkpointColumns.join(", "))
    const checkpointValues = (r: CheckpointRow) =>
      sql`${r.tenantId}, ${r.threadId}, ${r.checkpointNs}, ${r.checkpointId}, ${r.parentCheckpointId}, ${r.type}, ${r.checkpoint}, ${r.metadataType}, ${r.metadata}, ${
        channelVersionsOf(r)
      }, ${r.createdAt ?? null}, ${r.executionId ?? null}`
    const checkpointUpsert = sql.literal(CheckpointPuts.checkpointUpsert)

    const writeColumns = sql.literal("tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path")
    const writeValues = (w: WriteRow) =>
      sql`${w.tenantId}, ${w.threadId}, ${w.checkpointNs}, ${w.checkpointId}, ${w.taskId}, ${w.idx}, ${w.channel}, ${w.type}, ${w.value}, ${w.taskPath}`
    const writeTuple = (w: WriteRow) => sql`(${writeValues(w)})`
    // A write with idx ≥ 0 that exists is kept; one with idx < 0 (LangGraph's special channels) is replaced.
    const writeUpsert = sql.literal(`ON CONFLICT (tenant_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
      channel = excluded.channel, type = excluded.type, value = excluded.value, task_path = excluded.task_path
      WHERE excluded.idx < 0`)

    /** The lease row if it is still the writer's and live at its `now`; locked against a concurrent acquire on Postgres. */
    const selectLease = (f: FenceCheck) => LeaseRows.held(sql, t.leases, f.lease, f.now)
    /** Pushes the lease (already checked in this transaction). */
    const pushLease = (f: FenceCheck) => LeaseRows.push(sql, t.leases, f.lease, f.now + f.ttlMillis)

    /** Why a fenced write was refused, read after the fact (only on the failure path); throws `LeaseLostError`. */
    function* leaseLost(f: FenceCheck): Op<never> {
      throw refused("checkpoint write", LeaseRows.rowView(yield LeaseRows.row(sql, t.leases, f.lease)), f.lease, f.now)
    }

    /** Inside a transaction: checks the lease (refusing the write if it is not current) and pushes it when due. */
    function* checkFence(f: FenceCheck | undefined): Op<FencedWrite | undefined> {
      if (f === undefined) return undefined
      const held = yield selectLeaseQuery(f)
      if (held.length === 0) {
        known.delete(knownKey(f))
        yield* leaseLost(f)
      }
      const expiresAt = num(held[0].expires_at)
      if (expiresAt >= renewalDueBefore(f)) {
        remember(f, expiresAt)
        return { expiresAt, renewed: false }
      }
      yield pushLeaseQuery(f)
      remember(f, f.now + f.ttlMillis)
      return { expiresAt: f.now + f.ttlMillis, renewed: true }
    }

    /**
     * Postgres, one statement: the CTEs that check the lease (`lease`, the row
     * locked, empty unless current) and push it when due (`renewed`); the
     * statement's inserts read `WHERE EXISTS (SELECT 1 FROM lease)`. Its main
     * query selects {@link fencedResult}.
     */
    const fenceCtes = (f: FenceCheck): ReadonlyArray<Fragment> =>
      LeaseRows.fenceCtes(sql, t.leases, f.lease, { now: f.now, ttlMillis: f.ttlMillis, dueBefore: renewalDueBefore(f) })
    const fencedResult = LeaseRows.fencedResult(sql)
    /** Reads {@link fencedResult}'s row: the lease as held after the write, or the refusal. */
    function* fencedOutcome(f: FenceCheck, rows: ReadonlyArray<any>): Op<FencedWrite> {
      const row = rows[0]
      if (row === undefined || row.held == null) yield* leaseLost(f)
      return row.renewed == null ? { expiresAt: num(row.held), renewed: false } : { expiresAt: num(row.renewed), renewed: true }
    }

    const blobColumns = sql.literal("tenant_id, thread_id, checkpoint_ns, channel, version, type, value")
    const blobValues = (b: BlobRow) => sql`${b.tenantId}, ${b.threadId}, ${b.checkpointNs}, ${b.channel}, ${b.version}, ${b.type}, ${b.value}`
    const blobTuple = (b: BlobRow) => sql`(${blobValues(b)})`
    // A version's value never changes: a blob that exists is kept.
    const blobUpsert = sql.literal("ON CONFLICT (tenant_id, thread_id, checkpoint_ns, channel, version) DO NOTHING")

    const insertCheckpoint = (r: CheckpointRow) =>
      sql`INSERT INTO ${checkpoints} (${checkpointColumns}) VALUES (${checkpointValues(r)}) ${checkpointUpsert}`
    const insertBlobs = (part: ReadonlyArray<BlobRow>) =>
      sql`INSERT INTO ${blobs_} (${blobColumns}) VALUES ${sql.csv(part.map(blobTuple))} ${blobUpsert}`
    const insertWrites = (part: ReadonlyArray<WriteRow>) =>
      sql`INSERT INTO ${writes} (${writeColumns}) VALUES ${sql.csv(part.map(writeTuple))} ${writeUpsert}`

    // Hot statements, compiled once per shape; their parameters in the order the statements above interpolate them.
    const dummyBlob: BlobRow = { tenantId: "", threadId: "", checkpointNs: "", channel: "", version: "", type: "", value: new Uint8Array() }
    const dummyWrite: WriteRow = { tenantId: "", threadId: "", checkpointNs: "", checkpointId: "", taskId: "", idx: 0, channel: "", type: "", value: new Uint8Array(), taskPath: "" }
    const dummyCheckpoint: CheckpointRow = { ...dummyBlob, checkpointId: "", parentCheckpointId: null, checkpoint: new Uint8Array(), metadataType: "", metadata: new Uint8Array() }
    const dummyFence: FenceCheck = { lease: { tenantId: "", rootExecutionId: "", holder: "", epoch: 1, expiresAt: 0 }, ttlMillis: 1, renewMillis: 0, now: 0 }
    const selectLeaseText = texts(() => selectLease(dummyFence))
    const selectLeaseQuery = (f: FenceCheck) =>
      query(selectLeaseText(0), [f.lease.tenantId, f.lease.rootExecutionId, f.lease.holder, f.lease.epoch, f.now])
    const pushLeaseText = texts(() => pushLease(dummyFence))
    const pushLeaseQuery = (f: FenceCheck) => query(pushLeaseText(0), [f.now + f.ttlMillis, f.lease.tenantId, f.lease.rootExecutionId])
    const checkpointText = texts(() => insertCheckpoint(dummyCheckpoint))
    const checkpointParams = (r: CheckpointRow) =>
      [r.tenantId, r.threadId, r.checkpointNs, r.checkpointId, r.parentCheckpointId, r.type, r.checkpoint, r.metadataType, r.metadata, channelVersionsOf(r), r.createdAt ?? null, r.executionId ?? null]
    const checkpointQuery = (r: CheckpointRow) => query(checkpointText(0), checkpointParams(r))
    const blobsText = texts((n: number) => insertBlobs(Array.from({ length: n }, () => dummyBlob)))
    const blobsQuery = (part: ReadonlyArray<BlobRow>) =>
      query(blobsText(part.length), part.flatMap((b) => [b.tenantId, b.threadId, b.checkpointNs, b.channel, b.version, b.type, b.value]))
    const writesText = texts((n: number) => insertWrites(Array.from({ length: n }, () => dummyWrite)))
    const writesQuery = (part: ReadonlyArray<WriteRow>) =>
      query(
        writesText(part.length),
        part.flatMap((w) => [w.tenantId, w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx, w.channel, w.type, w.value, w.taskPath])
      )

    /**
     * SQLite, the fence folded into the write. This store remembers, per
     * lease, the (holder, epoch, expiry) its last full check read or its
     * last renewal wrote ({@link known}). When that expiry is live and no
     * renewal is due at the writer's `now`, the write is guarded by
     * {@link freshLease} — the lease row is still exactly (holder, epoch,
     * that expiry) — inside the write's own statement: it writes only then,
     * atomically, and its change count (for a put, whether the trigger of
     * `internal/checkpointPuts.ts` refused it) says whether it did. Then the
     * stored expiry is the remembered one, so the answer is exact. When it
     * wrote nothing (someone renewed, took or released the
     * lease meanwhile), the caller takes the full path (check, refuse or
     * renew, write), which learns the row again. Nothing relies on how
     * others move the expiry. No `RETURNING`: on SQLite it costs two to three
     * times the insert.
     */
    const known = new Map<string, { readonly holder: string; readonly epoch: number; readonly expiresAt: number }>()
    const knownKey = (f: FenceCheck) => `${f.lease.tenantId}\u0000${f.lease.rootExecutionId}`
    const remember = (f: FenceCheck, expiresAt: number) => {
      // Bounded: one entry per tree this instance writes; forgetting only costs one full check.
      if (known.size >= 10_000) known.clear()
      known.set(knownKey(f), { holder: f.lease.holder, epoch: f.lease.epoch, expiresAt })
    }
    /**
     * The expiry the folded statements may try (SQLite; Postgres folds the
     * whole fence into one statement anyway): the remembered one, else — the
     * first write on a lease — the expiry the lease was taken with. Undefined
     * when that is not live or a renewal is due at the writer's `now`.
     */
    const foldable = (f: FenceCheck | undefined): number | undefined => {
      if (f === undefined || isPg) return undefined
      const k = known.get(knownKey(f))
      const expiresAt = k !== undefined && k.holder === f.lease.holder && k.epoch === f.lease.epoch ? k.expiresAt : f.lease.expiresAt
      return expiresAt >= renewalDueBefore(f) && expiresAt > f.now ? expiresAt : undefined
    }
    const freshLease = (f: FenceCheck) => LeaseRows.unchanged(sql, t.leases, f.lease, f.lease.expiresAt)
    const freshParams = (f: FenceCheck, expiresAt: number) => [f.lease.tenantId, f.lease.rootExecutionId, f.lease.holder, f.lease.epoch, expiresAt]

    // Rows as `SELECT …, … WHERE fresh UNION ALL …` (measured faster than `SELECT * FROM (VALUES …) WHERE fresh`).
    const fencedRows = (n: number, tuple: Fragment) =>
      sql.join(" UNION ALL ", false)(Array.from({ length: n }, () => sql`SELECT ${tuple} WHERE ${freshLease(dummyFence)}`))
    const fencedWritesText = texts((n: number) =>
      sql`INSERT INTO ${writes} (${writeColumns}) ${fencedRows(n, writeValues(dummyWrite))} ${writeUpsert}`
    )
    const fencedWritesQuery = (part: ReadonlyArray<WriteRow>, f: FenceCheck, expiresAt: number) =>
      changes(
        fencedWritesText(part.length),
        part.flatMap((w) => [w.tenantId, w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx, w.channel, w.type, w.value, w.taskPath, ...freshParams(f, expiresAt)])
      )
    // SQLite: a put as one statement through the view of migration 19 (see `internal/checkpointPuts.ts`).
    const putText = texts(() =>
      sql`INSERT INTO ${sql(t.checkpointPuts)} (${sql.literal(CheckpointPuts.columns.join(", "))})
        VALUES (${sql.csv(CheckpointPuts.columns.map(() => sql`${null}`))})`
    )
    const noFence = [null, null, null, null, null]
    const emptySlot = [null, null, null, null]
    /** The view's parameters: the checkpoint's, the fence's (the lease as remembered, or none), each slot's. */
    const putParams = (r: CheckpointRow, blobs: ReadonlyArray<BlobRow>, fence: FenceCheck | undefined, expiresAt: number | undefined) => {
      const params: Array<unknown> = checkpointParams(r)
      params.push(...(fence === undefined ? noFence : freshParams(fence, expiresAt!)))
      for (let i = 0; i < CheckpointPuts.slots; i++) {
        const b = blobs[i]
        params.push(...(b === undefined ? emptySlot : [b.channel, b.version, b.type, b.value]))
      }
      return params
    }
    /** Whether a blob is keyed by the checkpoint's (tenant, thread, ns): the view files the blobs it carries under the checkpoint's. */
    const sameThread = (b: BlobRow, r: CheckpointRow) => b.tenantId === r.tenantId && b.threadId === r.threadId && b.checkpointNs === r.checkpointNs
    /** One put statement: 1 when written, 0 when the trigger found the lease moved (nothing written). */
    const putQuery = (r: CheckpointRow, blobs: ReadonlyArray<BlobRow>, fence: FenceCheck | undefined, expiresAt: number | undefined) =>
      refusable(putText(0), putParams(r, blobs, fence, expiresAt), CheckpointPuts.leaseMoved)

    function* putCheckpoint(r: CheckpointRow, blobs: ReadonlyArray<BlobRow>, fence: FenceCheck | undefined): Op<FencedWrite | undefined> {
      if (fence === undefined && blobs.length === 0) {
        yield checkpointQuery(r)
        return undefined
      }
      if (isPg && blobs.length <= chunk) {
        // One statement: lease check and push (when fenced), blobs and checkpoint, each insert reading from the lease CTE.
        const from = fence === undefined ? sql.literal("") : sql.literal(" WHERE EXISTS (SELECT 1 FROM lease)")
        const ctes: Array<Fragment> = fence === undefined ? [] : [...fenceCtes(fence)]
        if (blobs.length > 0) {
          ctes.push(sql`blobs AS (
            INSERT INTO ${blobs_} (${blobColumns})
            SELECT v.* FROM (VALUES ${sql.csv(blobs.map(blobTuple))}) AS v (${blobColumns})${from}
            ${blobUpsert}
            RETURNING 1)`)
        }
        const insert = sql`INSERT INTO ${checkpoints} (${checkpointColumns}) SELECT ${checkpointValues(r)}${from}
          ${checkpointUpsert}`
        if (fence === undefined) {
          yield sql`WITH ${sql.csv(ctes)} ${insert}`
          return undefined
        }
        const rows = yield sql`WITH ${sql.csv(ctes)}, checkpoint AS (${insert} RETURNING 1) ${fencedResult}`
        return yield* fencedOutcome(fence, rows)
      }
      if (!isPg && blobs.length <= CheckpointPuts.slots && blobs.every((b) => sameThread(b, r))) {
        if (fence === undefined) {
          yield putQuery(r, blobs, undefined, undefined)
          return undefined
        }
        // The fence folded into the statement: no lease read, no transaction.
        const fresh = foldable(fence)
        if (fresh !== undefined) {
          const [{ changes: n }] = yield putQuery(r, blobs, fence, fresh)
          if (n > 0) return { expiresAt: fresh, renewed: false }
        }
      }
      // A renewal is due, the lease moved, or blobs the view cannot carry: the full path, in a transaction.
      yield Begin
      const fenced = yield* checkFence(fence)
      for (const part of chunks(blobs)) if (part.length > 0) yield blobsQuery(part)
      yield checkpointQuery(r)
      yield Commit
      return fenced
    }

    function* putWrites(rows: ReadonlyArray<WriteRow>, fence: FenceCheck | undefined): Op<FencedWrite | undefined> {
      if (fence === undefined && rows.length <= chunk) {
        if (rows.length > 0) yield writesQuery(rows)
        return undefined
      }
      if (fence !== undefined && isPg && rows.length <= chunk) {
        const ctes: Array<Fragment> = [...fenceCtes(fence)]
        if (rows.length > 0) {
          ctes.push(sql`ins AS (
              INSERT INTO ${writes} (${writeColumns})
              SELECT v.* FROM (VALUES ${sql.csv(rows.map(writeTuple))}) AS v (${writeColumns})
              WHERE EXISTS (SELECT 1 FROM lease)
              ${writeUpsert}
              RETURNING 1)`)
        }
        const result = yield sql`WITH ${sql.csv(ctes)} ${fencedResult}`
        return yield* fencedOutcome(fence, result)
      }
      const fresh = foldable(fence)
      if (fresh !== undefined && rows.length > 0 && rows.length <= chunk / 10) {
        // One self-committing statement. Fewer rows changed than sent: a lease that is not as remembered, or rows
        // kept as they were (a retried write) — either way the full path decides.
        const [{ changes: n }] = yield fencedWritesQuery(rows, fence!, fresh)
        if (n === rows.length) return { expiresAt: fresh, renewed: false }
      }
      yield Begin
      const fenced = yield* checkFence(fence)
      for (const part of chunks(rows)) if (part.length > 0) yield writesQuery(part)
      yield Commit
      return fenced
    }

    const selectBlobsText = texts((n: number) =>
      sql`SELECT channel, version, type, value FROM ${blobs_}
        WHERE tenant_id = ${""} AND thread_id = ${""} AND checkpoint_ns = ${""}
          AND (channel, version) IN (VALUES ${sql.csv(Array.from({ length: n }, () => sql`(${""}, ${""})`))})`
    )
    const selectLatestText = texts(() =>
      sql`SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata, channel_versions FROM ${checkpoints}
        WHERE tenant_id = ${sortedKey("")} AND thread_id = ${sortedKey("")} AND checkpoint_ns = ${sortedKey("")}
        ORDER BY checkpoint_id DESC LIMIT 1`
    )
    const selectCheckpointText = texts(() =>
      sql`SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata, channel_versions FROM ${checkpoints}
        WHERE tenant_id = ${""} AND thread_id = ${""} AND checkpoint_ns = ${""} AND checkpoint_id = ${""}`
    )
    const selectWritesText = texts((n: number) =>
      sql`SELECT checkpoint_id, task_id, idx, channel, type, value, task_path FROM ${writes}
        WHERE tenant_id = ${""} AND thread_id = ${""} AND checkpoint_ns = ${""} AND ${
        n === 1 ? sql`checkpoint_id = ${""}` : sql`checkpoint_id IN (${sql.csv(Array.from({ length: n }, () => sql`${""}`))})`
      }`
    )

    /**
     * Postgres: a checkpoint (the newest without an id), its pending writes
     * and its blobs in one statement — one round trip: the row (`k` 0), each
     * write (1), each blob among the versions its `channel_versions` column
     * lists (2), in shared columns. (On SQLite the same statement measured
     * slower than its three parts run one after the other: the CTE is
     * materialized and the compound select costs more than the round trips
     * it saves, which SQLite does not have.)
     */
    const tupleText = texts((byId: boolean) => {
      const key = (alias: string) =>
        sql`${sql.literal(alias)}tenant_id = ${""} AND ${sql.literal(alias)}thread_id = ${""} AND ${sql.literal(alias)}checkpoint_ns = ${""}`
      const nul = (type: string) => sql.literal(isPg ? `NULL::${type}` : "NULL")
      const pair = (i: number) => sql.literal(isPg ? `j.value->>${i}` : `json_extract(j.value, '$[${i}]')`)
      const pairs = sql.literal(isPg ? "jsonb_array_elements(cp.channel_versions::jsonb) AS j" : "json_each(cp.channel_versions) AS j")
      const cp = sql`SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata, channel_versions FROM ${checkpoints}
        WHERE ${key("")} ${byId ? sql`AND checkpoint_id = ${""}` : sql.literal("ORDER BY checkpoint_id DESC LIMIT 1")}`
      return sql`WITH cp AS ${sql.literal(isPg ? "MATERIALIZED " : "")}(${cp})
        SELECT 0 AS k, checkpoint_id AS a, parent_checkpoint_id AS b, type AS c, checkpoint AS d, metadata_type AS e, metadata AS f,
          channel_versions AS g, ${nul("integer")} AS h FROM cp
        UNION ALL
        SELECT 1, w.task_id, w.channel, w.type, w.value, w.task_path, ${nul("bytea")}, ${nul("text")}, w.idx
          FROM cp CROSS JOIN ${writes} AS w WHERE ${key("w.")} AND w.checkpoint_id = cp.checkpoint_id
        UNION ALL
        SELECT 2, b.channel, b.version, b.type, b.value, ${nul("text")}, ${nul("bytea")}, ${nul("text")}, ${nul("integer")}
          FROM cp CROSS JOIN ${pairs} CROSS JOIN ${blobs_} AS b WHERE ${key("b.")} AND b.channel = ${pair(0)} AND b.version = ${pair(1)}`
    })

    /**
     * SQLite: the checkpoint row, then its writes and the blobs its
     * `channel_versions` column lists, three statements in one synchronous
     * call (no deserialization between them). A row without the column
     * (stored before migration 4) answers `blobs` undefined.
     */
    function* getTupleSqlite(tenantId: string, threadId: string, checkpointNs: string, checkpointId: string | undefined): Op<TupleRows | undefined> {
      const rows = yield checkpointId === undefined
        ? query(selectLatestText(0), [tenantId, threadId, checkpointNs])
        : query(selectCheckpointText(0), [tenantId, threadId, checkpointNs, checkpointId])
      if (rows.length === 0) return undefined
      const checkpoint = toCheckpoint(tenantId, threadId, checkpointNs, rows[0])
      const writesOf = yield* getWrites(tenantId, threadId, checkpointNs, [checkpoint.checkpointId])
      const listed = rows[0].channel_versions
      if (listed == null) return { checkpoint, writes: writesOf, blobs: undefined }
      const versions = (JSON.parse(listed) as ReadonlyArray<readonly [string, string]>).map(([channel, version]) => ({ channel, version }))
      const blobs = versions.length === 0 ? [] : yield* getBlobs(tenantId, threadId, checkpointNs, versions)
      return { checkpoint, writes: writesOf, blobs }
    }

    function* getTuple(tenantId: string, threadId: string, checkpointNs: string, checkpointId: string | undefined): Op<TupleRows | undefined> {
      if (!isPg) return yield* getTupleSqlite(tenantId, threadId, checkpointNs, checkpointId)
      const k = [tenantId, threadId, checkpointNs]
      const rows = yield checkpointId === undefined
        ? query(tupleText(false), [...k, ...k, ...k])
        : query(tupleText(true), [...k, checkpointId, ...k, ...k])
      let checkpoint: CheckpointRow | undefined
      let listed = false
      const writesOf: Array<WriteRow> = []
      const blobs: Array<BlobRow> = []
      for (const row of rows) {
        const kind = num(row.k)
        if (kind === 0) {
          checkpoint = toCheckpoint(tenantId, threadId, checkpointNs, { ...row, checkpoint_id: row.a, parent_checkpoint_id: row.b, type: row.c, checkpoint: row.d, metadata_type: row.e, metadata: row.f })
          listed = row.g != null
        } else if (kind === 1) {
          writesOf.push({
            tenantId,
            threadId,
            checkpointNs,
            checkpointId: "",
            taskId: row.a,
            idx: num(row.h),
            channel: row.b,
            type: row.c,
            value: bytes(row.d),
            taskPath: row.e ?? ""
          })
        } else {
          blobs.push({ tenantId, threadId, checkpointNs, channel: row.a, version: String(row.b), type: row.c, value: bytes(row.d) })
        }
      }
      if (checkpoint === undefined) return undefined
      const id = checkpoint.checkpointId
      return { checkpoint, writes: writesOf.map((w) => ({ ...w, checkpointId: id })), blobs: listed ? blobs : undefined }
    }

    function* getBlobs(
      tenantId: string,
      threadId: string,
      checkpointNs: string,
      versions: ReadonlyArray<{ readonly channel: string; readonly version: string }>
    ): Op<ReadonlyArray<BlobRow>> {
      const out: Array<BlobRow> = []
      for (const part of chunks(versions)) {
        const params: Array<unknown> = [tenantId, threadId, checkpointNs]
        for (const v of part) params.push(v.channel, v.version)
        const rows = yield query(selectBlobsText(part.length), params)
        for (const b of rows) {
          out.push({ tenantId, threadId, checkpointNs, channel: b.channel, version: String(b.version), type: b.type, value: bytes(b.value) })
        }
      }
      return out
    }

    function* getCheckpoint(tenantId: string, threadId: string, checkpointNs: string, checkpointId: string | undefined): Op<CheckpointRow | undefined> {
      const rows = yield checkpointId === undefined
        ? query(selectLatestText(0), [tenantId, threadId, checkpointNs])
        : query(selectCheckpointText(0), [tenantId, threadId, checkpointNs, checkpointId])
      return rows.length === 0 ? undefined : toCheckpoint(tenantId, threadId, checkpointNs, rows[0])
    }

    function* getWrites(tenantId: string, threadId: string, checkpointNs: string, checkpointIds: ReadonlyArray<string>): Op<ReadonlyArray<WriteRow>> {
      const out: Array<WriteRow> = []
      for (const part of chunks(checkpointIds)) {
        if (part.length === 0) continue
        const rows = yield query(selectWritesText(part.length), [tenantId, threadId, checkpointNs, ...part])
        for (const w of rows) {
          out.push({
            tenantId,
            threadId,
            checkpointNs,
            checkpointId: w.checkpoint_id,
            taskId: w.task_id,
            idx: num(w.idx),
            channel: w.channel,
            type: w.type,
            value: bytes(w.value),
            taskPath: w.task_path ?? ""
          })
        }
      }
      return out
    }

    function* listCheckpoints(tenantId: string, q: ListQuery): Op<ReadonlyArray<CheckpointRow>> {
      const where: Array<Fragment> = [sql`tenant_id = ${sortedKey(tenantId)}`]
      if (q.threadId !== undefined) where.push(sql`thread_id = ${sortedKey(q.threadId)}`)
      if (q.checkpointNs !== undefined) where.push(sql`checkpoint_ns = ${sortedKey(q.checkpointNs)}`)
      if (q.checkpointId !== undefined) where.push(sql`checkpoint_id = ${sortedKey(q.checkpointId)}`)
      if (q.before !== undefined) where.push(sql`checkpoint_id < ${q.before}`)
      const limit = q.limit !== undefined && Number.isFinite(q.limit) ? sql` LIMIT ${limitOf(Math.max(0, Math.floor(q.limit)))}` : sql.literal("")
      const rows = yield sql`SELECT tenant_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata_type, metadata,
        created_at, execution_id FROM ${checkpoints} WHERE ${sql.and(where)}
        ORDER BY checkpoint_id DESC${limit}`
      return rows.map((row) => toCheckpoint(row.tenant_id, row.thread_id, row.checkpoint_ns, row))
    }

    function* deleteThread(tenantId: string, threadId: string): Op<void> {
      yield Begin
      yield sql`DELETE FROM ${checkpoints} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`
      yield sql`DELETE FROM ${writes} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`
      yield sql`DELETE FROM ${blobs_} WHERE tenant_id = ${tenantId} AND thread_id = ${threadId}`
      yield Commit
    }

    const prune = CheckpointPrune.make({ sql, isPg, checkpoints, writes, blobs: blobs_, limitOf })

    /** Runs one rows operation for a LangGraph promise; `SqlError` becomes `StoreError`. */
    const call = <A>(operation: string, op: () => Op<A>): Promise<A> =>
      direct.run(op, runPromise, storeError(store, operation))
    /** A write: concurrent ones share a commit on SQLite (group commit, see `internal/direct.ts`). */
    const write = <A>(operation: string, op: () => Op<A>): Promise<A> =>
      direct.write(op, runPromise, storeError(store, operation))

    const rows: CheckpointRows = {
      fenced: true,
      putCheckpoint: (row, blobs, fence) => write("putCheckpoint", () => putCheckpoint(row, blobs, fence)),
      putWrites: (rows, fence) => write("putWrites", () => putWrites(rows, fence)),
      getCheckpoint: (tenantId, threadId, ns, id) => call("getCheckpoint", () => getCheckpoint(tenantId, threadId, ns, id)),
      getTuple: (tenantId, threadId, ns, id) => call("getTuple", () => getTuple(tenantId, threadId, ns, id)),
      getWrites: (tenantId, threadId, ns, ids) =>
        ids.length === 0 ? Promise.resolve([]) : call("getWrites", () => getWrites(tenantId, threadId, ns, ids)),
      getBlobs: (tenantId, threadId, ns, versions) =>
        versions.length === 0 ? Promise.resolve([]) : call("getBlobs", () => getBlobs(tenantId, threadId, ns, versions)),
      listCheckpoints: (tenantId, query) => call("listCheckpoints", () => listCheckpoints(tenantId, query)),
      deleteThread: (tenantId, threadId) => call("deleteThread", () => deleteThread(tenantId, threadId)),
      listThreads: (after, limit) => call("listThreads", () => prune.listThreads(after, limit)),
      // Retention's batches never hold up a step's writes (see `Direct.background`).
      pruneThread: (tenantId, threadId, rule, limit) =>
        direct.background(() => prune.pruneThread(tenantId, threadId, rule, limit), runPromise, storeError(store, "pruneThread")),
      ping: () => call("ping", function*() {
        yield sql`SELECT 1`
      })
    }
    return rows
  })

const chunks = <A>(items: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> => {
  if (items.length <= chunk) return [items]
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += chunk) out.push(items.slice(i, i + chunk))
  return out
}

/** The service over the client: baton's saver on {@link makeRows} (no migration). */
export const make = (options: SqlTables.SqlStoreOptions = {}): Effect.Effect<CheckpointStoreShape, BatonConfigError, SqlClient.SqlClient> =>
  Effect.map(makeRows(options), CheckpointStores.fromRows)

/** `CheckpointStore` on the `SqlClient` in context, over the schema a migrations Layer migrated (it requires `SqlMigrations.Migrated`: `SqliteMigrations.layer` or `PgMigrations.layer`). */
export const layer = (options: SqlTables.SqlStoreOptions = {}): Layer.Layer<CheckpointStore, BatonConfigError, SqlClient.SqlClient | SqlMigrations.Migrated> =>
  Store.migratedLayer(CheckpointStore, make, options)
