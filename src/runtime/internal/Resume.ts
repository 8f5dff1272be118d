/**
 * The `resume` program: records a decision for a pending pause, then
 * continues its tree under the tree's lease.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { UnknownPauseError } from "../../stores/Errors.ts"
import { defaultTenant, type TenantId } from "../../stores/Ids.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import * as Workflow from "../Workflow.ts"
import { Instance, notStopping, workflowForRecord } from "./Instance.ts"
import * as ChildLaunch from "./ChildLaunch.ts"
import { checkThread } from "./Threads.ts"
import * as TreeDriver from "./TreeDriver.ts"

/**
 * A decision for a pending pause, as `Baton.resume` takes it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ResumeInput {
  readonly pauseId: string
  /** The answer, JSON: what the node's `interrupt()` returns. */
  readonly decision: unknown
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
}

/**
 * Records the decision once (a second answer fails with `NotPausedError`),
 * decoded first by the workflow's decision schema (a decision it refuses is
 * `InvalidInputError` naming the path; nothing recorded); answers the
 * pause's root record and the registered workflow that continues it —
 * checked before anything is written (its name and the config hash the tree
 * was started under, unless `resumeAnyway`).
 */
const recordDecision = Effect.fnUntraced(function*(input: ResumeInput, tenantId: TenantId) {
  const { instanceId } = yield* Instance
  const pauses = yield* PauseStore
  const records = yield* RecordStore
  const pause = yield* pauses.get(tenantId, input.pauseId)
  if (Option.isNone(pause)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  // A children wait is answered by the runtime when the children end, never by a caller.
  if (ChildLaunch.isChildrenWait(pause.value)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  yield* checkThread(tenantId, pause.value.threadId, input.ownerId)
  const record = yield* records.getRecord(tenantId, pause.value.rootExecutionId)
  if (Option.isNone(record)) return yield* Effect.die(new Error(`pause ${input.pauseId} names a tree with no record`))
  const workflow = yield* workflowForRecord(record.value)
  const decision = yield* Workflow.decode(workflow, "decision", input.decision, "Baton.resume")
  const now = yield* Clock.currentTimeMillis
  yield* pauses.resolve({ tenantId, pauseId: input.pauseId, decision, resolvedBy: instanceId, now })
  yield* records.savePauseAnswer({ tenantId, executionId: pause.value.executionId, pauseId: input.pauseId, answeredBy: instanceId, answeredAt: now })
  return { record: record.value, workflow }
})

/**
 * Records a decision and continues its tree, waiting for the tree's lease (see `Baton.resume`).
 *
 * @category internal
 * @since 0.1.0
 */
export const resume = (input: ResumeInput) =>
  Effect.gen(function*() {
    yield* notStopping
    const tenantId = input.tenantId ?? defaultTenant
    const { record, workflow } = yield* recordDecision(input, tenantId)
    const out = yield* TreeDriver.drive(workflow, tenantId, record.rootExecutionId, { _tag: "Continue", reason: "Answered" }, { wait: true })
    return yield* Option.match(out, {
      onNone: () => Effect.die(new Error("a waiting resume gave up its wait")),
      onSome: Effect.succeed
    })
  }).pipe(Effect.withSpan("Baton.resume"))
