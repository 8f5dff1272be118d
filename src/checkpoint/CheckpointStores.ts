/**
 * The two ways a backend makes a `CheckpointStore`: over `CheckpointRows`
 * (baton's fenced saver) or over any LangGraph saver (unfenced).
 *
 * @since 0.1.0
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Effect } from "effect"
import type { CheckpointLifecycle, CheckpointStoreShape } from "../stores/CheckpointStore.ts"
import { StoreError } from "../stores/Errors.ts"
import * as V from "../stores/internal/validate.ts"
import type { CheckpointRows } from "../stores/CheckpointRows.ts"
import { BatonCheckpointSaver, RenewingCheckpointSaver } from "./CheckpointSaver.ts"

const storeError = (operation: string) => (cause: unknown) =>
  new StoreError({ store: "CheckpointStore", operation, reason: cause instanceof Error ? cause.message : String(cause), cause })

const op = <A>(operation: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: storeError(operation) })

/** The lifecycle operations over rows that offer retention (both of its optional members). */
const lifecycleOf = (rows: CheckpointRows): CheckpointLifecycle | undefined => {
  const { listThreads, pruneThread } = rows
  if (listThreads === undefined || pruneThread === undefined) return undefined
  return {
    listThreads: (after, limit) => op("listThreads", () => listThreads(after, limit)),
    pruneThread: (tenantId, threadId, rule, limit) =>
      V.checked(V.ids("CheckpointStore.pruneThread", { tenantId, threadId }), () => op("pruneThread", () => pruneThread(tenantId, threadId, rule, limit))),
    listCheckpoints: (tenantId, threadId, options) =>
      V.checked(V.ids("CheckpointStore.listCheckpoints", { tenantId, threadId }), () =>
        op("listCheckpoints", () =>
          rows.listCheckpoints(tenantId, {
            threadId,
            checkpointNs: options.checkpointNs,
            checkpointId: options.checkpointId,
            before: options.before,
            limit: options.limit
          })))
  }
}

/**
 * A checkpoint store over baton's own saver on the given rows (fenced when the rows are).
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromRows = (rows: CheckpointRows): CheckpointStoreShape => {
  return {
    saver: new BatonCheckpointSaver(rows),
    fenced: rows.fenced,
    lifecycle: lifecycleOf(rows),
    deleteThread: (tenantId, threadId) =>
      V.checked(V.ids("CheckpointStore.deleteThread", { tenantId, threadId }), () => Effect.tryPromise({ try: () => rows.deleteThread(tenantId, threadId), catch: storeError("deleteThread") })),
    ping: Effect.tryPromise({ try: () => rows.ping(), catch: storeError("ping") })
  }
}

/**
 * A checkpoint store over any `BaseCheckpointSaver`. Unfenced: each write of a pass
 * follows a lease renewal (see `RenewingCheckpointSaver`). The saver knows
 * no tenants: its `deleteThread` ignores the tenant, and thread ids must be
 * unique across tenants.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromSaver = (inner: BaseCheckpointSaver): CheckpointStoreShape => {
  const saver = new RenewingCheckpointSaver(inner)
  return {
    saver,
    fenced: false,
    deleteThread: (tenantId, threadId) =>
      V.checked(V.ids("CheckpointStore.deleteThread", { tenantId, threadId }), () => op("deleteThread", () => saver.deleteThread(threadId))),
    ping: op("ping", () => saver.getTuple({ configurable: { thread_id: "@baton/ping" } })).pipe(Effect.asVoid)
  }
}
