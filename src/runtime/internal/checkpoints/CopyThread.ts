/**
 * `Baton.copyThread`: a new thread of the same tenant holding a copy of
 * every checkpoint of another (each namespace, with its channel values and
 * pending writes, ids kept), owned like the source. No execution is copied:
 * the copy is a thread with a history, which a `start` continues from its
 * newest checkpoint and `fork` can fork from. Refused while a pass moves a
 * tree of the source (`ThreadHeldError`): copy a thread at rest.
 *
 * @since 0.1.0
 */
import type { CheckpointTuple, PendingWrite } from "@langchain/langgraph-checkpoint"
import { Clock, Effect } from "effect"
import { ThreadHeldError } from "../../Errors.ts"
import { CheckpointStore } from "../../../stores/CheckpointStore.ts"
import { InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import { tenantConfigKey } from "../../../stores/Fence.ts"
import { defaultTenant, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { checkThread } from "../calls/Threads.ts"
import { notStopping } from "../Instance.ts"

/**
 * Whose thread `Baton.copyThread` copies (the copy is of the same tenant).
 *
 * @category models
 * @since 0.1.0
 */
export interface CopyThreadOptions {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
}

const storeError = (operation: string) => (cause: unknown) =>
  new StoreError({ store: "CheckpointStore", operation, reason: cause instanceof Error ? cause.message : String(cause), cause })

/** Every checkpoint of the thread, each namespace, oldest first. */
const tuplesOf = (tenantId: TenantId, threadId: ThreadId) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    return yield* Effect.tryPromise({
      try: async () => {
        const out: Array<CheckpointTuple> = []
        for await (const t of saver.list({ configurable: { thread_id: threadId, [tenantConfigKey]: tenantId } })) out.push(t)
        return out.reverse()
      },
      catch: storeError("list")
    })
  })

/** Writes one tuple to the copy: the checkpoint with every channel value, then its pending writes by task. */
const put = (tenantId: TenantId, to: ThreadId, t: CheckpointTuple) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    const ns = (t.config.configurable?.checkpoint_ns as string | undefined) ?? ""
    const parent = t.parentConfig?.configurable?.checkpoint_id as string | undefined
    const base = { thread_id: to, checkpoint_ns: ns, [tenantConfigKey]: tenantId }
    yield* Effect.tryPromise({
      try: () => saver.put({ configurable: { ...base, ...(parent === undefined ? {} : { checkpoint_id: parent }) } }, t.checkpoint, t.metadata!, t.checkpoint.channel_versions),
      catch: storeError("put")
    })
    const byTask = new Map<string, Array<PendingWrite>>()
    for (const [taskId, channel, value] of t.pendingWrites ?? []) byTask.set(taskId, [...(byTask.get(taskId) ?? []), [channel, value]])
    for (const [taskId, writes] of byTask) {
      yield* Effect.tryPromise({
        try: () => saver.putWrites({ configurable: { ...base, checkpoint_id: t.checkpoint.id } }, writes, taskId),
        catch: storeError("putWrites")
      })
    }
  })

/**
 * Copies the thread `from` to the new thread `to` (see the module); answers how many checkpoints were copied.
 *
 * @category internal
 * @since 0.1.0
 */
export const copyThread = (from: ThreadId, to: ThreadId, options?: CopyThreadOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const tenantId = options?.tenantId ?? defaultTenant
    const source = yield* checkThread(tenantId, from, options?.ownerId)
    const records = yield* RecordStore
    const running = (yield* records.listByThread(tenantId, from)).find((r) => r.executionId === r.rootExecutionId && r.status === "Running")
    if (running !== undefined) return yield* new ThreadHeldError({ tenantId, threadId: from, executionId: running.executionId })
    const made = yield* records.createThread({ tenantId, threadId: to, ownerId: source.ownerId, now: yield* Clock.currentTimeMillis })
    if (!made.created) {
      return yield* new InvalidInputError({ operation: "Baton.copyThread", field: "to", reason: `names thread ${to}, which exists: copy to a new thread id` })
    }
    const tuples = yield* tuplesOf(tenantId, from)
    for (const t of tuples) yield* put(tenantId, to, t)
    return { checkpoints: tuples.length }
  }).pipe(Effect.withSpan("Baton.copyThread"))
