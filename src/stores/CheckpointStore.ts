/**
 * LangGraph checkpoints and pending writes, tagged with the tenant.
 *
 * @since 0.1.0
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { Context, type Effect } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { CheckpointRow, PruneRule, Pruned, ThreadKey } from "./CheckpointRows.ts"
import type { TenantId, ThreadId } from "./Ids.ts"

/**
 * What a checkpoint store operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * Semantics: `saver` is the LangGraph checkpointer every pass compiles with.
 * When `fenced` is true its `put`/`putWrites` honour the pass's `Fence` in the
 * store's own transaction; when false (a user's own saver) the runtime renews
 * the lease right before each write instead.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointStoreShape {
  readonly saver: BaseCheckpointSaver
  readonly fenced: boolean
  readonly deleteThread: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<void, Failure>
  /**
   * What retention and the checkpoint reads run on, when the store offers it
   * (a store over baton's rows does; one over a foreign saver does not, and
   * its checkpoints are kept).
   *
   * @since 0.1.0
   */
  readonly lifecycle?: CheckpointLifecycle | undefined
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The checkpoint operations beyond LangGraph's saver (see `CheckpointRows`):
 * the threads holding checkpoints, page by page; the prune of one thread;
 * a page of one thread's checkpoint rows, newest first.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointLifecycle {
  readonly listThreads: (after: ThreadKey | undefined, limit: number) => Effect.Effect<ReadonlyArray<ThreadKey>, Failure>
  readonly pruneThread: (tenantId: TenantId, threadId: ThreadId, rule: PruneRule, limit: number) => Effect.Effect<Pruned, Failure>
  readonly listCheckpoints: (
    tenantId: TenantId,
    threadId: ThreadId,
    options: {
      readonly checkpointNs?: string | undefined
      readonly checkpointId?: string | undefined
      readonly before?: string | undefined
      readonly limit: number
    }
  ) => Effect.Effect<ReadonlyArray<CheckpointRow>, Failure>
}

/**
 * The checkpoint store: the LangGraph saver every pass compiles with. Build
 * one over baton's fenced saver with `CheckpointStores.fromRows`, or over any
 * LangGraph saver with `CheckpointStores.fromSaver`.
 *
 * @category services
 * @since 0.1.0
 */
export class CheckpointStore extends Context.Service<CheckpointStore, CheckpointStoreShape>()("baton/CheckpointStore") {}
