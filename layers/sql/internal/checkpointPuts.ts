/**
 * SQLite: one checkpoint put as ONE statement. A put writes the checkpoint
 * row and the blobs of the channels it changed, fenced by the writer's lease;
 * as separate statements that takes a transaction (`BEGIN`, the blobs, the
 * checkpoint, `COMMIT`: four statements a step). Instead the put inserts one
 * row into a view (migration 19) whose `INSTEAD OF` trigger, inside that one
 * statement and so atomically:
 *
 * 1. refuses the whole statement with `RAISE(ABORT, …)` ({@link leaseMoved})
 *    when a fence is given and the lease row is no longer exactly (holder,
 *    epoch, expiry) — nothing is written, and an open transaction stays
 *    open for the caller's full check;
 * 2. inserts up to {@link slots} blobs under the checkpoint's (tenant,
 *    thread, ns) — a put whose blobs are keyed otherwise takes the
 *    transaction — keeping one that exists (a version's value never changes);
 * 3. upserts the checkpoint row.
 *
 * A put with more blobs than slots takes the transaction. Postgres needs none
 * of this: data-modifying CTEs make its put one statement already.
 *
 * @internal
 */
import type * as SqlTables from "../SqlTables.ts"
import * as LeaseRows from "./leaseRows.ts"

/** The blobs one put statement carries. */
export const slots = 8

/** The message of the trigger's refusal: the lease is not the one the writer remembered. */
export const leaseMoved = "baton: the lease moved since the writer last read it"

/** A checkpoint row's columns, in the order every checkpoint insert (this view's and the store's own) binds them. */
export const checkpointColumns = [
  "tenant_id",
  "thread_id",
  "checkpoint_ns",
  "checkpoint_id",
  "parent_checkpoint_id",
  "type",
  "checkpoint",
  "metadata_type",
  "metadata",
  "channel_versions",
  "created_at",
  "execution_id"
] as const
/** What every checkpoint insert ends with: a row that exists takes the new values (its key stays). */
export const checkpointUpsert = `ON CONFLICT (tenant_id, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET ${
  checkpointColumns.slice(4).map((c) => `${c} = excluded.${c}`).join(", ")
}`
const fenceColumns = ["fence_tenant_id", "fence_root_execution_id", "fence_holder", "fence_epoch", "fence_expires_at"] as const
const slotColumns = (i: number) => [`blob_channel_${i}`, `blob_version_${i}`, `blob_type_${i}`, `blob_value_${i}`] as const
const slotNumbers = Array.from({ length: slots }, (_, i) => i + 1)

/** The view's columns in the order a put binds them: the checkpoint's, the fence's, then each slot's (channel, version, type, value). */
export const columns: ReadonlyArray<string> = [...checkpointColumns, ...fenceColumns, ...slotNumbers.flatMap(slotColumns)]

/** The view and its trigger (migration 19, SQLite only). */
export const ddl = (t: SqlTables.SqlTables): ReadonlyArray<string> => {
  const extra = columns.slice(checkpointColumns.length).map((c) => `NULL AS ${c}`).join(", ")
  const slotRows = slotNumbers.map((i) => {
    const [channel, version, type, value] = slotColumns(i)
    return `SELECT NEW.tenant_id, NEW.thread_id, NEW.checkpoint_ns, NEW.${channel}, NEW.${version}, NEW.${type}, NEW.${value} WHERE NEW.${channel} IS NOT NULL`
  })
  return [
    `CREATE VIEW "${t.checkpointPuts}" AS SELECT ${checkpointColumns.join(", ")}, ${extra} FROM "${t.checkpoints}" WHERE 0`,
    `CREATE TRIGGER "${t.checkpointPuts}_insert" INSTEAD OF INSERT ON "${t.checkpointPuts}"
    BEGIN
      SELECT RAISE(ABORT, '${leaseMoved}') WHERE NEW.fence_holder IS NOT NULL AND NOT ${
    LeaseRows.unchangedAsOf(t.leases, {
      tenantId: "fence_tenant_id",
      rootExecutionId: "fence_root_execution_id",
      holder: "fence_holder",
      epoch: "fence_epoch",
      expiresAt: "fence_expires_at"
    })
  };
      INSERT INTO "${t.checkpointBlobs}" (tenant_id, thread_id, checkpoint_ns, channel, version, type, value)
        ${slotRows.join(" UNION ALL ")}
        ON CONFLICT (tenant_id, thread_id, checkpoint_ns, channel, version) DO NOTHING;
      INSERT INTO "${t.checkpoints}" (${checkpointColumns.join(", ")})
        VALUES (${checkpointColumns.map((c) => `NEW.${c}`).join(", ")})
        ${checkpointUpsert};
    END`
  ]
}
