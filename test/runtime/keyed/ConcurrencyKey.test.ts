/**
 * Keyed concurrency across instances on the TestClock: starts with one
 * `concurrencyKey` run at most `limit` at once, fleet-wide (checked at every
 * step of the clock: steps in flight, admitted entries, Running records),
 * the others wait — Paused, no lease, no pause — and start in arrival
 * order as earlier ones end, on any instance; a holder killed mid-run keeps
 * its slot while its execution is taken over, and frees it when it ends; a
 * cancelled waiter leaves the line; a waiter admitted by an instance that
 * died before moving it is moved by another instance's look; a paused execution keeps its slot;
 * keys of different tenants never share slots; bad options are typed
 * errors naming the field, with nothing written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, type Scope } from "effect"
import { backends } from "../fixtures.ts"
import { ConcurrencyKeyStore } from "../../../src/stores/ConcurrencyKeyStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { Harness } from "../../../src/testing/index.ts"
import { asking, job, makeLog, statuses } from "./fixtures.ts"

const entriesOf = (tenantId: string, key: string) => ConcurrencyKeyStore.use((s) => s.list(tenantId, key))

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) ? (exit.cause.reasons[0] as { error?: { _tag?: string; field?: string } })?.error : undefined

for (const backend of backends) {
describe(`keyed concurrency on ${backend.name}`, () => {
  it.effect("6 starts of one key with limit 2 on 3 instances: never more than 2 run (checked at every second), the rest wait and run in arrival order", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
      const handles = []
      for (let n = 1; n <= 6; n++) handles.push(yield* h.baton(n % 3).start(wf, { n }, { concurrencyKey: { key: "reports", limit: 2 } }))
      const ids = handles.map((x) => x.executionId)
      yield* h.settle
      assert.deepStrictEqual(yield* statuses("default", ids), ["Running", "Running", "Paused", "Paused", "Paused", "Paused"])
      const waiting = yield* h.baton(0).status(ids[2]!)
      assert.strictEqual(waiting.holder, null, "a waiting execution holds no lease")
      assert.deepStrictEqual(waiting.keyedWait, { _tag: "ConcurrencyKey", key: "reports", limit: 2, position: 1 }, "next in line")
      assert.deepStrictEqual((yield* h.baton(2).status(ids[5]!)).keyedWait, { _tag: "ConcurrencyKey", key: "reports", limit: 2, position: 4 })
      assert.strictEqual((yield* h.baton(2).status(ids[0]!)).keyedWait, null, "a running one waits for nothing")
      assert.deepStrictEqual(yield* h.baton(1).pendingPauses({ threadId: handles[2]!.threadId }), [], "and no pause to answer")
      for (let second = 0; second < 40; second++) {
        yield* h.advance("1 second")
        const entries = yield* entriesOf("default", "reports")
        const running = (yield* statuses("default", ids)).filter((s) => s === "Running").length
        assert.isAtMost(entries.filter((e) => e.admitted).length, 2, `admitted at ${second + 1} s`)
        assert.isAtMost(log.inStep.size, 2, `steps in flight at ${second + 1} s`)
        assert.isAtMost(running, 2, `Running records at ${second + 1} s`)
      }
      assert.strictEqual(log.max, 2, "the limit was used")
      assert.deepStrictEqual(log.began, [1, 2, 3, 4, 5, 6], "arrival order")
      for (const [i, handle] of handles.entries()) {
        const done = yield* h.baton(i % 3).await(handle)
        assert.deepStrictEqual(done._tag === "Finished" && done.output.done, i + 1)
      }
      assert.deepStrictEqual(yield* entriesOf("default", "reports"), [], "every slot freed")
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("execute of a waiting start waits for its output; the waiter runs on whichever instance freed the slot", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      yield* h.baton(0).start(wf, { n: 1 }, { concurrencyKey: { key: "k", limit: 1 } })
      const second = yield* h.run(1, (b) => b.execute(wf, { n: 2 }, { concurrencyKey: { key: "k", limit: 1 } }))
      yield* h.settle
      assert.deepStrictEqual(log.began, [1])
      yield* h.advance("10 seconds")
      yield* h.advance("10 seconds")
      const out = yield* Fiber.join(second)
      assert.deepStrictEqual(out._tag === "Finished" && out.output.done, 2)
      assert.deepStrictEqual(log.began, [1, 2])
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("a holder killed mid-run: its execution keeps the slot while it is taken over, finishes elsewhere, and the next waiter is admitted", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log, "20 seconds")
      const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
      const first = yield* h.baton(0).start(wf, { n: 1 }, { concurrencyKey: { key: "k", limit: 1 } })
      const second = yield* h.baton(1).start(wf, { n: 2 }, { concurrencyKey: { key: "k", limit: 1 } })
      const third = yield* h.baton(2).start(wf, { n: 3 }, { concurrencyKey: { key: "k", limit: 1 } })
      yield* h.settle
      yield* h.kill(0)
      for (let second = 0; second < 35; second++) {
        yield* h.advance("1 second")
        assert.isAtMost((yield* entriesOf("default", "k")).filter((e) => e.admitted).length, 1)
        // The killed instance's step and its taker's run the same execution (one `n`).
        assert.isAtMost(log.inStep.size, 1, `one execution of the key in its step at ${second + 1} s`)
      }
      const firstStatus = yield* h.baton(1).status(first.executionId)
      assert.strictEqual(firstStatus.status, "Running", "taken over, still running its step")
      assert.notStrictEqual(firstStatus.holder?.instanceId, "instance-0")
      assert.deepStrictEqual(yield* statuses("default", [second.executionId, third.executionId]), ["Paused", "Paused"], "the slot stays with the running execution")
      yield* h.advance("20 seconds")
      assert.deepStrictEqual(yield* statuses("default", [first.executionId, second.executionId]), ["Finished", "Running"])
      yield* h.advance("20 seconds")
      yield* h.advance("20 seconds")
      assert.deepStrictEqual(yield* statuses("default", [second.executionId, third.executionId]), ["Finished", "Finished"])
      assert.deepStrictEqual(log.began, [1, 1, 2, 3], "the killed run again once, then in arrival order")
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("a start whose instance dies after recording the root and before placing its entry is placed and run by another instance", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      let stop: Effect.Effect<void> = Effect.void
      let stopped = false
      const h = yield* Harness.make({
        instances: 2,
        baton: { workflows: [wf] },
        beforeStoreCall: (call) =>
          Effect.suspend(() => {
            if (stopped || call.index !== 0 || call.operation !== "baton/ConcurrencyKeyStore.enqueue") return Effect.void
            stopped = true
            return stop
          })
      })
      stop = Effect.orDie(h.kill(0))
      // The handle is answered once the root is recorded: the instance dies right after, before placing its entry.
      const handle = yield* h.baton(0).start(wf, { n: 1 }, { concurrencyKey: { key: "k", limit: 1 } })
      yield* h.settle
      assert.isTrue(stopped)
      const [record] = (yield* RecordStore.use((r) => r.list({ tenantId: "default", limit: 10 }))).records
      assert.strictEqual(record?.executionId, handle.executionId)
      assert.strictEqual(record?.status, "Running", "recorded, its entry not placed")
      assert.deepStrictEqual(yield* entriesOf("default", "k"), [])
      yield* h.advance("31 seconds")
      assert.deepStrictEqual(log.began, [1], "recovered through the gate: placed, admitted, run")
      assert.strictEqual((yield* entriesOf("default", "k")).length, 1)
      yield* h.advance("10 seconds")
      assert.deepStrictEqual(yield* statuses("default", [record!.executionId]), ["Finished"])
      assert.deepStrictEqual(yield* entriesOf("default", "k"), [])
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("an instance built without a ConcurrencyKeyStore leaves a keyed tree to the instances that have one, instead of failing it", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      let stopped = false
      let stop: Effect.Effect<void> = Effect.void
      const h = yield* Harness.make({
        instances: 1,
        baton: { workflows: [wf] },
        beforeStoreCall: (call) =>
          Effect.suspend(() => {
            if (stopped || call.operation !== "baton/ConcurrencyKeyStore.enqueue") return Effect.void
            stopped = true
            return stop
          })
      })
      stop = Effect.orDie(h.kill(0))
      const handle = yield* h.baton(0).start(wf, { n: 1 }, { concurrencyKey: { key: "k", limit: 1 } })
      yield* h.settle
      assert.isTrue(stopped, "killed after recording the root, before placing its entry")
      // A second fleet member over the same rows, built without the keyed store (a mixed deployment).
      const bare = yield* Harness.make({ instances: 1, baton: { workflows: [wf], maxRecoveryAttempts: 2, recoveryBackoff: "1 second" } }).pipe(
        Effect.updateContext((context: Context.Context<Harness.HarnessStores | Scope.Scope>) => Context.omit(ConcurrencyKeyStore)(context) as typeof context)
      )
      for (let i = 0; i < 12; i++) yield* bare.advance("30 seconds")
      assert.deepStrictEqual(log.began, [], "it cannot run the tree through its gate")
      assert.deepStrictEqual(yield* statuses("default", [handle.executionId]), ["Running"], "nor does it fail it: it is left for an instance that can")
      yield* h.restart(0)
      yield* h.advance("31 seconds")
      assert.deepStrictEqual(log.began, [1], "an instance with the store places, admits and runs it")
      yield* h.advance("10 seconds")
      assert.deepStrictEqual(yield* statuses("default", [handle.executionId]), ["Finished"])
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("the instance that freed a slot dies before moving the waiter it admitted: another instance's look moves it", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      let released = false
      let killed = false
      let kill: Effect.Effect<void> = Effect.void
      const h = yield* Harness.make({
        instances: 2,
        baton: { workflows: [wf] },
        beforeStoreCall: (call) =>
          Effect.suspend(() => {
            if (call.index !== 0 || killed) return Effect.void
            if (released) {
              killed = true
              return kill
            }
            if (call.operation === "baton/ConcurrencyKeyStore.release") released = true
            return Effect.void
          })
      })
      kill = Effect.orDie(h.kill(0))
      const opts = { concurrencyKey: { key: "k", limit: 1 } }
      const first = yield* h.baton(0).start(wf, { n: 1 }, opts)
      const second = yield* h.baton(1).start(wf, { n: 2 }, opts)
      yield* h.advance("10 seconds")
      assert.isTrue(killed, "instance 0 died right after freeing the slot")
      assert.deepStrictEqual(yield* statuses("default", [first.executionId, second.executionId]), ["Finished", "Paused"])
      assert.deepStrictEqual((yield* entriesOf("default", "k")).map((e) => [e.executionId, e.admitted]), [[second.executionId, true]], "admitted, not moved")
      assert.deepStrictEqual(log.began, [1])
      yield* h.advance("30 seconds")
      assert.deepStrictEqual(log.began, [1, 2], "moved by instance 1's look within a sweep interval")
      yield* h.advance("10 seconds")
      assert.deepStrictEqual(yield* statuses("default", [second.executionId]), ["Finished"])
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("a cancelled waiter leaves the line: the next one runs in its place", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const opts = { concurrencyKey: { key: "k", limit: 1 } }
      yield* h.baton(0).start(wf, { n: 1 }, opts)
      const second = yield* h.baton(0).start(wf, { n: 2 }, opts)
      const third = yield* h.baton(1).start(wf, { n: 3 }, opts)
      yield* h.settle
      yield* h.baton(1).cancel(second.threadId)
      yield* h.settle
      assert.deepStrictEqual(yield* statuses("default", [second.executionId]), ["Cancelled"])
      assert.deepStrictEqual((yield* entriesOf("default", "k")).map((e) => e.executionId).includes(second.executionId), false)
      yield* h.advance("10 seconds")
      yield* h.advance("10 seconds")
      assert.deepStrictEqual(log.began, [1, 3])
      assert.deepStrictEqual(yield* statuses("default", [third.executionId]), ["Finished"])
      const exit = yield* Effect.exit(h.baton(0).await(second))
      assert.strictEqual(failureOf(exit)?._tag, "ExecutionCancelledError")
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("a paused execution keeps its slot until it ends; answered, it finishes and the next is admitted", () =>
    Effect.gen(function*() {
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [asking] } })
      const opts = { concurrencyKey: { key: "k", limit: 1 } }
      const first = yield* h.baton(0).start(asking, { n: 1 }, opts)
      const second = yield* h.baton(1).start(asking, { n: 2 }, opts)
      yield* h.settle
      const rested = yield* h.baton(1).await(first)
      assert.strictEqual(rested._tag, "Paused")
      assert.strictEqual(rested._tag === "Paused" && rested.pauses.length, 1)
      yield* h.advance("1 minute")
      assert.deepStrictEqual(yield* h.baton(0).pendingPauses({ threadId: second.threadId }), [], "the second still waits")
      const [pause] = yield* h.baton(1).pendingPauses({ threadId: first.threadId })
      yield* h.baton(1).resume({ pauseId: pause!.pauseId, decision: "yes" })
      yield* h.settle
      const next = yield* h.baton(0).await(second)
      assert.strictEqual(next._tag === "Paused" && next.pauses.length, 1, "admitted, run, at its own pause")
      assert.deepStrictEqual((yield* h.baton(0).await(first))._tag, "Finished")
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("one key name in two tenants: two lines, each with its own slots", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
      const a = yield* h.baton(0).start(wf, { n: 1 }, { tenantId: "t-a", concurrencyKey: { key: "k", limit: 1 } })
      const b = yield* h.baton(1).start(wf, { n: 2 }, { tenantId: "t-b", concurrencyKey: { key: "k", limit: 1 } })
      yield* h.settle
      assert.deepStrictEqual([...log.inStep].sort(), [1, 2])
      assert.deepStrictEqual(yield* statuses("t-a", [a.executionId]), ["Running"])
      assert.deepStrictEqual(yield* statuses("t-b", [b.executionId]), ["Running"])
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))

  it.effect("bad options are InvalidInputError naming the field, with nothing written", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const wf = job(log)
      const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ key: "k", limit: 0 }, "concurrencyKey.limit"],
        [{ key: "k", limit: 1.5 }, "concurrencyKey.limit"],
        [{ key: "", limit: 1 }, "concurrencyKey.key"],
        [{ key: "k\u0000", limit: 1 }, "concurrencyKey.key"],
        [null, "concurrencyKey"]
      ]
      for (const [concurrencyKey, field] of cases) {
        const exit = yield* Effect.exit(h.baton(0).start(wf, { n: 1 }, { concurrencyKey: concurrencyKey as never }))
        assert.deepStrictEqual([failureOf(exit)?._tag, failureOf(exit)?.field], ["InvalidInputError", field], JSON.stringify(concurrencyKey))
      }
      const both = yield* Effect.exit(h.baton(0).start(wf, { n: 1 }, { requestKey: "r", concurrencyKey: { key: "k", limit: 1 } }))
      assert.deepStrictEqual([failureOf(both)?._tag, failureOf(both)?.field], ["InvalidInputError", "concurrencyKey"])
      assert.deepStrictEqual((yield* RecordStore.use((r) => r.list({ tenantId: "default", limit: 10 }))).records, [], "nothing recorded")
      assert.deepStrictEqual(log.began, [])
    }).pipe(Effect.scoped, Effect.provide(backend.stores)))
})
}
