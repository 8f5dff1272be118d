/**
 * Workflows: a name, a version and a LangGraph `StateGraph`, plus the step
 * helpers that give a node its `StepContext`.
 *
 * A workflow may be typed: optional Effect `Schema`s for its input, its
 * output and its decisions (the values `resume` feeds its pauses) are
 * decoded at the boundary, and the services its Effect steps need (the
 * `steps` it lists, and its children's) are part of its type — so the
 * runtime Layer that runs it requires them, and a service nobody provides
 * is a compile error rather than a failure at run time.
 *
 * @since 0.1.0
 */
import * as NodeUndo from "./internal/undo/NodeUndo.ts"
import * as ReusedKeys from "./internal/pass/ReusedKeys.ts"
import type { ExtractStateType, LangGraphRunnableConfig, StateGraph } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { createHash } from "node:crypto"
import { inspect } from "node:util"
import { type Duration, Effect, Schema, SchemaIssue } from "effect"
import * as StepWaits from "./internal/timers/StepWaits.ts"
import * as Options from "../stores/internal/options.ts"
import * as InterruptPayload from "./internal/pass/InterruptPayload.ts"
import { passOf } from "./internal/pass/pass.ts"
import type { ChildExecutionsFailedError, LaunchOptions } from "./Children.ts"
import { launchIdOf } from "./Children.ts"
import { InvalidInputError } from "../stores/Errors.ts"
import * as Pseudonyms from "./internal/pass/Pseudonyms.ts"
import type { ExecutionId, InstanceId, TenantId, ThreadId } from "../stores/Ids.ts"
import type * as Budget from "./limits/Budget.ts"

/**
 * The structural view of a `StateGraph` builder baton needs (any `StateGraph` has it).
 *
 * @category models
 * @since 0.1.0
 */
export interface GraphBuilder {
  readonly nodes: Record<string, unknown>
  compile(options: { checkpointer: BaseCheckpointSaver }): unknown
}

/**
 * A schema of a workflow's payload: decodes the JSON the stores keep (and
 * what callers pass) into the payload's type. No services.
 *
 * @category models
 * @since 0.1.0
 */
export type PayloadSchema<A> = Schema.Codec<A, unknown>

/**
 * The schemas of a workflow's payloads, each optional: without one a payload
 * is taken as it comes (any JSON value).
 *
 * @category models
 * @since 0.1.0
 */
export interface Schemas<Input, Output, Decision> {
  /** The input of `start`/`execute`: decoded before anything is written. */
  readonly input?: PayloadSchema<Input> | undefined
  /** The graph's final state, decoded when an execution's output is handed back. */
  readonly output?: PayloadSchema<Output> | undefined
  /** A decision given to `resume`: decoded before it is recorded. */
  readonly decision?: PayloadSchema<Decision> | undefined
}

/**
 * A free-text reply to a pause, as the workflow's interpreter is given it:
 * the text, what the pause asked, where it stands, and the budgets of its
 * tree (to pass to `Provider.guard`, so the interpreter's spend reaches them).
 *
 * @category models
 * @since 0.1.0
 */
export interface Reply {
  readonly reply: string
  /** What the node's `interrupt(...)` asked (the pause's payload). */
  readonly payload: unknown
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly executionId: ExecutionId
  readonly pauseId: string
  /** The instance that got the call (it holds no lease while interpreting). */
  readonly instanceId: InstanceId
  readonly budgets: ReadonlyArray<Budget.Budget>
}

/**
 * What reads a free-text reply as a decision: typically a model call
 * guarded by `Provider.guard`. Fail with `ReplyNotUnderstoodError` when the
 * reply cannot be mapped; any other failure is reported as
 * `ReplyInterpretationFailedError`. Either way the pause stays pending.
 *
 * @category models
 * @since 0.1.0
 */
export type Interpreter<Decision, R> = (reply: Reply) => Effect.Effect<Decision, unknown, R>

/**
 * A workflow: `Input` is what `start`/`execute` take, `Output` what a
 * finished execution hands back, `Decision` what `resume` takes for its
 * pauses, `R` the services its Effect steps need.
 *
 * @category models
 * @since 0.1.0
 */
