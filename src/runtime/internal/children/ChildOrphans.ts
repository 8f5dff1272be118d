/**
 * Child executions nobody will move again. A launched child is a root of its
 * own tree that the recovery sweep does not recover like other roots: a
 * child with a queue row (placement `"any"`) is claimed again once its claim
 * expired, and one run inside its parent's step (placement `"parent"`) is
 * continued when that step runs again. Neither happens once the parent has
 * ended — cancelled (or failed) while the instance running the child died —
 * and such a child would stay Running forever. The sweep hands each page's
 * Running children here: one whose lease is free, with no queue row to
 * reclaim it and whose parent is no longer Running or Paused, gets a cancel
 * request and is ended cancelled (its undos run where its workflow is
 * registered), like any cancelled tree.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Effect, FiberSet, Option } from "effect"
import { ChildQueueStore } from "../../../stores/ChildQueueStore.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { getManyChunked, LeaseStore } from "../../../stores/LeaseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as Cancel from "../undo/Cancel.ts"
import { Instance, type InstanceShape } from "../Instance.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"

const keyOf = (r: { readonly tenantId: string; readonly rootExecutionId: string }) => `${r.tenantId}/${r.rootExecutionId}`

/** A Running launched child (a root of its own tree) that this instance is not moving. */
const isIdleChild = (instance: InstanceShape) => (record: ExecutionRecord) =>
  record.status === "Running" && record.parentExecutionId !== null && record.executionId === record.rootExecutionId &&
  instance.passes.onTree(record.tenantId, record.rootExecutionId) === undefined

/** The children of `candidates` whose lease is free now (one `getMany` per chunk). */
const withFreeLease = Effect.fnUntraced(function*(candidates: ReadonlyArray<ExecutionRecord>) {
  const now = yield* Clock.currentTimeMillis
  const live = new Set((yield* getManyChunked(yield* LeaseStore, candidates)).filter((l) => l.expiresAt > now).map(keyOf))
  return candidates.filter((r) => !live.has(keyOf(r)))
})

/** True when nothing will continue the child: no queue row reclaims it, and its parent ended (or is gone). */
const orphaned = Effect.fnUntraced(function*(instance: InstanceShape, child: ExecutionRecord) {
  const queue = Option.getOrUndefined(Context.getOption(instance.services, ChildQueueStore))
  if (queue !== undefined && Option.isSome(yield* queue.get(child.tenantId, child.executionId))) return false
  const parent = yield* (yield* RecordStore).getRecord(child.tenantId, child.parentExecutionId!)
  return Option.isNone(parent) || (parent.value.status !== "Running" && parent.value.status !== "Paused")
})

/**
 * Ends, in `recoveries`, the orphaned children among a page of Running
 * records (see the module). What fails is logged; the look goes on.
 *
 * @category internal
 * @since 0.1.0
 */
export const endOrphans = (page: ReadonlyArray<ExecutionRecord>, recoveries: FiberSet.FiberSet<unknown, unknown>) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const candidates = page.filter(isIdleChild(instance))
    if (candidates.length === 0) return
    for (const child of yield* withFreeLease(candidates)) {
      if (!(yield* orphaned(instance, child))) continue
      yield* Effect.logInfo(`recovery sweep ends child execution ${child.executionId}: its parent ${child.parentExecutionId} ended and nothing continues it`).pipe(
        Effect.annotateLogs({ executionId: child.executionId, tenantId: child.tenantId })
      )
      // Durable first: whoever takes the child's lease next (a racing sweeper) ends it cancelled too.
      yield* Cancel.request(child.tenantId, child.rootExecutionId, { ownerId: undefined, instanceId: instance.instanceId })
      yield* FiberSet.run(recoveries, TreeDriver.endIfFree(child).pipe(Effect.ignore))
    }
  }).pipe(Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.logWarning("recovery sweep: ending orphaned children failed this look", Cause.pretty(cause))
  ))
