/**
 * The metrics an instance reports, as Effect `Metric`s (modelled on effect's
 * `ClusterMetrics`). They land in the `Metric.MetricRegistry` of the context
 * the `Baton` Layer is built in, so any exporter of `effect/observability`
 * reads them: `PrometheusMetrics.format()` / `PrometheusMetrics.layerHttp()`
 * (the `/metrics` route of `BatonHttp` serves them) or `OtlpMetrics.layer`.
 *
 * Every series carries the attribute `instance` (the instance id): several
 * instances in one process (tests, the harness) keep apart. Gauges are
 * instance-local: aggregate across instances with `sum`. The gauges of
 * trees, passes and steps are read when metrics are snapshotted (no work per
 * step), like `ClusterMetrics.entities`.
 *
 * @since 0.1.0
 */
import { Metric } from "effect"

/**
 * Execution trees whose lease this instance holds now (passes with a live holder).
 *
 * @category metrics
 * @since 0.1.0
 */
export const treesHeld = Metric.gauge("baton_trees_held", {
  description: "Execution trees whose lease this instance holds now"
})

/**
 * Passes this instance moves now (holding their lease, not waiting for it).
 *
 * @category metrics
 * @since 0.1.0
 */
export const passesRunning = Metric.gauge("baton_passes_running", {
  description: "Passes this instance is moving now (lease held)"
})

/**
 * Passes waiting for a tree's lease held elsewhere (a `resume` behind another holder).
 *
 * @category metrics
 * @since 0.1.0
 */
export const passesWaiting = Metric.gauge("baton_passes_waiting", {
  description: "Passes waiting for a tree lease another holder keeps"
})

/**
 * Step bodies running now: started and not settled (a body waiting on the
 * Clock counts), those waiting for a step slot excluded.
 *
 * @category metrics
 * @since 0.1.0
 */
export const stepsRunning = Metric.gauge("baton_steps_running", {
  description: "Step bodies running now"
})

/**
 * Steps waiting for a step slot now (only with `maxConcurrentSteps`).
 *
 * @category metrics
 * @since 0.1.0
 */
export const stepsWaitingForSlot = Metric.gauge("baton_steps_waiting_for_slot", {
  description: "Steps waiting for a step slot (maxConcurrentSteps)"
})

/**
 * Tree leases this instance took (a new root's lease, a resume, a recovery).
 *
 * @category metrics
 * @since 0.1.0
 */
export const leaseAcquisitions = Metric.counter("baton_lease_acquisitions_total", {
  description: "Tree leases taken by this instance",
  incremental: true
})

/**
 * Renewals of a held lease the store confirmed.
 *
 * @category metrics
 * @since 0.1.0
 */
export const leaseRenewals = Metric.counter("baton_lease_renewals_total", {
  description: "Lease renewals the store confirmed",
  incremental: true
})

/**
 * Leases lost mid-pass, by `reason`: `renewal-refused`, `deadline` (no
 * confirmation before the lease ran out) or `fenced-write` (a fenced write
 * refused). A pass that ends and releases its lease is not a loss.
 *
 * @category metrics
 * @since 0.1.0
 */
export const leaseLosses = Metric.counter("baton_lease_losses_total", {
  description: "Leases lost mid-pass, by reason",
  incremental: true
})

/**
 * Fenced writes (checkpoint and record transitions) the store refused because
 * this holder no longer held the lease.
 *
 * @category metrics
 * @since 0.1.0
 */
export const fencedWritesRefused = Metric.counter("baton_fenced_writes_refused_total", {
  description: "Fenced writes refused by the store (a stale holder)",
  incremental: true
})

/**
 * Recoveries the sweep started, by `reason`: `Recovered` (a Running tree
 * whose holder is gone) or `Answered` (a stranded decision of a Paused tree).
 *
 * @category metrics
 * @since 0.1.0
 */
export const recoveriesStarted = Metric.counter("baton_recoveries_started_total", {
  description: "Recoveries started by the sweep, by reason",
  incremental: true
})

/**
 * How long one look of the recovery sweep took, in milliseconds of the Clock.
 *
 * @category metrics
 * @since 0.1.0
 */
export const sweepDuration = Metric.timer("baton_sweep_duration", {
  description: "Duration of one recovery sweep look"
})

/**
 * Records and pause roots the recovery sweep looked at.
 *
 * @category metrics
 * @since 0.1.0
 */
export const sweepRows = Metric.counter("baton_sweep_rows_total", {
  description: "Rows the recovery sweep looked at",
  incremental: true
})

/**
 * Pauses this instance saved minus those it took or withdrew: summed over
 * the fleet, the pauses waiting for a decision or for their tree to take it.
 *
 * @category metrics
 * @since 0.1.0
 */
export const pausesPending = Metric.gauge("baton_pauses_pending", {
  description: "Pauses saved minus pauses taken or withdrawn (sum over instances)"
})

/**
 * Executions that ended on this instance, by `workflow` and `status`
 * (`Finished`, `Failed`, `Cancelled`).
 *
 * @category metrics
 * @since 0.1.0
 */
export const executionsEnded = Metric.counter("baton_executions_ended_total", {
  description: "Executions ended, by workflow and status",
  incremental: true
})

/**
 * Latency of a checkpoint write (`put` / `putWrites` of the saver, fence
 * check included), in milliseconds.
 *
 * @category metrics
 * @since 0.1.0
 */
export const checkpointWriteDuration = Metric.timer("baton_checkpoint_write_duration", {
  description: "Latency of one checkpoint write (put or putWrites)",
  boundaries: Metric.exponentialBoundaries({ start: 0.125, factor: 2, count: 20 })
})

/**
 * Rows checkpoint retention deleted, by `kind` (`checkpoint`, `write`,
 * `blob`): counted on the instance that led the retention round.
 *
 * @category metrics
 * @since 0.1.0
 */
export const checkpointRowsPruned = Metric.counter("baton_checkpoint_rows_pruned_total", {
  description: "Checkpoint, pending-write and blob rows deleted by checkpoint retention, by kind",
  incremental: true
})

/**
 * Every metric of this module, with its type and labels: what the README's table lists.
 *
 * @category metrics
 * @since 0.1.0
 */
export const all = [
  { metric: treesHeld, type: "gauge", labels: ["instance"] },
  { metric: passesRunning, type: "gauge", labels: ["instance"] },
  { metric: passesWaiting, type: "gauge", labels: ["instance"] },
  { metric: stepsRunning, type: "gauge", labels: ["instance"] },
  { metric: stepsWaitingForSlot, type: "gauge", labels: ["instance"] },
  { metric: leaseAcquisitions, type: "counter", labels: ["instance"] },
  { metric: leaseRenewals, type: "counter", labels: ["instance"] },
  { metric: leaseLosses, type: "counter", labels: ["instance", "reason"] },
  { metric: fencedWritesRefused, type: "counter", labels: ["instance"] },
  { metric: recoveriesStarted, type: "counter", labels: ["instance", "reason"] },
  { metric: sweepDuration, type: "histogram", labels: ["instance", "time_unit"] },
  { metric: sweepRows, type: "counter", labels: ["instance"] },
  { metric: pausesPending, type: "gauge", labels: ["instance"] },
  { metric: executionsEnded, type: "counter", labels: ["instance", "workflow", "status"] },
  { metric: checkpointWriteDuration, type: "histogram", labels: ["instance", "time_unit"] },
  { metric: checkpointRowsPruned, type: "counter", labels: ["instance", "kind"] }
] as const