export interface Workflow<Input = unknown, Output = unknown, Decision = unknown, R = never> {
  readonly name: string
  readonly version: string
  readonly graph: GraphBuilder
  /** Workflows this one launches as children; their hashes are part of this one's. */
  readonly children: ReadonlyArray<AnyWorkflow>
  /** Recover a root started under another config hash anyway (default false: left alone). */
  readonly resumeAnyway: boolean
  /**
   * At most this many of the children this workflow's executions launch
   * (placement `"any"`) run at once, across every instance (held as leased
   * slots in `RateLimitStore`); undefined: no cap.
   */
  readonly maxConcurrentExecutions?: number | undefined
  /**
   * Budgets of every execution tree rooted at this workflow (its children's
   * spend included, wherever they run), given to each step as `ctx.budgets`
   * with the application's (see `Budget.DeclaredBudget`). A child's own
   * declarations count when it runs as a root.
   */
  readonly budgets?: ReadonlyArray<Budget.DeclaredBudget> | undefined
  /** Reads a free-text reply (`resume({ pauseId, reply })`) as a decision; none: replies are refused. */
  readonly interpret?: Interpreter<unknown, any> | undefined
  /** Live output for its executions (`Baton.stream`); undefined: the application's `liveOutput` option. */
  readonly liveOutput?: boolean | undefined
  /**
   * Checkpoints kept per namespace of this workflow's threads (see
   * `BatonConfig` `checkpointKeepLast`, which it overrides); not part of the
   * config hash.
   *
   * @since 0.1.0
   */
  readonly checkpointKeepLast?: number | undefined
  /**
   * How long this workflow's checkpoints are kept (see `BatonConfig`
   * `checkpointKeepFor`, which it overrides); not part of the config hash.
   *
   * @since 0.1.0
   */
  readonly checkpointKeepFor?: Duration.Input | undefined
  /**
   * The most LangGraph steps one pass of an execution may take (LangGraph's
   * `recursionLimit`; undefined: LangGraph's own, 25): a graph that loops
   * longer needs a higher one.
   *
   * @since 0.1.0
   */
  readonly recursionLimit?: number | undefined
  /** Hash of name, version, graph shape and children: a running root is only recovered by an instance with the same hash. */
  readonly configHash: string
  /** The payload schemas given to `make` (none: payloads as they come). */
  readonly schemas: Schemas<Input, Output, Decision>
  /**
   * The signals `Baton.signal` may send to its executions, by name, each with
   * the schema its payload must pass (none: no signal is accepted).
   *
   * @since 0.1.0
   */
  readonly signals?: Readonly<Record<string, PayloadSchema<any>>> | undefined
  /** Phantom: the input type of `execute`. */
  readonly _Input?: (_: Input) => void
  /** Phantom: the output type. */
  readonly _Output?: () => Output
  /** Phantom: the decision type. */
  readonly _Decision?: () => Decision
  /** Phantom: the services the workflow's Effect steps need. */
  readonly _R?: () => R
}

/**
 * Any workflow, whatever its payloads and services.
 *
 * @category models
 * @since 0.1.0
 */
export type AnyWorkflow = Workflow<any, any, any, any>

/**
 * The services a workflow's Effect steps (and its children's) need.
 *
 * @category models
 * @since 0.1.0
 */
export type Requirements<W> = W extends Workflow<any, any, any, infer R> ? R : never

/**
 * A node made by {@link effectStep}: LangGraph calls it like any node; the
 * services its Effect needs travel in its type (`R`).
 *
 * @category models
 * @since 0.1.0
 */
export interface EffectNode<S, U, R> {
  (state: S, config: LangGraphRunnableConfig): Promise<U>
  /** Phantom (no value at run time): the services the node's Effect needs. */
  readonly "~baton/requires": () => R
}

/** The services of the nodes of a `steps` record (a plain node needs none). */
type StepsRequirements<Steps> = {
  [K in keyof Steps]: Steps[K] extends EffectNode<any, any, infer R> ? R : never
}[keyof Steps]

const edgesOf = (graph: GraphBuilder | undefined): Array<string> => {
  const edges = (graph as unknown as { edges?: Iterable<[string, string]> } | undefined)?.edges
  const branches = (graph as unknown as { branches?: Record<string, Record<string, unknown>> } | undefined)?.branches
  const list = edges === undefined ? [] : [...edges].map(([a, b]) => `${a}->${b}`)
  for (const [from, named] of Object.entries(branches ?? {})) list.push(`${from}?${Object.keys(named).sort().join(",")}`)
  return list.sort()
}

