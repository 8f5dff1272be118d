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
import { Observer, type RejectedEvent } from "../../Observer.ts"
import { Instance } from "../Instance.ts"

/**
 * Tells the observer of a refused call (see `Observer.onRejected`).
 *
 * @category internal
 * @since 0.1.0
 */
export const rejected = (event: Omit<RejectedEvent, "instanceId" | "ownerId"> & { readonly ownerId: string | null | undefined }) =>
  Effect.gen(function*() {
    const instance = yield* Effect.serviceOption(Instance)
    yield* (yield* Observer).onRejected({
      ...event,
      ownerId: event.ownerId ?? null,
      instanceId: instance._tag === "Some" ? instance.value.instanceId : "unknown"
    })
  })

/**
 * The thread, when it exists and `ownerId` may act on it.
 *
 * @category internal
 * @since 0.1.0
 */
export const checkThread = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId, ownerId: string | undefined) {
  const records = yield* RecordStore
  const thread = yield* records.getThread(tenantId, threadId)
  if (Option.isNone(thread)) {
    yield* rejected({ reason: "NotInTenant", tenantId, ownerId, threadId })
    return yield* new UnknownThreadError({ tenantId, threadId })
  }
  if (thread.value.ownerId !== null && thread.value.ownerId !== ownerId) {
    yield* rejected({ reason: "OtherOwner", tenantId, ownerId, threadId })
    return yield* new ThreadOwnerError({ tenantId, threadId, ownerId })
  }
  return thread.value
})

