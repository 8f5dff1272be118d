/**
 * Evaluation of earlier runs: replay a recorded execution against a
 * (possibly changed) workflow, make a golden case of it, and evaluate a set
 * of cases against the current code.
 *
 * What is **replayed** from the record: the answers of the root's guarded
 * model calls (`Provider.guard` in a `Workflow.effectStep`), matched by
 * node, the node's visit (1 for its first) and the call's ordinal within the
 * visit, and the decisions of the root's pauses, given in the order the
 * pauses were made. What is **run for real**: everything else — node code,
 * tools, state reducers, edges, schemas. A replayed answer consults no limit
 * (no budget charged, no slot, window or breaker) and calls no model.
 *
 * A replay runs on a scratch runtime over the `scratch` stores given (a
 * fresh `MemoryStores.layer` from `baton/memory` each time): the app's
 * stores, wakeups and observer are taken out of its context, so it never
 * writes to the real stores or takes their leases. It reads the record
 * from the `ExecutionHistoryStore` in context (the history must be on:
 * without it nothing is recorded, and a replay fails with
 * {@link HistoryOffError}).
 *
 * A model call the record has no answer for — the changed workflow asks
 * something new, or the answer was not JSON — fails the replay with
 * `UnrecordedModelCallError`; with `onUnrecorded: "call"` it is made for
 * real (through its guard's limits) instead, and counted. A pause with no
 * recorded decision fails it with {@link UnrecordedDecisionError}. Only a
 * root's calls are recorded: a child execution's calls are unrecorded.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, References, Schema } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as RateLimiter from "effect/persistence/RateLimiter"
import { CheckpointStore } from "../../stores/CheckpointStore.ts"
import { ChildQueueStore } from "../../stores/ChildQueueStore.ts"
import { ConcurrencyKeyStore } from "../../stores/ConcurrencyKeyStore.ts"
import { DebounceStore } from "../../stores/DebounceStore.ts"
import { StoreError } from "../../stores/Errors.ts"
import { EventStore } from "../../stores/EventStore.ts"
import { EventWakeups } from "../../stores/EventWakeups.ts"
import { ExecutionHistoryStore, type ExecutionSnapshot } from "../../stores/ExecutionHistoryStore.ts"
import { defaultTenant, IdGenerator } from "../../stores/Ids.ts"
import { InstanceLiveness } from "../../stores/InstanceLiveness.ts"
import { LeaseStore } from "../../stores/LeaseStore.ts"
import { LeaseWakeups } from "../../stores/LeaseWakeups.ts"
import { LedgerStore } from "../../stores/LedgerStore.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RateLimitStore } from "../../stores/RateLimitStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import { RequestStore } from "../../stores/RequestStore.ts"
import { ScheduleStore } from "../../stores/ScheduleStore.ts"
import { StoreProbe } from "../../stores/StoreProbe.ts"
import type { StoreServices } from "../../stores/StoreServices.ts"
import { TimerStore } from "../../stores/TimerStore.ts"
import { TreeStore } from "../../stores/TreeStore.ts"
import * as Baton from "../Baton.ts"
import { type BatonShape, type ExecutionOutput } from "../Baton.ts"
import { ExecutionFailedError } from "../Errors.ts"
import * as ModelCalls from "../internal/evaluation/ModelCalls.ts"
import * as Compare from "../internal/evaluation/Compare.ts"
import type { Comparator, Result } from "../internal/evaluation/Compare.ts"
import { Observer } from "../Observer.ts"
import * as Workflow from "../Workflow.ts"

export type {
  /**
   * Compares an expected output with a replay's (both JSON, the recorded one
   * decoded by the workflow's output schema); true when they match.
   *
   * @category models
   * @since 0.1.0
   */
  Comparator,
  /**
   * What a replay ended with, and how it compares with the record.
   *
   * @category models
   * @since 0.1.0
   */
  Result
} from "../internal/evaluation/Compare.ts"

export {
  /**
   * A model call of a replay with no recorded answer (see the module doc).
   *
   * @category errors
   * @since 0.1.0
   */
  UnrecordedModelCallError
} from "../internal/evaluation/ModelCalls.ts"