/**
 * The state a `StateGraph` builder ends with — what a finished execution of a
 * workflow without an `output` schema hands back: the state of the graph's
 * output definition (its state annotation or schema, unless the graph names
 * a separate output). `unknown` for a builder whose type does not say.
 *
 * @category models
 * @since 0.1.0
 */
export type GraphOutput<G> = G extends StateGraph<any, any, any, any, any, infer O, any, any, any, any>
  ? unknown extends O ? unknown : ExtractStateType<O>
  : unknown

declare const unsetOutput: unique symbol

/** The `Output` of `make` when no `output` schema gives it: the graph's own state (see `GraphOutput`). */
type UnsetOutput = typeof unsetOutput

/**
 * What {@link make} takes.
 *
 * @category constructors
 * @since 0.1.0
 */
export interface MakeOptions<Input, Output, Decision, Steps, Children extends ReadonlyArray<AnyWorkflow>, IR = never>
  extends Schemas<Input, Output, Decision>
{
  readonly name: string
  readonly version: string
  /** The uncompiled `StateGraph`: the runtime compiles it with its own checkpointer. */
  readonly graph: GraphBuilder
  /**
   * The graph's Effect nodes (made with {@link effectStep}), by any name:
   * listing them puts the services they need in the workflow's type — and so
   * in the requirements of the runtime Layer that runs it. Use the same
   * values in `graph`.
   */
  readonly steps?: Steps | undefined
  readonly children?: Children | undefined
  readonly resumeAnyway?: boolean | undefined
  /** A whole number ≥ 1: at most this many of its launched children run at once, fleet-wide (see `Workflow.maxConcurrentExecutions`). */
  readonly maxConcurrentExecutions?: number | undefined
  /** Budgets of each tree rooted at this workflow (see `Workflow.budgets`). */
  readonly budgets?: ReadonlyArray<Budget.DeclaredBudget> | undefined
  /**
   * Reads a free-text reply to one of its pauses as a decision (see
   * {@link Interpreter}); it runs on the instance that got the `resume`,
   * before the pause is resolved and holding no lease. The decision it
   * answers is decoded by `decision` like any other.
   */
  readonly interpret?: Interpreter<Decision, IR> | undefined
  /**
   * Live output for its executions (`Baton.stream`, the SSE route): step
   * events and status changes appended to the `EventStore` as it runs.
   * Undefined: the application's `liveOutput` option (default off).
   */
  readonly liveOutput?: boolean | undefined
  /**
   * The signals its executions take (`Baton.signal`, `ctx.waitFor`), by name,
   * each with its payload's schema: another name, or a payload the schema
   * refuses, is refused before anything is written.
   *
   * @since 0.1.0
   */
  readonly signals?: Readonly<Record<string, PayloadSchema<any>>> | undefined
  /** Checkpoints kept per namespace of this workflow's threads, overriding the global option. @since 0.1.0 */
  readonly checkpointKeepLast?: number | undefined
  /** How long this workflow's checkpoints are kept, overriding the global option. @since 0.1.0 */
  readonly checkpointKeepFor?: Duration.Input | undefined
  /** The most LangGraph steps one pass may take (LangGraph's `recursionLimit`, 1 to 1,000,000; default LangGraph's 25). @since 0.1.0 */
  readonly recursionLimit?: number | undefined
}

