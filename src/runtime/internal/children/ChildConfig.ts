/**
 * The child-execution options of the runtime (`maxClaimedChildren`,
 * `maxInlineChildren`): their checks and defaults, kept apart from
 * `BatonConfig` so its own checks stay short.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { BatonConfigError } from "../../../stores/Errors.ts"
import * as Options from "../../../stores/internal/options.ts"

/**
 * The child-execution options of a configuration.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildOptions {
  /**
   * How many queued children (placement `"any"`) this instance runs at once:
   * a whole number from 0 to 10 000 (`maxChildren`); 0 — it claims none (an
   * instance that only launches). Never more than its free step slots.
   * Unset: as many as its free step slots with `maxConcurrentSteps`, else
   * 16 (`defaultClaimedChildren`).
   */
  readonly maxClaimedChildren?: number | undefined
  /**
   * How many children of one launch with placement `"parent"` run at once
   * on the launching instance: a whole number from 1 to 10 000 (`maxChildren`).
   * Default 16 (`defaultInlineChildren`).
   */
  readonly maxInlineChildren?: number | undefined
  /**
   * The deepest child this instance runs (the root is depth 1, its children
   * 2): a whole number from 1 to 10 000. Checked where the child runs — by
   * the claimer of a queued child, by the launching instance for an inline
   * one — before it is recorded: a deeper child is refused
   * (`ChildDepthExceededError`, its launching step failing with
   * `ChildExecutionsFailedError`). Unset: no limit.
   *
   * @since 0.1.0
   */
  readonly maxChildDepth?: number | undefined
}

/**
 * Claimed children an instance without a step cap runs at once when `maxClaimedChildren` is unset.
 *
 * @category defaults
 * @since 0.1.0
 */
export const defaultClaimedChildren = 16

/**
 * Children of one `"parent"` launch running at once when `maxInlineChildren` is unset.
 *
 * @category defaults
 * @since 0.1.0
 */
export const defaultInlineChildren = 16

/**
 * The largest value either option takes (each running child is a pass with its own lease).
 *
 * @category defaults
 * @since 0.1.0
 */
export const maxChildren = 10_000

const whole = (field: keyof ChildOptions, value: unknown, least: number, unset: string) =>
  Options.setting(field, value, Options.whole({ min: least, max: maxChildren, unset }), undefined)

/**
 * Checks the child options; a bad one fails with `BatonConfigError` naming it.
 *
 * @category constructors
 * @since 0.1.0
 */
export const validate = (config: ChildOptions): Effect.Effect<void, BatonConfigError> =>
  Effect.andThen(
    whole("maxClaimedChildren", config.maxClaimedChildren, 0, "unset (0: this instance claims no queued children)"),
    Effect.andThen(
      whole("maxInlineChildren", config.maxInlineChildren, 1, `unset for ${defaultInlineChildren}`),
      whole("maxChildDepth", config.maxChildDepth, 1, "unset for no limit")
    )
  )

/**
 * How many children of one `"parent"` launch run at once.
 *
 * @category utils
 * @since 0.1.0
 */
export const inlineChildren = (config: ChildOptions): number => config.maxInlineChildren ?? defaultInlineChildren

/**
 * How many more queued children the instance may claim now: its free step
 * slots (or the default without a cap), within `maxClaimedChildren`, less
 * the `running` ones it holds.
 *
 * @category utils
 * @since 0.1.0
 */
export const claimBudget = (config: ChildOptions, running: number, slots: { readonly free: number; readonly capacity: number } | undefined): number => {
  const cap = config.maxClaimedChildren
  if (slots === undefined) return (cap ?? defaultClaimedChildren) - running
  return Math.min(slots.free, (cap === undefined ? slots.capacity : Math.min(cap, slots.capacity)) - running)
}
