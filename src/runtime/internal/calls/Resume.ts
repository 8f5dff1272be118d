/**
 * The `resume` program: records a decision for a pending pause, then
 * continues its tree under the tree's lease. A failure after the decision
 * was written carries `recorded` (the pause and its tree) and says to await
 * the execution, not to resume again. With a `requestKey`, a repeated call
 * continues or awaits the same tree (see `Requests`).
 *
 * @since 0.1.0
 */
import { Clock, Effect, Option } from "effect"
import { afterRecorded, NotPausedError, type RecordedWork, UnknownPauseError } from "../../../stores/Errors.ts"
import { defaultTenant, type TenantId } from "../../../stores/Ids.ts"
import * as V from "../../../stores/internal/validate.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import type { Pause } from "../../../stores/Pause.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as Workflow from "../../Workflow.ts"
import { Instance, notStopping, workflowForRecord } from "../Instance.ts"
import type { ExecutionOutput } from "../pass/Executor.ts"
import * as InputSize from "./InputSize.ts"
import * as Requests from "./Requests.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as Waits from "../timers/Waits.ts"
import * as ChildPauses from "../children/ChildPauses.ts"
import * as ChildWaits from "../children/ChildWaits.ts"
import { awaitExecution } from "./Await.ts"
import { checkThread, rejected } from "./Threads.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"

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
  /**
   * A request idempotency key (1–200 characters, per tenant; needs a
   * `RequestStore`): a repeated call with it — retried, on any instance, also
   * after the first caller died — does not answer the pause again
   * (`NotPausedError`) but continues or awaits the same tree and answers its
   * output (the output the first call answered, when it kept one). Once
   * pause retention deleted the pause, a repeat answers the kept output, else
   * `NotPausedError`. Another pause or decision under the key is
   * `RequestConflictError`.
   */
  readonly requestKey?: string | undefined
}

/**
 * A free-text reply instead of a decision: read by the workflow's
 * interpreter (`Workflow.make({ interpret })`) on the instance that got the
 * call, before the pause is resolved (see `Replies`).
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplyInput extends Omit<ResumeInput, "decision" | "requestKey"> {
  readonly reply: string
}

/** The record statuses of a tree that ended. */
const ended: ReadonlySet<string> = new Set(["Finished", "Failed", "Cancelled"])

/**
 * What a decision for `pause` needs before it is written: the pause, its
 * tree's root record, the registered workflow that continues it, and the
 * decision decoded by the workflow's decision schema (a decision it refuses
 * is `InvalidInputError` naming the path). Checked before anything is
 * written: the thread's owner, the workflow's name and the config hash the
 * tree was started under (unless `resumeAnyway`).
 */
