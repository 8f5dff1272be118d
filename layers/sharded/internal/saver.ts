/**
 * The LangGraph saver over the shards: each call goes to the saver of the
 * shard of the tenant in `config.configurable` (the tenant every pass hands
 * its saver; the default tenant when none is given). `deleteThread(threadId)`
 * names no tenant: it deletes the thread on every shard, and fails when one
 * of them cannot (the thread may still be there).
 */
import type { RunnableConfig } from "@langchain/core/runnables"
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite
} from "@langchain/langgraph-checkpoint"
import { type Context, Effect } from "effect"
import { tenantConfigKey } from "../../../src/stores/Fence.ts"
import { defaultTenant } from "../../../src/stores/Ids.ts"
import type { Router } from "./router.ts"

const tenantOf = (config: RunnableConfig): string => {
  const t = config.configurable?.[tenantConfigKey]
  return typeof t === "string" && t.length > 0 ? t : defaultTenant
}

class RoutedCheckpointSaver<S> extends BaseCheckpointSaver {
  readonly router: Router<S>
  readonly saverOf: (stores: Context.Context<S>) => BaseCheckpointSaver
  readonly first: BaseCheckpointSaver | undefined

  constructor(router: Router<S>, saverOf: (stores: Context.Context<S>) => BaseCheckpointSaver) {
    const built = router.shards.map((s) => s.built()).find((c) => c !== undefined)
    const first = built === undefined ? undefined : saverOf(built)
    super(first?.serde)
    this.router = router
    this.saverOf = saverOf
    this.first = first
  }

  /** The saver of the tenant's shard: at once when built; else built now, or the shard's `StoreError` thrown. */
  private saver(config: RunnableConfig, operation: string): Promise<BaseCheckpointSaver> {
    return Effect.runPromise(
      this.router.onTenant("CheckpointStore", `saver.${operation}`, tenantOf(config), (stores) => Effect.succeed(this.saverOf(stores)))
    )
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return (await this.saver(config, "getTuple")).getTuple(config)
  }

  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    yield* (await this.saver(config, "list")).list(config, options)
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return (await this.saver(config, "put")).put(config, checkpoint, metadata, newVersions)
  }

  async putWrites(config: RunnableConfig, writes: Array<PendingWrite>, taskId: string, taskPath?: string): Promise<void> {
    return (await this.saver(config, "putWrites")).putWrites(config, writes, taskId, taskPath)
  }

  async deleteThread(threadId: string): Promise<void> {
    await Effect.runPromise(
      this.router.fanOut("CheckpointStore", "saver.deleteThread", "complete", (stores) =>
        Effect.tryPromise({
          try: () => this.saverOf(stores).deleteThread(threadId),
          catch: (e) => e
        }))
    )
  }

  override getNextVersion(current: number | undefined): number {
    return this.first === undefined ? super.getNextVersion(current) : this.first.getNextVersion(current)
  }
}

/** The routed saver. */
export const routedSaver = <S>(router: Router<S>, saverOf: (stores: Context.Context<S>) => BaseCheckpointSaver): BaseCheckpointSaver =>
  new RoutedCheckpointSaver(router, saverOf)
