/**
 * Model answers in the runtime: the service a step's `Provider.guard` asks
 * (provided to an Effect step's body by its pass) to record each model
 * answer with the execution's history — or, under a replay, to answer it
 * from the record instead of calling the model.
 *
 * Recording: with an `ExecutionHistoryStore` given to the Baton Layer, each
 * answer of a root's Effect step is written to the tree's reserved keys,
 * fenced by the holder's lease (a holder that lost the tree writes nothing),
 * and the snapshot written when the root ends gathers them (see `History`).
 * Keyed by the node, the LangGraph step of the visit, the holder's epoch,
 * the visit's try on that holder and the call's ordinal in the try. An
 * answer JSON cannot write (a BigInt, a cycle, `undefined`) is noted as
 * unrecordable with the reason, and a replay of that call fails saying so.
 *
 * @since 0.1.0
 */
import { Context, Effect, Schema } from "effect"
import { ExecutionHistoryStore } from "../../../stores/ExecutionHistoryStore.ts"
import type { ModelAnswer } from "../../../stores/ExecutionHistoryStore.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { LeaseLostError } from "../../../stores/Errors.ts"
import type { TreeStoreShape } from "../../../stores/TreeStore.ts"
import type { LeaseHolder } from "../lease/LeaseHolder.ts"