const prepare = Effect.fnUntraced(function*(input: ResumeInput, tenantId: TenantId, pause: Pause) {
  const pauses = yield* PauseStore
  const records = yield* RecordStore
  // A children wait is answered by the runtime when the children end, never by a caller.
  if (ChildLaunch.isChildrenWait(pause)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  // So is a sleep or a signal wait (send the signal with `signal`).
  if (Waits.isTimerWait(pause)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  yield* checkThread(tenantId, pause.threadId, input.ownerId)
  const record = yield* records.getRecord(tenantId, pause.rootExecutionId)
  if (Option.isNone(record) || (pause.status === "Pending" && ended.has(record.value.status))) {
    // A stale holder's twin left over (see Executor's `dropTwins`) on a tree that ended (its record maybe deleted
    // since): nobody will take its decision — withdrawn, refused.
    yield* pauses.withdraw(tenantId, input.pauseId, yield* Clock.currentTimeMillis)
    return yield* new NotPausedError({ tenantId, pauseId: input.pauseId, status: pause.status === "Pending" ? "Cancelled" : pause.status })
  }
  // A child's pause answered through its parent: the caller must be allowed on the root's thread above it too.
  if (record.value.parentExecutionId !== null) yield* checkThread(tenantId, (yield* ChildWaits.topOf(record.value)).threadId, input.ownerId)
  const { decision, workflow } = yield* decodeFor(record.value, input.decision)
  return { pause, record: record.value, workflow, decision, ownerId: input.ownerId }
})

/** The registered workflow that continues the tree, and the decision as its decision schema decodes it. */
const decodeFor = Effect.fnUntraced(function*(record: ExecutionRecord, raw: unknown) {
  const workflow = yield* workflowForRecord(record)
  const decision = yield* Workflow.decode(workflow, "decision", raw, "Baton.resume")
  // Stored and hashed as JSON: refused here, under the call's name, before any write.
  yield* V.json("Baton.resume", "decision", decision)
  yield* InputSize.check("Baton.resume", "decision", decision, (yield* Instance).config.maxInputBytes)
  return { workflow, decision }
})

/** The pause, or `UnknownPauseError`. */
export const pauseOf = Effect.fnUntraced(function*(tenantId: TenantId, pauseId: string, ownerId: string | undefined) {
  const pause = yield* (yield* PauseStore).get(tenantId, pauseId)
  if (Option.isNone(pause)) {
    yield* rejected({ reason: "NotInTenant", tenantId, ownerId, pauseId })
    return yield* new UnknownPauseError({ tenantId, pauseId })
  }
  return pause.value
})

type Prepared = Effect.Success<ReturnType<typeof prepare>>

/** A paused tree a decision moves: its root record, the workflow that continues it, and the pause answered. */
interface Answered {
  readonly record: ExecutionRecord
  readonly workflow: Workflow.AnyWorkflow
  readonly pauseId: string
}

const answeredOf = (prepared: Prepared): Answered => ({ ...prepared, pauseId: prepared.pause.pauseId })

/** What was recorded once the decision is written: the pause and its tree. */
const recordedOf = ({ pauseId, record }: Answered): RecordedWork => ({
  tenantId: record.tenantId,
  executionId: record.rootExecutionId,
  threadId: record.threadId,
  pauseId
})

/**
 * Writes the decision once (a second answer fails with `NotPausedError`).
 * With `ownDecision`, a pause already holding this very decision (written by
 * an earlier call of the same request key) counts as written.
 */
const writeDecision = Effect.fnUntraced(function*(prepared: Prepared, ownDecision: boolean) {
  const { instanceId } = yield* Instance
  const pauses = yield* PauseStore
  const records = yield* RecordStore
  const { decision, pause } = prepared
  const now = yield* Clock.currentTimeMillis
  const written = yield* pauses.resolve({ tenantId: pause.tenantId, pauseId: pause.pauseId, decision, resolvedBy: instanceId, now }).pipe(
    Effect.as(true),
    Effect.catchTag("NotPausedError", (e) =>
      Effect.flatMap(pauses.get(pause.tenantId, pause.pauseId), (now) =>
        ownDecision && Option.isSome(now) && (now.value.status === "Resolved" || now.value.status === "Taken") &&
          Requests.sameDecision(now.value.decision, decision)
          ? Effect.succeed(false)
          : Effect.fail(e)))
  )
  if (!written) return
  // The decision is recorded (the pause keeps who answered it too, and the pass that feeds it writes this record
  // from the pause when it is missing — this call may die right here): failing the call here would leave the
  // tree resting paused with its answer waiting, and the caller told to await a tree nobody moves. Going on.
  yield* records.savePauseAnswer({ tenantId: pause.tenantId, executionId: pause.executionId, pauseId: pause.pauseId, answeredBy: instanceId, answeredAt: now }).pipe(
    Effect.catch((e) => Effect.logWarning(`the answer of pause ${pause.pauseId} was recorded; who gave it is written by the pass that takes it (the tree goes on): ${e.message}`))
  )
})

/** Continues the tree under its lease, waiting for it; a failure says the decision was recorded. */
const continueTree = (answered: Answered) =>
  TreeDriver.drive(answered.workflow, answered.record.tenantId, answered.record.rootExecutionId, { _tag: "Continue", reason: "Answered" }, { wait: true }).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.die(new Error("a waiting resume gave up its wait")),
      onSome: Effect.succeed
    })),
    Effect.mapError(afterRecorded(recordedOf(answered)))
  )

/**
 * Continues what a recorded decision moves. A root's pause: its tree. A
 * child's pause (forwarded to its parent's caller): the child goes on the
 * way it runs (see `ChildPauses.continueUp`) — inline children through
 * their parent's step, the root above driven here; a queued child through
 * the queue — and the call answers the output of the root above it, as
 * that root's caller sees it.
 */
