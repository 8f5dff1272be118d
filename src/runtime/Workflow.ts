/**
 * Workflows: a name, a version and a LangGraph `StateGraph`, plus the step
 * helpers that give a node its `StepContext`.
 *
 * @since 0.1.0
 */
import type { LangGraphRunnableConfig } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint"
import { createHash } from "node:crypto"
import type { Effect } from "effect"
import { passOf } from "./internal/pass.ts"
import type { ExecutionId, InstanceId, TenantId, ThreadId } from "../stores/Ids.ts"

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
 * A named, versioned LangGraph `StateGraph` the runtime can run, resume and recover.
 *
 * @category models
 * @since 0.1.0
 */
export interface Workflow<Input = unknown> {
  readonly name: string
  readonly version: string
  readonly graph: GraphBuilder
  /** Workflows this one launches as children; their hashes are part of this one's. */
  readonly children: ReadonlyArray<AnyWorkflow>
  /** Recover a root started under another config hash anyway (default false: left alone). */
  readonly resumeAnyway: boolean
  /** Hash of name, version, graph shape and children: a running root is only recovered by an instance with the same hash. */
  readonly configHash: string
  /** Phantom: the input type of `execute`. */
  readonly _Input?: (_: Input) => void
}

/**
 * A workflow of any input type.
 *
 * @category models
 * @since 0.1.0
 */
export type AnyWorkflow = Workflow<any>

const edgesOf = (graph: GraphBuilder): Array<string> => {
  const edges = (graph as unknown as { edges?: Iterable<[string, string]> }).edges
  const branches = (graph as unknown as { branches?: Record<string, Record<string, unknown>> }).branches
  const list = edges === undefined ? [] : [...edges].map(([a, b]) => `${a}->${b}`)
  for (const [from, named] of Object.entries(branches ?? {})) list.push(`${from}?${Object.keys(named).sort().join(",")}`)
  return list.sort()
}

/**
 * Makes a workflow. `graph` is the uncompiled `StateGraph`: the runtime
 * compiles it with its own checkpointer.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <Input = unknown>(options: {
  readonly name: string
  readonly version: string
  readonly graph: GraphBuilder
  readonly children?: ReadonlyArray<AnyWorkflow> | undefined
  readonly resumeAnyway?: boolean | undefined
}): Workflow<Input> => {
  const children = options.children ?? []
  const configHash = createHash("sha256")
    .update(JSON.stringify({
      name: options.name,
      version: options.version,
      nodes: Object.keys(options.graph.nodes).sort(),
      edges: edgesOf(options.graph),
      children: children.map((c) => c.configHash).sort()
    }))
    .digest("hex")
    .slice(0, 16)
  return {
    name: options.name,
    version: options.version,
    graph: options.graph,
    children,
    resumeAnyway: options.resumeAnyway ?? false,
    configHash
  }
}

/**
 * What a step (one node visit) knows about where it runs.
 *
 * @category models
 * @since 0.1.0
 */
export interface StepContext {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  /** The instance running this visit (another one may run it again after a takeover). */
  readonly instanceId: InstanceId
  readonly node: string
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
}

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
  const idempotencyKey = `${pass.tenantId}/${pass.threadId}/${taskId}`
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
    idempotencyKeyFor: (n) => `${idempotencyKey}#${n}`
  }
}

/**
 * A node from an async function of the state and its step context. Its body
 * is tracked: the tree's lease is released only once it returned, even when
 * the pass was aborted meanwhile.
 *
 * @category utils
 * @since 0.1.0
 */
export const step = <S, U>(body: (state: S, ctx: StepContext) => Promise<U> | U) =>
(state: S, config: LangGraphRunnableConfig): Promise<U> => {
  const ctx = stepContext(config)
  return passOf(config).runBody(ctx.node, () => Promise.resolve().then(() => body(state, ctx)))
}

/**
 * A node from an Effect. It runs with the instance's services (anything
 * provided to the `Baton` Layer) and is interrupted when the pass stops.
 * A failure of the Effect fails the step like a thrown error.
 *
 * @category utils
 * @since 0.1.0
 */
export const effectStep = <S, U, E, R>(body: (state: S, ctx: StepContext) => Effect.Effect<U, E, R>) =>
(state: S, config: LangGraphRunnableConfig): Promise<U> => {
  const ctx = stepContext(config)
  return passOf(config).runEffect(ctx.node, body(state, ctx) as Effect.Effect<U, E, never>)
}