/**
 * Makes a workflow. `graph` is the uncompiled `StateGraph`: the runtime
 * compiles it with its own checkpointer. Schemas (`input`, `output`,
 * `decision`) are optional; without them payloads are taken as they come.
 * Without an `output` schema, the workflow's `Output` (what `Finished.output`
 * holds) is the graph's state type (`GraphOutput`), inferred from `graph`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <
  Input = unknown,
  Output = UnsetOutput,
  Decision = unknown,
  const Steps extends Readonly<Record<string, unknown>> = {},
  const Children extends ReadonlyArray<AnyWorkflow> = [],
  G extends GraphBuilder = GraphBuilder,
  IR = never
>(
  options: MakeOptions<Input, Output, Decision, Steps, Children, IR> & { readonly graph: G }
): Workflow<
  Input,
  [Output] extends [UnsetOutput] ? GraphOutput<G> : Output,
  Decision,
  StepsRequirements<Steps> | Requirements<Children[number]> | IR
> => {
  // Options that cannot work (from JavaScript, past the types) are hashed as they are; Baton.layer refuses them, naming what to pass.
  // No options object at all is a workflow without name, version or graph: refused there the same way.
  const given = typeof options === "object" && options !== null ? options : {} as typeof options
  const children = given.children ?? []
  const configHash = createHash("sha256")
    .update(JSON.stringify({
      name: given.name,
      version: given.version,
      nodes: Object.keys(given.graph?.nodes ?? {}).sort(),
      edges: edgesOf(given.graph),
      children: Array.isArray(children) ? children.map((c) => c?.configHash).sort() : []
    }))
    .digest("hex")
    .slice(0, 16)
  return {
    name: given.name,
    version: given.version,
    graph: given.graph,
    children,
    resumeAnyway: given.resumeAnyway ?? false,
    maxConcurrentExecutions: given.maxConcurrentExecutions,
    ...(given.budgets === undefined ? {} : { budgets: given.budgets }),
    ...(given.interpret === undefined ? {} : { interpret: given.interpret as Interpreter<unknown, any> }),
    ...(given.liveOutput === undefined ? {} : { liveOutput: given.liveOutput }),
    ...(given.checkpointKeepLast === undefined ? {} : { checkpointKeepLast: given.checkpointKeepLast }),
    ...(given.checkpointKeepFor === undefined ? {} : { checkpointKeepFor: given.checkpointKeepFor }),
    ...(given.recursionLimit === undefined ? {} : { recursionLimit: given.recursionLimit }),
    configHash,
    schemas: { input: given.input, output: given.output as PayloadSchema<any> | undefined, decision: given.decision },
    signals: given.signals
  }
}

/**
 * Which payload of a workflow a value is.
 *
 * @category decoding
 * @since 0.1.0
 */
export type Payload = "input" | "output" | "decision"

/**
 * Decodes a payload of `workflow` with its schema (as it comes when it has
 * none). A value the schema refuses fails with `InvalidInputError` naming
 * the path of the first problem under `field` (`input.amount`,
 * `decision.items[2]`) and every problem in the reason.
 *
 * @category decoding
 * @since 0.1.0
 */
export const decode = <W extends AnyWorkflow, P extends Payload>(
  workflow: W,
  payload: P,
  value: unknown,
  operation: string
): Effect.Effect<unknown, InvalidInputError> => {
  const schema = workflow.schemas?.[payload] as PayloadSchema<unknown> | undefined
  if (schema === undefined) return Effect.succeed(value)
  return Schema.decodeUnknownEffect(schema)(value, { errors: "all" }).pipe(
    Effect.mapError((error) => {
      const issues = formatter(error.issue).issues
      const named = issues.map((i) => `${pathOf(payload, i.path)}: ${i.message}`)
      return new InvalidInputError({
        operation,
        field: pathOf(payload, issues[0]?.path),
        reason: `does not match workflow "${workflow.name}"'s ${payload} schema (${named.join("; ")})`
      })
    })
  )
}

/**
 * Decodes a signal's payload with the schema `workflow` declares for `name`
 * (see `MakeOptions.signals`); a payload it refuses fails with
 * `InvalidInputError` naming the path under `payload`.
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodeSignal = (workflow: AnyWorkflow, name: string, value: unknown, operation: string): Effect.Effect<unknown, InvalidInputError> => {
  const schema = workflow.signals?.[name] as PayloadSchema<unknown> | undefined
  if (schema === undefined) return Effect.succeed(value)
  return Schema.decodeUnknownEffect(schema)(value, { errors: "all" }).pipe(
    Effect.mapError((error) => {
      const issues = formatter(error.issue).issues
      const named = issues.map((i) => `${pathOf("payload", i.path)}: ${i.message}`)
      return new InvalidInputError({
        operation,
        field: pathOf("payload", issues[0]?.path),
        reason: `does not match the schema workflow "${workflow.name}" declares for signal "${name}" (${named.join("; ")})`
      })
    })
  )
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** `root.a[2].b` from an issue path (a Standard Schema path holds keys or `{ key }` segments). */
const pathOf = (root: string, path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined): string =>
  (path ?? []).reduce<string>((out, segment) => {
    const key = typeof segment === "object" ? segment.key : segment
    return typeof key === "number" ? `${out}[${key}]` : `${out}.${String(key)}`
  }, root)