const continueAfter = (prepared: Prepared) =>
  prepared.record.parentExecutionId === null
    ? continueTree(answeredOf(prepared))
    : Effect.gen(function*() {
      const root = yield* ChildPauses.continueUp(prepared.record)
      if (Option.isSome(root)) {
        const workflow = yield* workflowForRecord(root.value)
        return yield* continueTree({ record: root.value, workflow, pauseId: prepared.pause.pauseId })
      }
      const top = yield* ChildWaits.topOf(prepared.record)
      return yield* awaitExecution(top.executionId, { tenantId: top.tenantId, ownerId: prepared.ownerId }).pipe(
        // The root was just read and no timeout is given: neither can happen here.
        Effect.catchTags({ UnknownExecutionError: Effect.die, AwaitTimeoutError: Effect.die }),
        Effect.mapError(afterRecorded({ tenantId: top.tenantId, executionId: top.rootExecutionId, threadId: top.threadId, pauseId: prepared.pause.pauseId }))
      )
    })

/**
 * A resume under a request key: claims (pause, decision); a repeated call
 * answers the output a call of the key kept, else writes the decision when
 * no call did (the first caller died before) and continues or awaits the
 * tree like the first call. A pause no longer kept (pause retention deleted
 * it once settled) is looked up under the key: see `repeatOfGonePause`.
 */
const keyedResume = Effect.fnUntraced(function*(input: ResumeInput & { readonly requestKey: string }, tenantId: TenantId) {
  const key = yield* Requests.keyed("Baton.resume", tenantId, input.requestKey)
  const pause = yield* (yield* PauseStore).get(tenantId, input.pauseId)
  if (Option.isNone(pause)) return yield* repeatOfGonePause(input, key)
  const prepared = yield* prepare(input, tenantId, pause.value)
  const handle: Requests.ResumeHandle = {
    pauseId: prepared.pause.pauseId,
    executionId: prepared.record.rootExecutionId,
    threadId: prepared.record.threadId,
    tenantId
  }
  const claimed = yield* Requests.claimResume(key, handle, prepared.decision)
  if (Option.isSome(claimed.answer)) return claimed.answer.value as ExecutionOutput
  yield* writeDecision(prepared, true)
  const out = yield* continueAfter(prepared)
  yield* Requests.recordAnswer(key, claimed.handle, out)
  return out
})

/**
 * A keyed resume whose pause is gone (only a settled pause is deleted, by
 * pause retention): after the same owner check and decision decoding as a
 * first call, the output a call of the key kept is answered. Without one,
 * nothing left tells whether this key's decision is the one the pause took
 * (its first call may have died before writing it, and another caller — or a
 * cancel — settled the pause), so the call is `NotPausedError`, as it is
 * while the pause is kept and holds another decision. Another pause or
 * decision under the key is `RequestConflictError`; no kept key leaves the
 * pause unknown.
 */
const repeatOfGonePause = Effect.fnUntraced(function*(input: ResumeInput, key: Requests.Keyed) {
  const { tenantId } = key
  const kept = yield* Requests.keptResume(key)
  if (Option.isNone(kept)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  yield* Requests.samePause(key, kept.value, input.pauseId)
  const { executionId, threadId } = kept.value.handle
  yield* checkThread(tenantId, threadId, input.ownerId)
  const record = yield* (yield* RecordStore).getRecord(tenantId, executionId)
  if (Option.isNone(record)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  const { decision } = yield* decodeFor(record.value, input.decision)
  yield* Requests.sameResume(key, kept.value, input.pauseId, decision)
  if (Option.isSome(kept.value.answer)) return kept.value.answer.value as ExecutionOutput
  return yield* new NotPausedError({ tenantId, pauseId: input.pauseId, status: "settled and no longer kept (pause retention)" })
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
    const requestKey = input.requestKey
    if (requestKey !== undefined) return yield* keyedResume({ ...input, requestKey }, tenantId)
    const prepared = yield* prepare(input, tenantId, yield* pauseOf(tenantId, input.pauseId, input.ownerId))
    yield* writeDecision(prepared, false)
    return yield* continueAfter(prepared)
  }).pipe(Effect.withSpan("Baton.resume"))