/**
 * There is no `ExecutionHistoryStore` in context: nothing was recorded, so
 * nothing can be replayed. Provide one (every store bundle has it) to the
 * app's Baton Layer and to the replay, run executions, then replay them.
 *
 * @category errors
 * @since 0.1.0
 */
export class HistoryOffError extends Schema.TaggedError<HistoryOffError>()("HistoryOffError", {
  operation: Schema.String
}) {
  override get message() {
    return `${this.operation}: the execution history is off (no ExecutionHistoryStore in context), so no execution was recorded: provide an ExecutionHistoryStore (the store bundles have one) to the Baton Layer and to ${this.operation}, run the executions, then replay them.`
  }
}

/**
 * No recorded execution of this id in this tenant: unknown to the tenant
 * (another tenant's executions cannot be replayed), not ended yet (a root is
 * recorded when it ends), or its history was deleted (`historyRetention`,
 * `deleteThread`).
 *
 * @category errors
 * @since 0.1.0
 */
export class ExecutionNotRecordedError extends Schema.TaggedError<ExecutionNotRecordedError>()("ExecutionNotRecordedError", {
  tenantId: Schema.String,
  executionId: Schema.String
}) {
  override get message() {
    return `No recorded execution ${this.executionId} in tenant ${this.tenantId}: check the id and the tenant (another tenant's executions cannot be replayed), wait until the execution ended (a root is recorded when it ends), or keep history longer (historyRetention).`
  }
}

/**
 * The record, or the case, cannot be replayed against the workflows given:
 * the reason says why (no input kept, no workflow of that name).
 *
 * @category errors
 * @since 0.1.0
 */
export class NotReplayableError extends Schema.TaggedError<NotReplayableError>()("NotReplayableError", {
  name: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.name} cannot be replayed: ${this.reason.replace(/\.+$/, "")}.`
  }
}

/**
 * The replay paused more often than the recorded execution was answered:
 * the changed workflow asks a question the record has no decision for.
 * Record a new execution of the changed workflow, or add the decision to
 * the case's `decisions`.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnrecordedDecisionError extends Schema.TaggedError<UnrecordedDecisionError>()("UnrecordedDecisionError", {
  name: Schema.String,
  /** How many decisions the record has (all given already). */
  recorded: Schema.Number,
  /** The payload of the pause that has none. */
  payload: Schema.Unknown
}) {
  override get message() {
    return `${this.name}: the replay paused once more than the ${this.recorded} recorded decision(s) (pause payload ${JSON.stringify(this.payload) ?? "null"}): add its decision to the case's decisions, or record a new execution of the changed workflow.`
  }
}

/**
 * A golden case that is not one: not JSON, or not of the case's shape.
 *
 * @category errors
 * @since 0.1.0
 */
