/**
 * Where a step's undo lives: on its node function, under a property of its
 * own, so that whoever unwinds the tree finds it from the graph alone.
 */
import type { Effect } from "effect"

/** The property of a node function that holds its undo. */
export const undoKey = "~baton/undo"

/** A step's undo as it is kept on the node (`Ctx` is the workflow's `UndoContext`). */
export type NodeUndo<Ctx> =
  | { readonly _tag: "Promise"; readonly run: (result: unknown, ctx: Ctx) => Promise<unknown> | unknown; readonly timeoutMillis?: number | undefined }
  | { readonly _tag: "Effect"; readonly run: (result: unknown, ctx: Ctx) => Effect.Effect<unknown, unknown, never>; readonly timeoutMillis?: number | undefined }

/** The undo a node function carries (from `Workflow.step` or `Workflow.effectStep` with `undo`), if any. */
export const undoOfNode = <Ctx>(node: unknown): NodeUndo<Ctx> | undefined => {
  const func = (node as { runnable?: { func?: unknown } } | undefined)?.runnable?.func ?? node
  return (func as Record<string, NodeUndo<Ctx> | undefined> | undefined)?.[undoKey]
}
