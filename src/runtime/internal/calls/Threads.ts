/**
 * The thread checks every call shares: the thread exists, and the caller is
 * its owner.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { ThreadOwnerError, UnknownThreadError } from "../../Errors.ts"
import type { TenantId, ThreadId } from "../../../stores/Ids.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"

/**
 * The thread, when it exists and `ownerId` may act on it.
 *
 * @category internal
 * @since 0.1.0
 */
export const checkThread = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId, ownerId: string | undefined) {
  const records = yield* RecordStore
  const thread = yield* records.getThread(tenantId, threadId)
  if (Option.isNone(thread)) return yield* new UnknownThreadError({ tenantId, threadId })
  if (thread.value.ownerId !== null && thread.value.ownerId !== ownerId) {
    return yield* new ThreadOwnerError({ tenantId, threadId, ownerId })
  }
  return thread.value
})

