/**
 * A fork's state update, tried before the fork writes anything: on a
 * scratch copy of the forked checkpoint in a `MemorySaver` of its own, with
 * the workflow's graph compiled over it, so LangGraph's own `updateState`
 * refuses what it would refuse (a node that does not exist, a value that is
 * not an object, an update it cannot attribute to a node, a reducer that
 * throws) while nothing of the fork is written yet. The scratch copy is
 * dropped with the call.
 *
 * @since 0.1.0
 */
import type { CompiledStateGraph } from "@langchain/langgraph"
import { type CheckpointTuple, ERROR, MemorySaver, type PendingWrite, RESUME } from "@langchain/langgraph-checkpoint"
import { Effect } from "effect"
import { InvalidInputError } from "../../../stores/Errors.ts"
import type { AnyWorkflow } from "../../Workflow.ts"

/** The part of a compiled graph the check uses. */
interface Updatable {
  readonly nodes: Record<string, unknown>
  readonly updateState: (config: { readonly configurable: Record<string, unknown> }, values: unknown, asNode?: string) => Promise<unknown>
}

/** The tuple's pending writes by task, as the fork copies them (a pause's decision and a failure left out). */
export const writesByTask = (tuple: CheckpointTuple): Map<string, Array<PendingWrite>> => {
  const byTask = new Map<string, Array<PendingWrite>>()
  for (const [taskId, channel, value] of tuple.pendingWrites ?? []) {
    if (channel === RESUME || channel === ERROR) continue
    const list = byTask.get(taskId) ?? []
    list.push([channel, value])
    byTask.set(taskId, list)
  }
  return byTask
}

/** The workflow's graph compiled over a scratch `MemorySaver`. */
const scratchGraph = (workflow: AnyWorkflow) => {
  const saver = new MemorySaver()
  const graph = (workflow.graph as unknown as { compile: (o: { checkpointer: MemorySaver }) => CompiledStateGraph<any, any> })
    .compile({ checkpointer: saver }) as unknown as Updatable
  return { saver, graph }
}

const tryUpdate = async (
  { graph, saver }: ReturnType<typeof scratchGraph>,
  tuple: CheckpointTuple,
  writes: boolean,
  update: unknown,
  asNode: string | undefined
) => {
  const at = { configurable: { thread_id: "baton-fork-check", checkpoint_ns: "" } }
  const metadata = tuple.metadata ?? { source: "fork" as const, step: -1, parents: {} }
  const saved = await saver.put(at, tuple.checkpoint, metadata)
  if (writes) for (const [taskId, list] of writesByTask(tuple)) await saver.putWrites(saved, list, taskId)
  await graph.updateState({ configurable: { ...saved.configurable } }, update, asNode)
}

/**
 * Fails with `InvalidInputError` when LangGraph would refuse `update` (as
 * `asNode`) at `tuple` (`writes` as the fork copies them): field `asNode`
 * for a node the graph does not have, `update` for the rest.
 *
 * @category internal
 * @since 0.1.0
 */
export const check = (workflow: AnyWorkflow, tuple: CheckpointTuple, writes: boolean, update: unknown, asNode: string | undefined) =>
  Effect.gen(function*() {
    const scratch = scratchGraph(workflow)
    const nodes = Object.keys(scratch.graph.nodes).filter((n) => !n.startsWith("__"))
    if (asNode !== undefined && !nodes.includes(asNode)) {
      return yield* new InvalidInputError({
        operation: "Baton.fork",
        field: "asNode",
        reason: `names no node of workflow "${workflow.name}": its nodes are ${nodes.map((n) => `"${n}"`).join(", ")}`
      })
    }
    yield* Effect.tryPromise({
      try: () => tryUpdate(scratch, tuple, writes, update, asNode),
      catch: (e) =>
        new InvalidInputError({
          operation: "Baton.fork",
          field: "update",
          reason: `cannot be applied at checkpoint ${tuple.checkpoint.id}: ${e instanceof Error ? e.message : String(e)}`
        })
    })
  })