export class GoldenCaseError extends Schema.TaggedError<GoldenCaseError>()("GoldenCaseError", {
  source: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.source} is not a golden case: ${this.reason}. Make one with Evaluation.fromExecution (CLI: baton golden <execution> --out FILE).`
  }
}

const ModelAnswerSchema = Schema.Struct({
  node: Schema.String,
  visit: Schema.Number,
  ordinal: Schema.Number,
  provider: Schema.String,
  model: Schema.NullOr(Schema.String),
  answer: Schema.optional(Schema.Unknown),
  unrecordable: Schema.optional(Schema.String)
})

/**
 * An evaluation case: a recorded execution's input, its model answers and
 * pause decisions, and what it ended with — what a golden file holds (as
 * JSON, `Case` encoded).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Case = Schema.Struct({
  /** The case's name (default: the recorded execution's id). */
  name: Schema.String,
  workflowName: Schema.String,
  /** The workflow version recorded (for reading; a replay runs whichever version is given). */
  workflowVersion: Schema.String,
  tenantId: Schema.String,
  input: Schema.Unknown,
  answers: Schema.Array(ModelAnswerSchema),
  /** The decisions of the root's pauses, in the order they were made. */
  decisions: Schema.Array(Schema.Unknown),
  expected: Schema.Struct({
    status: Schema.Literals(["Finished", "Failed", "Cancelled"]),
    /** The final state (JSON, before the output schema), when it finished. */
    output: Schema.optional(Schema.Unknown),
    error: Schema.NullOr(Schema.String)
  })
})

/**
 * An evaluation case (see {@link Case}).
 *
 * @category models
 * @since 0.1.0
 */
export type Case = typeof Case.Type

/**
 * How a replay runs.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunOptions {
  /**
   * The stores the replay runs on: `MemoryStores.layer` (from `baton/memory`),
   * built fresh for each replay. Never the app's stores.
   */
  readonly scratch: Layer.Layer<StoreServices | IdGenerator, unknown>
  /** A model call with no recorded answer: "fail" (default) with `UnrecordedModelCallError`, or "call": made for real. */
  readonly onUnrecorded?: "fail" | "call" | undefined
  /** Compares the outputs (default: equal as JSON). */
  readonly compare?: Comparator | undefined
}

/**
 * Why a replay could not be run to its end.
 *
 * @category models
 * @since 0.1.0
 */
export type ReplayError =
  | ModelCalls.UnrecordedModelCallError
  | UnrecordedDecisionError
  | NotReplayableError
  | StoreError

/**
 * The case of a recorded execution's snapshot.
 *
 * @category constructors
 * @since 0.1.0
 */
export const caseOf = (snapshot: ExecutionSnapshot, name?: string): Effect.Effect<Case, NotReplayableError> => {
  const caseName = name ?? snapshot.executionId
  if (!("input" in snapshot)) {
    return Effect.fail(new NotReplayableError({ name: caseName, reason: "its snapshot keeps no input (its input was not kept): run the execution again to record it" }))
  }
  const decisions = snapshot.pauses
    .filter((p) => p.executionId === snapshot.executionId && (p.status === "Taken" || p.status === "Resolved"))
    .sort((a, b) => a.createdAt - b.createdAt)
    .map((p) => p.decision)
  return Effect.succeed({
    name: caseName,
    workflowName: snapshot.workflowName,
    workflowVersion: snapshot.workflowVersion,
    tenantId: snapshot.tenantId,
    input: snapshot.input,
    answers: (snapshot.answers ?? []).map((a) => ({ ...a })),
    decisions,
    expected: { status: snapshot.status, ...("output" in snapshot ? { output: snapshot.output } : {}), error: snapshot.error }
  })
}

/**
 * The case of the recorded execution `executionId` of `tenantId` (default
 * `"default"`), read from the `ExecutionHistoryStore` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromExecution = (
  executionId: string,
  options?: { readonly tenantId?: string | undefined; readonly name?: string | undefined }
): Effect.Effect<Case, HistoryOffError | ExecutionNotRecordedError | NotReplayableError | StoreError> =>
  Effect.gen(function*() {
    const history = yield* Effect.serviceOption(ExecutionHistoryStore)
    if (Option.isNone(history)) return yield* new HistoryOffError({ operation: "Evaluation.fromExecution" })
    const tenantId = options?.tenantId ?? defaultTenant
    const snapshot = yield* history.value.get(tenantId, executionId).pipe(
      Effect.catchTag("InvalidInputError", () => Effect.succeed(Option.none<ExecutionSnapshot>()))
    )
    if (Option.isNone(snapshot)) return yield* new ExecutionNotRecordedError({ tenantId, executionId })
    return yield* caseOf(snapshot.value, options?.name)
  })

/**
 * A case as a golden file's text (JSON, two-space indented).
 *
 * @category encoding
 * @since 0.1.0
 */
export const encodeCase = (c: Case): string => JSON.stringify(Schema.encodeSync(Case)(c), null, 2) + "\n"

/**
 * A golden file's text as a case; `source` names it in the error.
 *
 * @category encoding
 * @since 0.1.0
 */
export const decodeCase = (text: string, source = "the case"): Effect.Effect<Case, GoldenCaseError> =>
  Effect.gen(function*() {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      return yield* new GoldenCaseError({ source, reason: `not JSON (${(e as Error).message})` })
    }
    return yield* Schema.decodeUnknownEffect(Case)(parsed).pipe(
      Effect.mapError((e) => new GoldenCaseError({ source, reason: e.message }))
    )
  })

/** The services of the app's stores, taken out of a replay's context: it runs on its scratch stores only. */
const realStores = [
  LeaseStore, RecordStore, PauseStore, TreeStore, CheckpointStore, LedgerStore, RateLimitStore, ChildQueueStore,
  ExecutionHistoryStore, RequestStore, TimerStore, ScheduleStore, EventStore, ConcurrencyKeyStore, DebounceStore,
  IdGenerator, InstanceLiveness, StoreProbe, LeaseWakeups, EventWakeups, Observer,
  RateLimiter.RateLimiterStore, CircuitBreaker.CircuitBreakerStore
] as const

/**
 * Runs `c` against `workflow` on fresh scratch stores: the recorded input,
 * the model calls answered from the record, each pause given the next
 * recorded decision; then compares how it ended with the record.
 *
 * @category running
 * @since 0.1.0
 */
export const run = <W extends Workflow.AnyWorkflow>(
  workflow: W,
  c: Case,
  options: RunOptions
): Effect.Effect<Result, ReplayError, Workflow.Requirements<W>> =>
  Effect.scoped(Effect.gen(function*() {
    if (workflow.name !== c.workflowName) {
      return yield* new NotReplayableError({ name: c.name, reason: `it is an execution of workflow ${c.workflowName}, not ${workflow.name}` })
    }
    const source: ModelCalls.ReplaySourceShape = {
      answers: c.answers,
      onUnrecorded: options.onUnrecorded ?? "fail",
      used: { answered: 0, calledForReal: 0 },
      visits: new Map(),
      missed: undefined
    }
    const scratch = Baton.layer({ workflows: [workflow], instanceId: "replay" }).pipe(
      Layer.provide(Layer.fresh(options.scratch)),
      Layer.provide(Layer.succeed(ModelCalls.ReplaySource, source))
    )
    const baton = Context.get(
      yield* Layer.build(scratch).pipe(
        Effect.updateContext((ctx: Context.Context<any>) => Context.omit(...realStores)(ctx) as Context.Context<any>),
        // The scratch runtime's start (its notes about the memory stores) is not the app's to read.
        Effect.provideService(References.MinimumLogLevel, "Warn"),
        Effect.mapError((e) => new NotReplayableError({ name: c.name, reason: `its scratch runtime did not start: ${e instanceof Error ? e.message : String(e)}` }))
      ),
      Baton.Baton
    )
    const ended = yield* replayed(baton, workflow, c)
    if (source.missed !== undefined) return yield* source.missed
    return yield* Compare.result(c, workflow, ended, source, options.compare)
  }).pipe(Effect.mapError((e): ReplayError => e instanceof StoreError || e instanceof NotReplayableError || e instanceof UnrecordedDecisionError || e instanceof ModelCalls.UnrecordedModelCallError
    ? e
    : new NotReplayableError({ name: c.name, reason: `its replay failed: ${(e as Error).message}` })))) as Effect.Effect<Result, ReplayError, Workflow.Requirements<W>>

/**
 * A recorded payload (as the workflow's schema decoded it) in the form the
 * schema decodes, as a caller gave it: a schema that transforms (text to a
 * number, say) would refuse the decoded value. A value the schema cannot
 * encode goes as it was recorded, and its decode says what changed.
 */
const asGiven = (workflow: Workflow.AnyWorkflow, payload: "input" | "decision", value: unknown) => {
  const schema = workflow.schemas?.[payload] as Workflow.PayloadSchema<unknown> | undefined
  return schema === undefined ? Effect.succeed(value) : Effect.orElseSucceed(Schema.encodeUnknownEffect(schema)(value), () => value)
}

/** The scratch run of a case: execute, then each pause answered with the next recorded decision. */
const replayed = (baton: BatonShape, workflow: Workflow.AnyWorkflow, c: Case) =>
  Effect.gen(function*() {
    let decisions = 0
    const ended = (out: ExecutionOutput | ExecutionFailedError): Compare.Ended => {
      if (out instanceof ExecutionFailedError) return { status: "Failed", error: out.error }
      return out._tag === "Finished" ? { status: "Finished", output: out.output, error: null } : { status: "Paused", error: null }
    }
    const failed = (e: unknown) => e instanceof ExecutionFailedError ? Effect.succeed(e) : Effect.fail(e)
    let out = yield* baton.execute(workflow, yield* asGiven(workflow, "input", c.input), { tenantId: c.tenantId }).pipe(Effect.catch(failed))
    while (!(out instanceof ExecutionFailedError) && out._tag === "Paused") {
      const pause = out.pauses.find((p) => p.child === undefined)
      if (pause === undefined) break
      if (decisions >= c.decisions.length) return yield* new UnrecordedDecisionError({ name: c.name, recorded: c.decisions.length, payload: pause.payload })
      const decision = yield* asGiven(workflow, "decision", c.decisions[decisions++])
      out = yield* baton.resume({ tenantId: c.tenantId, pauseId: pause.pauseId, decision }).pipe(Effect.catch(failed))
    }
    return ended(out)
  })

/**
 * Replays the recorded execution `executionId` of `tenantId` (default
 * `"default"`) against `workflow`: {@link fromExecution}, then {@link run}.
 *
 * @category running
 * @since 0.1.0
 */
export const replay = <W extends Workflow.AnyWorkflow>(
  workflow: W,
  options: RunOptions & { readonly executionId: string; readonly tenantId?: string | undefined }
): Effect.Effect<Result, ReplayError | HistoryOffError | ExecutionNotRecordedError, Workflow.Requirements<W>> =>
  Effect.flatMap(
    // Named as the caller called it.
    Effect.catchTag(fromExecution(options.executionId, { tenantId: options.tenantId }), "HistoryOffError", () => Effect.fail(new HistoryOffError({ operation: "Evaluation.replay" }))),
    (c) => run(workflow, c, options)
  )

/**
 * The results of a set of cases against the current workflows.
 *
 * @category models
 * @since 0.1.0
 */
export interface Report {
  readonly passed: number
  readonly failed: number
  /** One per case, in order; a case that could not run is failed with its `error`. */
  readonly results: ReadonlyArray<Result & { readonly error?: string | undefined }>
}

/**
 * Runs every case against the workflow of its name among `workflows`: a
 * case whose replay cannot run (no such workflow, an unrecorded call or
 * decision) fails with the error's message; the others pass or fail by
 * their comparison.
 *
 * @category running
 * @since 0.1.0
 */
export const evaluate = <const Ws extends ReadonlyArray<Workflow.AnyWorkflow>>(
  workflows: Ws,
  cases: ReadonlyArray<Case>,
  options: RunOptions
): Effect.Effect<Report, never, Workflow.Requirements<Ws[number]>> =>
  Effect.map(
    Effect.forEach(cases, (c) => {
      const workflow = workflows.find((w) => w.name === c.workflowName)
      const replayedCase = workflow === undefined
        ? Effect.fail(new NotReplayableError({ name: c.name, reason: `no workflow named ${c.workflowName} among those given (${workflows.map((w) => w.name).join(", ") || "none"})` }))
        : run(workflow, c, options)
      return replayedCase.pipe(Effect.catch((e) => Effect.succeed(Compare.unrun(c, e.message))))
    }),
    (results): Report => ({ passed: results.filter((r) => r.passed).length, failed: results.filter((r) => !r.passed).length, results })
  ) as Effect.Effect<Report, never, Workflow.Requirements<Ws[number]>>

/**
 * Where two JSON values differ, one line per difference (`$.a[1].b:
 * expected …, got …`): what a failed case shows.
 *
 * @category utils
 * @since 0.1.0
 */
export const diff: (expected: unknown, actual: unknown) => ReadonlyArray<string> = Compare.diff
