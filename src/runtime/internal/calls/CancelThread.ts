/**
 * The `cancel` program: ends a thread's running or paused execution wherever
 * it runs — aborted at once here, ended under its lease when paused, or asked
 * to stop through a durable request its holder reads within one renewal.
 * Either way its open undos run before it ends (see `Undo`); a tree that
 * already unwinds is left to finish (a cancel then answers `cancelled: false`).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { ExecutionCancelledError } from "../../Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { defaultTenant, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"
import * as Cancel from "../undo/Cancel.ts"
import { Instance, notStopping } from "../Instance.ts"
import { checkThread } from "./Threads.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as Undo from "../undo/Undo.ts"

/**
 * Whose thread `Baton.cancel` cancels.
 *
 * @category models
 * @since 0.1.0
 */
export interface CancelOptions {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
}

/** Cancels one moving root: `true` when it ended or was aborted at once, `false` when only a request was left. */
const cancelRoot = Effect.fnUntraced(function*(root: ExecutionRecord, ownerId: string | undefined) {
  const instance = yield* Instance
  const { rootExecutionId, tenantId } = root
  const here = [...instance.passes.active].find((p) => p.tenantId === tenantId && p.rootExecutionId === rootExecutionId && p.signal() !== undefined)
  if (here !== undefined) {
    // The request too: a pass past its last step, about to rest or finish, reads it before it does.
    yield* Cancel.request(tenantId, rootExecutionId, { ownerId, instanceId: instance.instanceId })
    here.abort(new ExecutionCancelledError({ tenantId, executionId: root.executionId }))
    return true
  }
  // Durable first: an instance that dies while ending the tree (its children's hand-offs refused
  // already, see `TreeDriver.endIfFree`) leaves the cancel to whoever takes the tree's lease next.
  yield* Cancel.request(tenantId, rootExecutionId, { ownerId, instanceId: instance.instanceId })
  return root.status === "Paused" && (yield* TreeDriver.endIfFree(root))
})

/** After a request: did it help? A tree still moving takes it; one paused meanwhile is ended here; one ended drops it. */
const settleRequest = Effect.fnUntraced(function*(root: ExecutionRecord) {
  const { config } = yield* Instance
  const { rootExecutionId, tenantId } = root
  const status = Option.map(yield* (yield* RecordStore).getRecord(tenantId, root.executionId), (r) => r.status)
  if (Option.contains(status, "Running") || Option.contains(status, "Cancelled")) return true
  if (Option.contains(status, "Paused")) {
    // Paused meanwhile: wait for its holder's lease and end it; the request is read first at the lease take.
    const workflow = config.workflows.get(root.workflowName)
    if (workflow === undefined) return false
    return yield* TreeDriver.drive(workflow, tenantId, rootExecutionId, { _tag: "Continue", reason: "Answered" }, { wait: true }).pipe(
      Effect.as(false),
      Effect.catchTag("ExecutionCancelledError", () => Effect.succeed(true)),
      Effect.catch(() => Effect.succeed(false))
    )
  }
  // Ended meanwhile: the request goes with the tree's keys.
  yield* TreeStore.use((tree) => tree.deleteRoot(tenantId, rootExecutionId))
  return false
})

/**
 * Cancels the thread's Running or Paused roots (see `Baton.cancel`).
 *
 * @category internal
 * @since 0.1.0
 */
export const cancel = (threadId: ThreadId, options?: CancelOptions) =>
  Effect.gen(function*() {
    yield* notStopping
    const tenantId = options?.tenantId ?? defaultTenant
    yield* checkThread(tenantId, threadId, options?.ownerId)
    const roots = (yield* (yield* RecordStore).listByThread(tenantId, threadId)).filter((r) =>
      r.executionId === r.rootExecutionId && (r.status === "Running" || r.status === "Paused")
    )
    let cancelled = false
    const requested: Array<ExecutionRecord> = []
    for (const root of roots) {
      // A tree that unwinds is ending already: its undos go on, a cancel changes nothing.
      if (root.status === "Running" && Option.isSome(yield* Undo.unwindingOf(tenantId, root.rootExecutionId))) continue
      if (yield* cancelRoot(root, options?.ownerId)) cancelled = true
      else requested.push(root)
    }
    // Read again: a request only helps a tree that is still moving.
    for (const root of requested) if (yield* settleRequest(root)) cancelled = true
    return { cancelled }
  }).pipe(Effect.withSpan("Baton.cancel"))
