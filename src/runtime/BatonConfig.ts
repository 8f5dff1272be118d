/**
 * The runtime's configuration, checked when the `Baton` Layer is built.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { BatonConfigError } from "../stores/Errors.ts"
import type { InstanceId } from "../stores/Ids.ts"
import type { AnyWorkflow } from "./Workflow.ts"

export interface BatonOptions {
  /** The workflows this instance can run, resume and recover (by name). */
  readonly workflows: ReadonlyArray<AnyWorkflow>
  /** This instance's id; generated when absent. */
  readonly instanceId?: InstanceId | undefined
  /** Lease length of a tree this instance moves. Default 30 seconds. */
  readonly lease?: Duration.Input | undefined
  /** How often the holder renews. Default a third of the lease. */
  readonly renewEvery?: Duration.Input | undefined
  /** How often a call waiting for a held lease looks again (a release in this process wakes it at once). Default 1 second. */
  readonly waitPoll?: Duration.Input | undefined
  /** How often the recovery sweep looks for orphaned trees. Default 30 seconds. */
  readonly sweepInterval?: Duration.Input | undefined
  /** How long answered or withdrawn pauses are kept. Default 24 hours. */
  readonly pauseRetention?: Duration.Input | undefined
  /** Records read per page by the sweep. Default 100. */
  readonly sweepPageSize?: number | undefined
  /**
   * How many steps (node visits, across trees and tenants) this instance
   * runs at once: a whole number ≥ 1. A step without a free slot waits its
   * turn (see `StepSlots`). Unset: no cap.
   */
  readonly maxConcurrentSteps?: number | undefined
}

/** The checked configuration, in milliseconds. */
export interface BatonConfig {
  readonly workflows: ReadonlyMap<string, AnyWorkflow>
  readonly instanceId: InstanceId | undefined
  readonly leaseMillis: number
  readonly renewMillis: number
  readonly waitPollMillis: number
  readonly sweepMillis: number
  readonly pauseRetentionMillis: number
  readonly sweepPageSize: number
  /** The cap on steps running at once; `undefined`: no cap. */
  readonly maxConcurrentSteps: number | undefined
}

const millis = (field: string, input: Duration.Input | undefined, fallback: number) =>
  Effect.suspend(() => {
    if (input === undefined) return Effect.succeed(fallback)
    const d = Duration.fromInput(input)
    if (d._tag === "None") {
      return Effect.fail(new BatonConfigError({ field, reason: `is not a duration (got ${JSON.stringify(input)})` }))
    }
    const ms = Duration.toMillis(d.value)
    return Number.isFinite(ms) && ms > 0
      ? Effect.succeed(ms)
      : Effect.fail(new BatonConfigError({ field, reason: `must be a finite duration greater than 0 (got ${JSON.stringify(input)})` }))
  })

/** Checks options; a bad value fails with `BatonConfigError` naming the field. */
export const make = Effect.fnUntraced(function*(options: BatonOptions) {
  if (options === undefined || !Array.isArray(options.workflows)) {
    return yield* new BatonConfigError({ field: "workflows", reason: "must be an array of workflows made with Workflow.make" })
  }
  const workflows = new Map<string, AnyWorkflow>()
  for (const w of options.workflows) {
    if (typeof w?.name !== "string" || w.name.length === 0 || typeof w.version !== "string" || w.version.length === 0) {
      return yield* new BatonConfigError({ field: "workflows", reason: "holds a workflow without a name or version: make each with Workflow.make" })
    }
    if (typeof w.graph?.compile !== "function" || Object.keys(w.graph.nodes ?? {}).length === 0) {
      return yield* new BatonConfigError({ field: "workflows", reason: `workflow "${w.name}" has no StateGraph with nodes` })
    }
    if (workflows.has(w.name)) {
      return yield* new BatonConfigError({ field: "workflows", reason: `names workflow "${w.name}" twice; names must be unique` })
    }
    workflows.set(w.name, w)
    for (const child of w.children) if (!workflows.has(child.name)) workflows.set(child.name, child)
  }
  if (options.instanceId !== undefined && (typeof options.instanceId !== "string" || options.instanceId.length === 0)) {
    return yield* new BatonConfigError({ field: "instanceId", reason: "must be a non-empty string when given" })
  }
  const leaseMillis = yield* millis("lease", options.lease, 30_000)
  const renewMillis = yield* millis("renewEvery", options.renewEvery, leaseMillis / 3)
  if (renewMillis >= leaseMillis) {
    return yield* new BatonConfigError({ field: "renewEvery", reason: `must be shorter than the lease (${leaseMillis} ms), or the lease expires between renewals` })
  }
  const waitPollMillis = yield* millis("waitPoll", options.waitPoll, 1_000)
  const sweepMillis = yield* millis("sweepInterval", options.sweepInterval, 30_000)
  const pauseRetentionMillis = yield* millis("pauseRetention", options.pauseRetention, 24 * 60 * 60 * 1000)
  const sweepPageSize = options.sweepPageSize ?? 100
  if (!Number.isInteger(sweepPageSize) || sweepPageSize < 1) {
    return yield* new BatonConfigError({ field: "sweepPageSize", reason: `must be a whole number ≥ 1 (got ${sweepPageSize})` })
  }
  const maxConcurrentSteps = options.maxConcurrentSteps
  if (maxConcurrentSteps !== undefined && (!Number.isInteger(maxConcurrentSteps) || maxConcurrentSteps < 1)) {
    return yield* new BatonConfigError({
      field: "maxConcurrentSteps",
      reason: `must be a whole number ≥ 1, or unset for no cap (got ${typeof maxConcurrentSteps === "number" ? maxConcurrentSteps : JSON.stringify(maxConcurrentSteps)})`
    })
  }
  return {
    workflows,
    instanceId: options.instanceId,
    leaseMillis,
    renewMillis,
    waitPollMillis,
    sweepMillis,
    pauseRetentionMillis,
    sweepPageSize,
    maxConcurrentSteps
  } satisfies BatonConfig
})