/**
 * Where a step or an undo runs: its tenant, thread, execution and tree, and
 * the node.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunsIn {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  readonly node: string
}

/**
 * What a step (one node visit) knows about where it runs.
 *
 * @category models
 * @since 0.1.0
 */
export interface StepContext extends RunsIn {
  /** The instance running this visit (another one may run it again after a takeover). */
  readonly instanceId: InstanceId
  /** Aborted when the pass stops (lease lost, cancelled, instance closing). Pass it into I/O. */
  readonly signal: AbortSignal
  /**
   * True while this pass still holds the tree's lease, by the local fence
   * (the clock read before the last confirmed renewal, plus the lease length,
   * is still ahead) and not aborted. Check it right before an irreversible
   * call: a process that was paused past its lease sees false here before its
   * abort signal fires. Pair it with the idempotency key; it narrows the
   * window, it cannot close it.
   */
  readonly leaseHeld: () => boolean
  /**
   * The same value every time this step is run again, on any instance: key
   * a side effect by it so it happens once. For several effects in one
   * node, use `idempotencyKeyFor(n)`.
   */
  readonly idempotencyKey: string
  readonly idempotencyKeyFor: (n: number | string) => string
  /**
   * A token standing for a personal value, under a key made once for this
   * execution tree and kept with it (never logged): the same value gives
   * the same token on every instance that continues the execution; another
   * execution's tokens differ. Keep tokens, not values, in state and logs.
   */
  readonly pseudonymize: (value: string) => Promise<string>
  /** The value a token of this execution stands for; rejects with `PseudonymError` for a token of another execution. */
  readonly reidentify: (token: string) => Promise<string>
  /**
   * Launches one child per input of `workflow` (declared in this workflow's
   * `children`) and answers their outputs (each child's final state) in
   * launch order once all have finished; rejects with
   * `ChildExecutionsFailedError` (each failed child's cause) when any did
   * not. Idempotent by this step's idempotency key: the step run again finds
   * the same children. Placement `"parent"` (default) runs them on this
   * instance inside the step; `"any"` queues them for any instance with free
   * step slots, and the parent rests — its lease and slot released, its
   * status Paused waiting on children — until the last one ends; then the
   * step runs again from its start and this call answers at once. Code
   * before the call runs again then: keep side effects after it, or key them.
   */
  readonly launch: <I, O>(workflow: Workflow<I, O, any, any>, inputs: ReadonlyArray<I>, options?: LaunchOptions) => Promise<ReadonlyArray<O>>
  /** The id of this step's `n`th launch (0-based): read its children with `Children.launched`. */
  readonly launchId: (n: number) => string
  /**
   * The budgets declared for this execution: the application's and its
   * tree's root workflow's (`Workflow.make({ budgets })`), made concrete — a
   * tree budget counts under the root's id, so a child's spend reaches its
   * root's counter. Pass them to `Provider.guard({ budgets: ctx.budgets })`
   * or `Budget.spend`.
   */
  readonly budgets: ReadonlyArray<Budget.Budget>
  /**
   * Sleeps durably for `duration` (on the Clock): the tree rests — no lease,
   * no busy instance, one timer row — and any instance wakes it when the time
   * comes (never before); the step then runs again from its start and this
   * call answers at once. Code before the call runs again then: keep side
   * effects after it, or key them. Like `interrupt`, do not catch what it
   * throws. Needs a `TimerStore` (the store bundles have one).
   *
   * @since 0.1.0
   */
  readonly sleep: (duration: Duration.Input) => Promise<void>
  /**
   * `sleep` until `instant` (a `Date` or epoch milliseconds on the Clock); one in the past wakes at once.
   *
   * @since 0.1.0
   */
  readonly sleepUntil: (instant: Date | number) => Promise<void>
  /**
   * Waits for the next signal `name` sent to this execution (`Baton.signal`;
   * one sent before the wait started counts): the tree rests as for a sleep,
   * and answers `Received` with the payload and its place in send order — or
   * `TimedOut` once `timeout` passed with no signal. Each signal is taken by
   * exactly one wait, in send order. Needs a `TimerStore`.
   *
   * @since 0.1.0
   */
  readonly waitFor: <A = unknown>(name: string, options?: StepWaits.WaitForOptions) => Promise<StepWaits.SignalResult<A>>
}