/**
 * A model call of a replayed workflow that the record has no answer for: the
 * changed workflow asks something the recorded execution did not (another
 * node, another visit, one more call in a visit), the recorded answer was not
 * JSON, or the call is a child execution's (children's calls are not
 * recorded). Run the replay with `onUnrecorded: "call"` to make such calls
 * for real, or record a new execution of the changed workflow.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnrecordedModelCallError extends Schema.TaggedError<UnrecordedModelCallError>()("UnrecordedModelCallError", {
  node: Schema.String,
  /** The node's visit, 1 for its first. */
  visit: Schema.Number,
  /** The call's place in the visit, 0 for its first. */
  ordinal: Schema.Number,
  provider: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Model call ${this.ordinal} of visit ${this.visit} of node "${this.node}" (provider ${this.provider}) has no recorded answer: ${this.reason}. Replay with onUnrecorded "call" (CLI: --call-unrecorded) to make it for real, or record a new execution of the changed workflow.`
  }
}

/**
 * What a guarded model call asks of the step it runs in.
 *
 * @category models
 * @since 0.1.0
 */
export interface ModelCallsShape {
  /**
   * Runs `call` (the guarded model call) and records its answer, or answers
   * from the record without running it.
   */
  readonly call: <A, E, R>(provider: string, model: string | undefined, call: Effect.Effect<A, E, R>) => Effect.Effect<A, E | UnrecordedModelCallError, R>
}

/**
 * The model calls of the step visit an Effect body runs in (absent outside
 * a step, or when nothing is recorded or replayed).
 *
 * @category services
 * @since 0.1.0
 */
export class ModelCalls extends Context.Service<ModelCalls, ModelCallsShape>()("baton/ModelCalls") {}

/**
 * What a replay answers from: the recorded answers, and what a call with none does.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplaySourceShape {
  readonly answers: ReadonlyArray<ModelAnswer>
  /** "fail": `UnrecordedModelCallError`; "call": the call is made for real. */
  readonly onUnrecorded: "fail" | "call"
  /** Counts the recorded answers used, and the calls made for real. */
  readonly used: { answered: number; calledForReal: number }
  /** The LangGraph steps each node ran at, in first-run order (a node's visits), across the replay's passes. */
  readonly visits: Map<string, Array<number>>
  /** The first call with no recorded answer (the replay fails with it, even when the workflow caught it). */
  missed: UnrecordedModelCallError | undefined
}

/**
 * Present in a replay's scratch runtime: its steps' model calls answer from the record.
 *
 * @category services
 * @since 0.1.0
 */
export class ReplaySource extends Context.Service<ReplaySource, ReplaySourceShape>()("baton/ReplaySource") {}

/** The reserved name (under `@baton/`) of one noted answer. */
export const answersPrefix = "history/answer/"

/**
 * One answer as noted in the tree while the root runs; the snapshot keeps
 * those of each visit's last try (see `History`).
 *
 * @category models
 * @since 0.1.0
 */
export interface AnswerRow {
  readonly node: string
  /** LangGraph's step of the visit. */
  readonly step: number
  readonly epoch: number
  /** The visit's try on this holder: 1, then 2 for a retry in the same pass. */
  readonly attempt: number
  readonly ordinal: number
  readonly provider: string
  readonly model: string | null
  readonly answer?: unknown
  readonly unrecordable?: string | undefined
}

/**
 * The JSON form of an answer (what a replay answers), or why it has none.
 *
 * @category utils
 * @since 0.1.0
 */
export const jsonForm = (value: unknown): { readonly _tag: "Json"; readonly value: unknown } | { readonly _tag: "NotJson"; readonly reason: string } => {
  try {
    const text = JSON.stringify(value)
    if (text === undefined) return { _tag: "NotJson", reason: `JSON cannot write ${typeof value === "function" ? "a function" : "undefined"}` }
    return { _tag: "Json", value: JSON.parse(text) }
  } catch (e) {
    return { _tag: "NotJson", reason: `JSON cannot write it (${e instanceof Error ? e.message : String(e)})` }
  }
}

/**
 * The recorder of one pass's model answers, or undefined when nothing is
 * recorded (no `ExecutionHistoryStore`, or a child execution: only a root's
 * calls are kept with its snapshot). Each call of the answer gives the
 * calls of one try of one visit.
 *
 * @category constructors
 * @since 0.1.0
 */
export const recorder = (options: {
  readonly services: Context.Context<any>
  readonly tree: TreeStoreShape
  readonly record: ExecutionRecord
  readonly holder: LeaseHolder
  readonly now: () => number
}): ((node: string, step: number | undefined) => ModelCallsShape) | undefined => {
  const { holder, now, record, tree } = options
  if (Context.getOption(options.services, ExecutionHistoryStore)._tag === "None" || record.executionId !== record.rootExecutionId) return undefined
  const tries = new Map<string, number>()
  let seq = 0
  return (node, step) => {
    const visitKey = JSON.stringify([node, step])
    const attempt = (tries.get(visitKey) ?? 0) + 1
    tries.set(visitKey, attempt)
    let ordinal = 0
    return {
      call: (provider, model, call) =>
        Effect.flatMap(call, (answer) => {
          const row: AnswerRow = {
            node,
            step: step ?? -1,
            epoch: holder.lease.epoch,
            attempt,
            ordinal: ordinal++,
            provider,
            model: model ?? null,
            ...(() => {
              const form = jsonForm(answer)
              return form._tag === "Json" ? { answer: form.value } : { unrecordable: form.reason }
            })()
          }
          const name = `${answersPrefix}${holder.lease.epoch}/${holder.lease.holder}/${now()}-${++seq}`
          return tree.saveReservedFenced(record.tenantId, record.rootExecutionId, name, row, holder.lease, now()).pipe(
            Effect.tap(() => row.unrecordable === undefined ? Effect.void : Effect.logWarning(`execution history: the answer of model call ${row.ordinal} of node "${node}" is not recorded: ${row.unrecordable}`)),
            Effect.catch((e) => {
              // A holder that lost the tree stops; its answer is not kept (the new holder runs the step again).
              if (e instanceof LeaseLostError) return Effect.sync(() => holder.fence.lost(e))
              return Effect.logWarning(`execution history: a model answer was not recorded: ${e.message}`)
            }),
            Effect.as(answer)
          )
        })
    }
  }
}

/**
 * The replaying model calls of a scratch pass: the `n`th call of a visit
 * answers the recorded answer `n` of the same node and visit (the node's
 * visits counted in the order their LangGraph steps first run).
 *
 * @category constructors
 * @since 0.1.0
 */
export const replayer = (source: ReplaySourceShape, record: ExecutionRecord): ((node: string, step: number | undefined) => ModelCallsShape) => {
  const byKey = new Map(source.answers.map((a) => [JSON.stringify([a.node, a.visit, a.ordinal]), a]))
  const isRoot = record.executionId === record.rootExecutionId
  return (node, step) => {
    const seen = source.visits.get(node) ?? []
    source.visits.set(node, seen)
    if (!seen.includes(step ?? -1)) seen.push(step ?? -1)
    const visit = seen.indexOf(step ?? -1) + 1
    let ordinal = 0
    return {
      call: <A, E, R>(provider: string, _model: string | undefined, call: Effect.Effect<A, E, R>) =>
        Effect.suspend((): Effect.Effect<A, E | UnrecordedModelCallError, R> => {
          const n = ordinal++
          const recorded = isRoot ? byKey.get(JSON.stringify([node, visit, n])) : undefined
          if (recorded !== undefined && recorded.unrecordable === undefined) {
            source.used.answered++
            return Effect.succeed(recorded.answer as A)
          }
          if (source.onUnrecorded === "call") {
            source.used.calledForReal++
            return call
          }
          const reason = !isRoot
            ? "it is a child execution's call, and only a root's calls are recorded"
            : recorded !== undefined
            ? `the recorded answer was not kept (${recorded.unrecordable})`
            : "the recorded execution made no such call"
          const missed = new UnrecordedModelCallError({ node, visit, ordinal: n, provider, reason })
          source.missed ??= missed
          return Effect.fail(missed)
        })
    }
  }
}
