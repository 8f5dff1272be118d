/**
 * Metric values after scripted harness scenarios on the TestClock: exact
 * counts of lease acquisitions, renewals, losses, refused fenced writes,
 * recoveries, pauses and ended executions. Each test reads a fresh
 * MetricRegistry (provided around the harness, so every instance reports
 * into it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, backends, errorTag, makeSideEffects, slow, theRunningRoot } from "../runtime/fixtures.ts"
import { dumpMetrics, metricValue } from "./metricsHelpers.ts"

const withRegistry = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Metric.MetricRegistry, new Map())
const i0 = { instance: "instance-0" }
const i1 = { instance: "instance-1" }

/** Asserts every expected value, naming the series and showing all of them on a mismatch. */
const expectMetrics = (expected: ReadonlyArray<readonly [string, Record<string, string>, number]>) =>
  Effect.gen(function*() {
    const dump = yield* dumpMetrics
    for (const [id, attributes, value] of expected) {
      assert.strictEqual(yield* metricValue(id, attributes), value, `${id}${JSON.stringify(attributes)}\n${dump}`)
    }
  })

for (const backend of backends) {
describe(`metrics on ${backend.name}`, () => {
  it.effect("a killed holder: its tree is held, then recovered once by the other instance, which renews every 10 s", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      yield* expectMetrics([
        ["baton_trees_held", i0, 1],
        ["baton_passes_running", i0, 1],
        ["baton_trees_held", i1, 0],
        ["baton_lease_acquisitions_total", i0, 1]
      ])
      yield* h.kill(0)
      yield* h.advance("31 seconds")
      yield* expectMetrics([
        ["baton_recoveries_started_total", { ...i1, reason: "Recovered" }, 1],
        ["baton_lease_acquisitions_total", i1, 1],
        ["baton_trees_held", i1, 1]
      ])
      yield* h.advance("45 seconds")
      // recovered at 31 s; renewed at 41, 51, 61, 71; finished at 76
      yield* expectMetrics([
        ["baton_lease_renewals_total", i1, 4],
        ["baton_lease_renewals_total", i0, 0],
        ["baton_lease_losses_total", {}, 0],
        ["baton_fenced_writes_refused_total", {}, 0],
        ["baton_recoveries_started_total", {}, 1],
        ["baton_executions_ended_total", { ...i1, workflow: "slow", status: "Finished" }, 1],
        ["baton_trees_held", i1, 0],
        ["baton_passes_running", i1, 0]
      ])
      assert.isAbove(yield* metricValue("baton_sweep_duration", i1), 0, "the sweeps were timed")
      assert.isAbove(yield* metricValue("baton_checkpoint_write_duration", i1), 0, "the checkpoint writes were timed")
      // A killed instance's gauges go with it.
      const gauges = (yield* Metric.snapshot).filter((s) => s.id === "baton_trees_held").map((s) => s.attributes?.instance)
      assert.deepStrictEqual(gauges, ["instance-1"])
    }).pipe(Effect.provide(Layer.fresh(backend.stores)), withRegistry))

  it.effect("a frozen holder: its renewal is refused once it thaws (one loss), the other instance recovers the tree", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "45 seconds")
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const fiber = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      yield* h.freeze(0)
      yield* h.advance("31 seconds")
      yield* h.thaw(0)
      yield* h.settle
      assert.strictEqual(errorTag(yield* Fiber.await(fiber)), "LeaseLostError")
      yield* h.advance("45 seconds")
      yield* expectMetrics([
        ["baton_lease_acquisitions_total", i0, 1],
        ["baton_lease_acquisitions_total", i1, 1],
        ["baton_lease_losses_total", { ...i0, reason: "renewal-refused" }, 1],
        ["baton_lease_losses_total", {}, 1],
        ["baton_fenced_writes_refused_total", {}, 0],
        ["baton_recoveries_started_total", { ...i1, reason: "Recovered" }, 1],
        ["baton_executions_ended_total", { ...i1, status: "Finished" }, 1],
        ["baton_executions_ended_total", i0, 0]
      ])
    }).pipe(Effect.provide(Layer.fresh(backend.stores)), withRegistry))

  it.effect("a lease taken from under a holder: its next checkpoint write is refused by the store (one refused write, one loss)", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = slow(fx, "5 seconds")
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const fiber = yield* h.run(0, (b) => b.execute(wf, { log: [] }))
      yield* h.settle
      const root = yield* theRunningRoot
      // Another holder takes the lease as if it had expired (the store takes time as a parameter).
      const leases = yield* LeaseStore
      const stolen = yield* leases.acquire(root.tenantId, root.executionId, "intruder#1", 30_000, 31_000)
      assert.strictEqual(stolen._tag, "Some")
      yield* h.advance("5 seconds")
      assert.strictEqual(errorTag(yield* Fiber.await(fiber)), "LeaseLostError")
      yield* expectMetrics([
        ["baton_fenced_writes_refused_total", i0, 1],
        ["baton_lease_losses_total", { ...i0, reason: "fenced-write" }, 1],
        ["baton_lease_losses_total", {}, 1],
        ["baton_lease_renewals_total", i0, 0],
        ["baton_executions_ended_total", {}, 0]
      ])
    }).pipe(Effect.provide(Layer.fresh(backend.stores)), withRegistry))

  it.effect("pauses pending, answered on another instance, and ended executions by workflow and status", () =>
    Effect.gen(function*() {
      const fx = makeSideEffects()
      const wf = approval(fx)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const outs = []
      for (const thread of ["t1", "t2", "t3"]) outs.push(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: thread })))
      yield* h.settle
      const paused: Array<{ readonly threadId: string; readonly pauses: ReadonlyArray<{ readonly pauseId: string }> }> = []
      for (const f of outs) {
        const out = yield* Fiber.join(f)
        assert.strictEqual(out._tag, "Paused")
        if (out._tag === "Paused") paused.push(out)
      }
      yield* expectMetrics([["baton_pauses_pending", i0, 3], ["baton_pauses_pending", {}, 3]])
      const resumed = yield* h.run(1, (b) => b.resume({ pauseId: paused[0]!.pauses[0]!.pauseId, decision: "yes" }))
      yield* h.settle
      assert.strictEqual((yield* Fiber.join(resumed))._tag, "Finished")
      const cancelled = yield* h.run(1, (b) => b.cancel(paused[1]!.threadId))
      yield* h.settle
      assert.isTrue((yield* Fiber.join(cancelled)).cancelled)
      yield* expectMetrics([
        ["baton_pauses_pending", {}, 1],
        ["baton_executions_ended_total", { ...i1, workflow: "approval", status: "Finished" }, 1],
        ["baton_executions_ended_total", { ...i1, workflow: "approval", status: "Cancelled" }, 1],
        ["baton_executions_ended_total", { status: "Failed" }, 0],
        ["baton_lease_acquisitions_total", i0, 3],
        ["baton_lease_acquisitions_total", i1, 2]
      ])
      const text = yield* PrometheusMetrics.format()
      assert.include(text, `baton_executions_ended_total{instance="instance-1",workflow="approval",status="Finished"} 1`)
      assert.include(text, "# TYPE baton_trees_held gauge")
    }).pipe(Effect.provide(Layer.fresh(backend.stores)), withRegistry))
})
}