/** LangGraph's step of a root graph's node call (undefined inside a subgraph). */
const graphStepOf = (config: LangGraphRunnableConfig): number | undefined =>
  ReusedKeys.isRootStep(config.metadata?.langgraph_checkpoint_ns as string | undefined)
    ? config.metadata?.langgraph_step as number | undefined
    : undefined

/**
 * The step context of a node call. Fails if the node is not running under baton.
 *
 * @category utils
 * @since 0.1.0
 */
export const stepContext = (config: LangGraphRunnableConfig): StepContext => {
  const pass = passOf(config)
  const taskId = (config as { executionInfo?: { taskId?: string } }).executionInfo?.taskId ??
    (config.configurable?.__pregel_task_id as string | undefined)
  const node = (config.metadata?.langgraph_node as string | undefined) ?? "?"
  if (taskId === undefined) throw new Error("stepContext: LangGraph gave this node no task id; call it from a node of a baton workflow.")
  const step = graphStepOf(config)
  const idempotencyKey = ReusedKeys.keyFor(pass.reusedKeys, step, node, ReusedKeys.stepKey(pass.tenantId, pass.threadId, taskId))
  let launches = 0
  return {
    tenantId: pass.tenantId,
    threadId: pass.threadId,
    executionId: pass.executionId,
    rootExecutionId: pass.rootExecutionId,
    instanceId: pass.instanceId,
    node,
    signal: pass.signal,
    leaseHeld: pass.leaseHeld,
    idempotencyKey,
    idempotencyKeyFor: (n) => `${idempotencyKey}#${n}`,
    pseudonymize: (value) => pass.pseudonymKey().then((key) => Pseudonyms.pseudonymize(key, value)),
    reidentify: (token) => pass.pseudonymKey().then((key) => Pseudonyms.reidentify(key, token, pass.rootExecutionId)),
    launch: <I, O>(workflow: Workflow<I, O, any, any>, inputs: ReadonlyArray<I>, options?: LaunchOptions) =>
      pass.launch(idempotencyKey, launches++, workflow, inputs, options) as Promise<ReadonlyArray<O>>,
    launchId: (n) => launchIdOf(pass.tenantId, pass.executionId, idempotencyKey, n),
    budgets: pass.budgets,
    sleep: (duration) => StepWaits.sleep(pass, duration),
    sleepUntil: (instant) => StepWaits.sleepUntil(pass, instant),
    waitFor: (name, options) => StepWaits.waitFor(pass, name, options)
  }
}

/**
 * A node that sleeps durably (see `StepContext.sleep`) and changes no state:
 * `duration` is a duration, or a function of the state answering one —
 * or `{ until }`, an instant (a `Date` or epoch milliseconds) or a function
 * of the state answering one. Add it to a graph like any node.
 *
 * @category constructors
 * @since 0.1.0
 */
export const sleepNode = <S = unknown>(
  duration: Duration.Input | ((state: S) => Duration.Input) | { readonly until: Date | number | ((state: S) => Date | number) }
): (state: S, config: LangGraphRunnableConfig) => Promise<Record<string, never>> =>
  step(async (state: S, ctx) => {
    if (typeof duration === "object" && duration !== null && "until" in duration) {
      const until = duration.until
      await ctx.sleepUntil(typeof until === "function" ? until(state) : until)
    } else {
      await ctx.sleep(typeof duration === "function" ? (duration as (state: S) => Duration.Input)(state) : duration)
    }
    return {} as Record<string, never>
  })

export type { SignalResult, WaitForOptions } from "./internal/timers/StepWaits.ts"

/**
 * Why an execution unwinds: a step failed (or a child did), or it was cancelled.
 *
 * @category models
 * @since 0.1.0
 */
