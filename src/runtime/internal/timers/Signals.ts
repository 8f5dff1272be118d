/**
 * Sending a signal, the store side shared by `Baton.signal` and the CLI: the
 * thread checked (tenant, owner), its running or paused root found, the
 * signal kept, and a race with the tree's end settled — a signal whose tree
 * ended before any wait took it is dropped and refused. (The CLI, which has
 * no workflow code, does the same over the contracts.)
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { TenantId, ThreadId } from "../../../stores/Ids.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import type { Signal, TimerStoreShape } from "../../../stores/TimerStore.ts"
import { ThreadNotRunningError } from "../../Errors.ts"
import { checkThread } from "../calls/Threads.ts"

const ended = (status: string) => status === "Finished" || status === "Failed" || status === "Cancelled"

/**
 * The thread's running or paused root, once the thread exists for the tenant and `ownerId` may act on it.
 *
 * @category internal
 * @since 0.1.0
 */
export const activeRoot = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId, ownerId: string | undefined) {
  yield* checkThread(tenantId, threadId, ownerId)
  const active = yield* (yield* RecordStore).findActiveRoot(tenantId, threadId)
  if (Option.isNone(active)) return yield* new ThreadNotRunningError({ tenantId, threadId })
  return active.value
})

/**
 * Keeps the signal for `root`'s tree; then, if the tree ended meanwhile (a
 * cancel that raced the send) and no wait took the signal, drops it and
 * fails with `ThreadNotRunningError`.
 *
 * @category internal
 * @since 0.1.0
 */
export const sendTo = Effect.fnUntraced(function*(store: TimerStoreShape, root: ExecutionRecord, name: string, payload: unknown) {
  const { rootExecutionId, tenantId, threadId } = root
  const sent = yield* store.send({ tenantId, threadId, rootExecutionId, name, payload, sentAt: yield* Clock.currentTimeMillis })
  const after = yield* (yield* RecordStore).getRecord(tenantId, rootExecutionId)
  if ((Option.isNone(after) || ended(after.value.status)) && (yield* store.discard(tenantId, rootExecutionId, sent.seq))) {
    return yield* new ThreadNotRunningError({ tenantId, threadId })
  }
  return sent satisfies Signal
})
