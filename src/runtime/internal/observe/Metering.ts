/**
 * How the runtime updates the metrics of `Metrics`: every series tagged with
 * its instance; the gauges of trees, passes and steps registered once per
 * instance and read from its state when metrics are snapshotted.
 *
 * @since 0.1.0
 */
import { type Clock, type Context, Duration, Effect, Metric } from "effect"
import * as Metrics from "../../Metrics.ts"
import type { InstanceShape } from "../Instance.ts"
import * as StepSlots from "../limits/StepSlots.ts"

type Attributes = Readonly<Record<string, string>>

/**
 * Adds `by` to `metric` (a counter, or a gauge moved up or down) for `instanceId`, synchronously, in the registry of `context`.
 *
 * @category internal
 * @since 0.1.0
 */
export const addUnsafe = (
  context: Context.Context<never>,
  metric: Metric.Metric<number, unknown>,
  instanceId: string,
  attributes?: Attributes,
  by = 1
): void => Metric.withAttributes(metric, { instance: instanceId, ...attributes }).modifyUnsafe(by, context)

/**
 * Adds `by` to `metric` for `instanceId` in the current registry.
 *
 * @category internal
 * @since 0.1.0
 */
export const add = (metric: Metric.Metric<number, unknown>, instanceId: string, attributes?: Attributes, by = 1) =>
  Effect.contextWith((context: Context.Context<never>) => Effect.sync(() => addUnsafe(context, metric, instanceId, attributes, by)))

/**
 * Records a duration of `millis` in a timer for `instanceId`, synchronously.
 *
 * @category internal
 * @since 0.1.0
 */
export const timeUnsafe = (context: Context.Context<never>, metric: Metric.Metric<Duration.Duration, unknown>, instanceId: string, millis: number): void =>
  Metric.withAttributes(metric, { instance: instanceId }).updateUnsafe(Duration.millis(millis), context)

/**
 * The timer a pass hands its checkpoint saver: each write's latency (on `clock`) lands in `Metrics.checkpointWriteDuration`.
 *
 * @category internal
 * @since 0.1.0
 */
export const writeTimer = (context: Context.Context<never>, clock: Clock.Clock, instanceId: string) => {
  // The instance's timer made once per pass, not at every write (a hot path: one or two writes per step).
  const timer = Metric.withAttributes(Metrics.checkpointWriteDuration, { instance: instanceId })
  return () => {
    const started = clock.currentTimeNanosUnsafe()
    return () => timer.updateUnsafe(Duration.millis(Number(clock.currentTimeNanosUnsafe() - started) / 1e6), context)
  }
}

/** One reading of the instance's passes and steps. */
const reading = (instance: InstanceShape) => {
  let held = 0
  let running = 0
  let waiting = 0
  let steps = 0
  for (const pass of instance.passes.active) {
    if (pass.phase === "waiting") waiting++
    else running++
    const signal = pass.signal()
    if (signal !== undefined && !signal.aborted) held++
    steps += pass.bodies.size
  }
  return { held, running, waiting, steps }
}

/**
 * Registers the instance's gauges (read from its state at every snapshot);
 * they go when the current scope closes.
 *
 * @category internal
 * @since 0.1.0
 */
export const registerGauges = (instance: InstanceShape, slots: StepSlots.StepSlotsShape | undefined) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const gauge = (metric: Metric.Gauge<number>, get: () => number) =>
      Metric.registerUnsafe(Metric.withAttributes(metric, { instance: instance.instanceId }), context, {
        get: () => ({ value: get() }),
        update: () => {},
        modify: () => {}
      })
    const registrations = [
      gauge(Metrics.treesHeld, () => reading(instance).held),
      gauge(Metrics.passesRunning, () => reading(instance).running),
      gauge(Metrics.passesWaiting, () => reading(instance).waiting),
      gauge(Metrics.stepsRunning, () => Math.max(0, reading(instance).steps - (slots?.waiting ?? 0))),
      gauge(Metrics.stepsWaitingForSlot, () => slots?.waiting ?? 0)
    ]
    yield* Effect.addFinalizer(() => Effect.sync(() => registrations.forEach((r) => r.remove())))
  })
