/**
 * The `resume` program: records a decision for a pending pause, then
 * continues its tree under the tree's lease.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { UnknownPauseError, UnknownWorkflowError } from "../../stores/Errors.ts"
import { defaultTenant, type TenantId } from "../../stores/Ids.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import { Instance, notStopping } from "./Instance.ts"
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

/** Records the decision once (a second answer fails with `NotPausedError`); answers the pause's root record. */
const recordDecision = Effect.fnUntraced(function*(input: ResumeInput, tenantId: TenantId) {
  const { instanceId } = yield* Instance
  const pauses = yield* PauseStore
  const records = yield* RecordStore
  const pause = yield* pauses.get(tenantId, input.pauseId)
  if (Option.isNone(pause)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  yield* checkThread(tenantId, pause.value.threadId, input.ownerId)
  const now = yield* Clock.currentTimeMillis
  yield* pauses.resolve({ tenantId, pauseId: input.pauseId, decision: input.decision, resolvedBy: instanceId, now })
  yield* records.savePauseAnswer({ tenantId, executionId: pause.value.executionId, pauseId: input.pauseId, answeredBy: instanceId, answeredAt: now })
  const record = yield* records.getRecord(tenantId, pause.value.rootExecutionId)
  if (Option.isNone(record)) return yield* Effect.die(new Error(`pause ${input.pauseId} names a tree with no record`))
  return record.value
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
    const { config } = yield* Instance
    const tenantId = input.tenantId ?? defaultTenant
    const record = yield* recordDecision(input, tenantId)
    const workflow = config.workflows.get(record.workflowName)
    if (workflow === undefined) return yield* new UnknownWorkflowError({ workflowName: record.workflowName })
    const out = yield* TreeDriver.drive(workflow, tenantId, record.rootExecutionId, { _tag: "Continue", reason: "Answered" }, { wait: true })
    return yield* Option.match(out, {
      onNone: () => Effect.die(new Error("a waiting resume gave up its wait")),
      onSome: Effect.succeed
    })
  }).pipe(Effect.withSpan("Baton.resume"))
