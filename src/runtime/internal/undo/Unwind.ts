/**
 * The end of an execution that did not finish: its open undos run (see
 * `Undo`), then it ends with the reason recorded first — Failed with the
 * step's error (and any undo that failed), or Cancelled. Used by the pass
 * whose step failed, and by whoever takes a tree's lease and finds it
 * unwinding (a recovery, a waiting resume): that holder runs no step.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { ExecutionFailedError } from "../../Errors.ts"
import * as Cancel from "./Cancel.ts"
import * as Undo from "./Undo.ts"

/** Fails once the holder may not write any more. */
const guardOf = (u: Undo.Unwinder) =>
  Effect.suspend(() => {
    const refused = u.holder.fence.refusal()
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/**
 * Unwinds the tree for `why` (the first reason recorded wins) and ends it:
 * answers the error its callers fail with — `ExecutionCancelledError`, or
 * `ExecutionFailedError` (the `original` one when no undo failed). Fails
 * with `LeaseLostError` / `InstanceStoppingError` when the holder had to
 * stop mid-undo: the tree stays Running for the next holder.
 *
 * @category internal
 * @since 0.1.0
 */
export const finish = Effect.fnUntraced(function*(
  u: Undo.Unwinder,
  why: Undo.Unwinding,
  options?: { readonly original?: ExecutionFailedError | undefined }
) {
  if (why.reason === "Cancelled") return yield* Cancel.endTree(u.record, u.holder.lease, guardOf(u), u)
  const outcome = yield* Undo.unwind(u, why)
  // A cancel recorded first: the tree ends as cancelled (its undos are done: the cancel's end finds none open).
  if (outcome.unwinding.reason === "Cancelled") return yield* Cancel.endTree(u.record, u.holder.lease, guardOf(u), u)
  const error = Undo.failedError(u.record, outcome, options?.original)
  // Best effort, as any end: a holder stopped here leaves the tree Running for the next one.
  yield* Undo.endFailed(u, error).pipe(
    Effect.catchCause((cause) => Effect.logWarning("ending a failed execution did not complete; the next holder ends it", cause))
  )
  return error
})
