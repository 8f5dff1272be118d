/**
 * Free-text replies to pauses: `resume({ pauseId, reply })`. The instance
 * that got the call reads the reply with the workflow's interpreter
 * (`Workflow.make({ interpret })`) — after the tenant and owner checks,
 * before the pause is resolved and before the tree's lease is taken: the
 * interpreter holds no lease, and its spend goes through the shared ledger
 * (the tree's budgets are handed to it) at once. The decision it answers
 * then goes the way of any decision (`Resume`). A reply it cannot map is
 * `ReplyNotUnderstoodError`; a failure of its own (a model call, a limit)
 * is `ReplyInterpretationFailedError`; in both cases nothing was written and
 * the pause stays pending.
 *
 * @since 0.1.0
 */
import { Cause, Effect, Option } from "effect"
import { InvalidInputError, NotPausedError, UnknownPauseError } from "../../../stores/Errors.ts"
import { defaultTenant, type TenantId } from "../../../stores/Ids.ts"
import * as V from "../../../stores/internal/validate.ts"
import type { Pause } from "../../../stores/Pause.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { ReplyInterpretationFailedError, ReplyNotUnderstoodError } from "../../Errors.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import * as DeclaredBudgets from "../limits/DeclaredBudgets.ts"
import { Instance, workflowForRecord } from "../Instance.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as ChildWaits from "../children/ChildWaits.ts"
import * as Waits from "../timers/Waits.ts"
import { pauseOf, type ReplyInput, type ResumeInput } from "./Resume.ts"
import { checkThread } from "./Threads.ts"

/** The longest reply read: 64 KiB of text (a model's context is the limit that matters; this bounds the call). */
const maxReplyLength = 65_536

/** Whether a resume call gives a free-text reply rather than a decision. */
export const isReply = (input: ResumeInput | ReplyInput): input is ReplyInput =>
  typeof input === "object" && input !== null && "reply" in input && !("decision" in input)

/** The reply must be text of 1 to 64 KiB characters, and not come with a request key (a repeat would be read again). */
const checkReply = (input: ReplyInput) =>
  Effect.gen(function*() {
    const reply: unknown = input.reply
    if (typeof reply !== "string" || reply.trim().length === 0 || reply.length > maxReplyLength) {
      return yield* new InvalidInputError({
        operation: "Baton.resume",
        field: "reply",
        reason: `must be a non-empty text of at most ${maxReplyLength} characters`
      })
    }
    if (reply.includes("\u0000") || !V.isWellFormed(reply)) {
      return yield* new InvalidInputError({ operation: "Baton.resume", field: "reply", reason: `must hold no NUL character and be well-formed Unicode (${V.illFormedReason})` })
    }
    if ((input as { requestKey?: unknown }).requestKey !== undefined) {
      return yield* new InvalidInputError({
        operation: "Baton.resume",
        field: "requestKey",
        reason: "cannot go with a reply: a repeated call would be read again, and could be read as another decision; give the decision with the key"
      })
    }
  })

/** The workflow that paused, once the pause is one a caller may answer here. */
const workflowOf = Effect.fnUntraced(function*(input: ReplyInput, tenantId: TenantId, pause: Pause) {
  // A children wait, a sleep or a signal wait is answered by the runtime, never by a caller (as `resume` finds).
  if (ChildLaunch.isChildrenWait(pause) || Waits.isTimerWait(pause)) return yield* new UnknownPauseError({ tenantId, pauseId: input.pauseId })
  yield* checkThread(tenantId, pause.threadId, input.ownerId)
  if (pause.status !== "Pending") return yield* new NotPausedError({ tenantId, pauseId: input.pauseId, status: pause.status })
  const records = yield* RecordStore
  const record = yield* records.getRecord(tenantId, pause.executionId)
  // Its tree is gone (deleted since): nobody will take a decision for it, as `resume` finds.
  if (Option.isNone(record)) return yield* new NotPausedError({ tenantId, pauseId: input.pauseId, status: "Cancelled" })
  // A child's pause answered through its parent: the caller must be allowed on the root's thread above it too.
  if (record.value.parentExecutionId !== null) yield* checkThread(tenantId, (yield* ChildWaits.topOf(record.value)).threadId, input.ownerId)
  const workflow: AnyWorkflow = yield* workflowForRecord(record.value)
  if (workflow.interpret === undefined) {
    return yield* new InvalidInputError({
      operation: "Baton.resume",
      field: "reply",
      reason: `cannot be read: workflow "${workflow.name}" declares no interpreter (Workflow.make({ interpret })); give a decision instead`
    })
  }
  return { workflow, record: record.value, interpret: workflow.interpret }
})

/** An interpreter's failure, as the caller is told it: its own "not understood", else a failure of the reading. */
const asReplyError = (tenantId: TenantId, pauseId: string) => (cause: Cause.Cause<unknown>) => {
  const error = Cause.findErrorOption(cause)
  if (Option.isSome(error) && error.value instanceof ReplyNotUnderstoodError) return error.value
  const shown = Option.isSome(error)
    ? `${(error.value as { _tag?: string })?._tag ?? "Error"}: ${(error.value as { message?: string })?.message ?? String(error.value)}`
    : Cause.pretty(cause).split("\n")[0] ?? "a defect"
  return new ReplyInterpretationFailedError({ tenantId, pauseId, cause: shown })
}

/**
 * The decision a reply is read as: the resume input with the interpreter's
 * decision in place of the reply.
 *
 * @category internal
 * @since 0.1.0
 */
export const interpret = (input: ReplyInput) =>
  Effect.gen(function*() {
    yield* checkReply(input)
    const tenantId = input.tenantId ?? defaultTenant
    const pause = yield* pauseOf(tenantId, input.pauseId, input.ownerId)
    const { interpret, record, workflow } = yield* workflowOf(input, tenantId, pause)
    const instance = yield* Instance
    const budgets = yield* DeclaredBudgets.ofPass(instance, record, workflow)
    const decision = yield* Effect.suspend(() =>
      interpret({
        reply: input.reply,
        payload: pause.payload,
        tenantId,
        threadId: pause.threadId,
        executionId: pause.executionId,
        pauseId: pause.pauseId,
        instanceId: instance.instanceId,
        budgets
      })
    ).pipe(
      Effect.provide(instance.services),
      Effect.catchCause((cause) => Effect.fail(asReplyError(tenantId, input.pauseId)(cause))),
      Effect.withSpan("Baton.resume.interpret", { attributes: { "baton.workflow": workflow.name } })
    )
    const { reply: _reply, ...rest } = input
    return { ...rest, decision } satisfies ResumeInput
  })
