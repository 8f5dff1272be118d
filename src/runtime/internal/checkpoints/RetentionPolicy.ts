/**
 * The checkpoint retention policy: keep the last N checkpoints of each
 * namespace of a thread, and/or those younger than T — set for every
 * thread (`BatonConfig` `checkpointKeepLast` / `checkpointKeepFor`) or for
 * the threads of one workflow (the same options of `Workflow.make`, which
 * win over the global ones). Unset: checkpoints are kept for ever.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { PruneRule } from "../../../stores/CheckpointRows.ts"
import { BatonConfigError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"

/**
 * A checked policy: at least one of the two is set.
 *
 * @category models
 * @since 0.1.0
 */
export interface Policy {
  readonly keepLast?: number | undefined
  readonly keepForMillis?: number | undefined
}

/**
 * The check of `checkpointKeepLast`: a whole number from 1 (the newest checkpoint is always kept) to 1,000,000.
 *
 * @category internal
 * @since 0.1.0
 */
export const keepLastCheck = Options.whole({ min: 1, max: 1_000_000, why: "the newest checkpoint of a namespace is always kept", unset: "unset to keep them all" })

/**
 * The check of `checkpointKeepFor`: a duration from 1 second to 2^53 − 1 ms.
 *
 * @category internal
 * @since 0.1.0
 */
export const keepForCheck = Options.duration({ min: 1_000, max: Number.MAX_SAFE_INTEGER, example: "7 days" })

/**
 * The policy of two option values (`undefined` when neither is set); a bad one fails naming `prefix + field`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(keepLast: unknown, keepFor: unknown, prefix = "") {
  const last = yield* Options.setting(`${prefix}checkpointKeepLast`, keepLast, keepLastCheck, undefined)
  const forMillis = yield* Options.setting(`${prefix}checkpointKeepFor`, keepFor, keepForCheck, undefined)
  if (last === undefined && forMillis === undefined) return undefined
  return { keepLast: last, keepForMillis: forMillis } satisfies Policy as Policy
})

/**
 * Checks the retention options of each workflow (at `Baton.layer` build): a bad one fails on field `workflows`, naming the workflow.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validateWorkflows = (workflows: ReadonlyMap<string, { readonly checkpointKeepLast?: unknown; readonly checkpointKeepFor?: unknown }>) =>
  Effect.forEach(workflows, ([name, w]) =>
    make(w.checkpointKeepLast, w.checkpointKeepFor).pipe(
      Effect.mapError((e) => new BatonConfigError({ field: "workflows", reason: `workflow "${name}": ${e.field} ${e.reason}` }))
    ), { discard: true })

/**
 * What a prune at `now` may delete under `policy`.
 *
 * @category utils
 * @since 0.1.0
 */
export const ruleAt = (policy: Policy, now: number): PruneRule => ({
  keepLast: policy.keepLast,
  createdBefore: policy.keepForMillis === undefined ? undefined : now - policy.keepForMillis
})