export type UndoReason = "Failed" | "Cancelled"

/**
 * What an undo knows about where it runs. Undos run last-in-first-out when
 * an execution ends without finishing, on whichever instance holds the
 * tree then; an undo that fails is tried again (see `BatonConfig`'s
 * `undoAttempts`), possibly on another instance after a takeover.
 *
 * @category models
 * @since 0.1.0
 */
export interface UndoContext extends RunsIn {
  /** The instance running this try of the undo. */
  readonly instanceId: InstanceId
  /** The node whose step is undone. */
  readonly node: string
  /** The idempotency key the step's body had. */
  readonly stepIdempotencyKey: string
  /**
   * This undo's own key (`<step key>:undo`): the same on every try and every
   * instance, so an undo service that honours it undoes once.
   */
  readonly idempotencyKey: string
  /** Why the execution unwinds (the first reason recorded, whoever records it). */
  readonly reason: UndoReason
  /** 1 for the first try of this undo on this holder, then 2, 3, … */
  readonly attempt: number
  /** Aborted when the holder must stop (its lease lost, its instance closing): the rest is handed over. */
  readonly signal: AbortSignal
  /** True while the holder still holds the tree's lease (the local fence): check it before an irreversible call. */
  readonly leaseHeld: () => boolean
}

/** A step's undo as the runtime keeps it on the node. */
type UndoFunction = NodeUndo.NodeUndo<UndoContext>

/**
 * A step's `compensationTimeout` in milliseconds (undefined when unset); a
 * bad one throws `InvalidInputError` naming the field, when the step is made.
 */
const compensationTimeoutOf = (operation: string, value: unknown): number | undefined => {
  if (value === undefined) return undefined
  const checked = Options.duration({ min: 1, max: Options.maxTimerMillis, example: "30 seconds" })(value)
  if (checked instanceof Options.Refusal) throw new InvalidInputError({ operation, field: "compensationTimeout", reason: checked.refused })
  return checked
}

/**
 * The options of {@link step}.
 *
 * @category models
 * @since 0.1.0
 */
export interface StepOptions<U> {
  /**
   * Undoes what the step did. It gets the step's result as the stores keep
   * it (JSON) and an {@link UndoContext}. The registration is durable: once
   * the body returned, "this step finished with this result and has an
   * undo" is written to the tree (keyed by the step's idempotency key)
   * before the step's result is checkpointed.
   */
  readonly undo?: ((result: U, ctx: UndoContext) => Promise<unknown> | unknown) | undefined
  /**
   * How long one try of the undo may run, on the Clock (1 ms up to ~24.8
   * days). A try still running then counts as failed (timed out): the next
   * try runs after the backoff, within `undoAttempts`; an Effect undo is
   * interrupted, a Promise undo keeps the lease held until it settles.
   * Unset: a try runs as long as it takes.
   *
   * @since 0.1.0
   */
  readonly compensationTimeout?: Duration.Input | undefined
}

/**
 * The options of {@link effectStep}: its undo is an Effect run with the instance's services.
 *
 * @category models
 * @since 0.1.0
 */
export interface EffectStepOptions<U, R> {
  /** Like `StepOptions.undo`, as an Effect (its failure is a failed try; see `BatonConfig.undoAttempts`). */
  readonly undo?: ((result: U, ctx: UndoContext) => Effect.Effect<unknown, unknown, R>) | undefined
  /**
   * Like `StepOptions.compensationTimeout`.
   *
   * @since 0.1.0
   */
  readonly compensationTimeout?: Duration.Input | undefined
}

/** The registration of a finished step's undo, before its result goes to LangGraph. */
const registered = <U>(config: LangGraphRunnableConfig, ctx: StepContext, result: U): Promise<U> =>
  passOf(config).registerUndo(ctx.node, ctx.idempotencyKey, result).then(() => result)

/**
 * `ctx.launch` for an Effect step: the children's outputs in launch order,
 * or `ChildExecutionsFailedError` typed. (A parent that rests while its
 * children run stops the step here; the step runs again when they ended.)
 *
 * @category utils
 * @since 0.1.0
 */
export const launchChildren = <I, O>(
  ctx: StepContext,
  workflow: Workflow<I, O, any, any>,
  inputs: ReadonlyArray<I>,
  options?: LaunchOptions
): Effect.Effect<ReadonlyArray<O>, ChildExecutionsFailedError> =>
  Effect.tryPromise({
    try: () => ctx.launch(workflow, inputs, options),
    catch: (e) => e
  }).pipe(
    Effect.catch((e) =>
      (e as { _tag?: unknown })?._tag === "ChildExecutionsFailedError" ? Effect.fail(e as ChildExecutionsFailedError) : Effect.die(e)
    )
  )

/**
 * A step's failure as LangGraph needs it: an `Error`. A body may throw (or an
 * Effect fail or die with) any value; LangGraph tags what a node throws, which
 * a string or a number cannot be, and the record keeps the error's message —
 * so any other value becomes an `Error` whose message is the value (a string
 * as it is, anything else as JSON — or, when JSON cannot write it (a cycle, a
 * BigInt, a throwing `toJSON`), as `util.inspect` shows it) and whose `cause`
 * is the value itself.
 */
const rejectAsError = (error: unknown): Promise<never> => {
  if (error instanceof Error) return Promise.reject(error)
  let message: string | undefined
  try {
    message = typeof error === "string" ? error : JSON.stringify(error)
  } catch {
    message = inspect(error, { depth: 4, breakLength: Infinity })
  }
  return Promise.reject(new Error(message ?? String(error), { cause: error }))
}

/**
 * A node from an async function of the state and its step context. Its body
 * is tracked: the tree's lease is released only once it returned, even when
 * the pass was aborted meanwhile. With `undo`, the step registers its undo
 * durably when its body returns.
 *
 * @category utils
 * @since 0.1.0
 */
export const step = <S, U>(body: (state: S, ctx: StepContext) => Promise<U> | U, options?: StepOptions<U>) => {
  const undo = options?.undo
  const timeoutMillis = compensationTimeoutOf("Workflow.step", options?.compensationTimeout)
  const node = (state: S, config: LangGraphRunnableConfig): Promise<U> => {
    const ctx = stepContext(config)
    const run = () => Promise.resolve().then(() => body(state, ctx))
    return passOf(config).runBody(ctx.node, undo === undefined ? run : () => run().then((result) => registered(config, ctx, result)), ctx.idempotencyKey, graphStepOf(config))
      .catch((error) => rejectAsError(InterruptPayload.explain(ctx.node, error)))
  }
  if (undo !== undefined) {
    Object.defineProperty(node, NodeUndo.undoKey, { value: { _tag: "Promise", run: undo as (result: unknown, ctx: UndoContext) => unknown, timeoutMillis } satisfies UndoFunction })
  }
  return node
}

/**
 * A node from an Effect. It runs with the instance's services (anything
 * provided to the `Baton` Layer) and is interrupted when the pass stops.
 * A failure of the Effect fails the step like a thrown error. With `undo`,
 * the step registers its undo durably when its Effect succeeds; the undo's
 * services are part of the node's requirements.
 *
 * @category utils
 * @since 0.1.0
 */
export const effectStep = <S, U, E, R, R2 = never>(
  body: (state: S, ctx: StepContext) => Effect.Effect<U, E, R>,
  options?: EffectStepOptions<U, R2>
): EffectNode<S, U, R | R2> => {
  const undo = options?.undo
  const timeoutMillis = compensationTimeoutOf("Workflow.effectStep", options?.compensationTimeout)
  const node = (state: S, config: LangGraphRunnableConfig): Promise<U> => {
    const ctx = stepContext(config)
    const effect = body(state, ctx) as Effect.Effect<U, E, never>
    return passOf(config).runEffect(
      ctx.node,
      undo === undefined ? effect : Effect.tap(effect, (result) => Effect.tryPromise({ try: () => registered(config, ctx, result), catch: (e) => e })),
      ctx.idempotencyKey,
      graphStepOf(config)
    ).catch((error) => rejectAsError(InterruptPayload.explain(ctx.node, error)))
  }
  if (undo !== undefined) {
    Object.defineProperty(node, NodeUndo.undoKey, { value: { _tag: "Effect", run: undo as UndoFunction["run"], timeoutMillis } })
  }
  // The requirements are a phantom: nothing is kept at run time.
  return node as EffectNode<S, U, R | R2>
}
