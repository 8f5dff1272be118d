/**
 * Debounced starts across instances on the TestClock: a burst of starts
 * with one `debounce` key, each inside the window, becomes exactly one
 * execution that runs with the last input once the window passed after the
 * last start; every caller gets that execution (`start` its handle,
 * `execute` its output); it rests Paused with no pause and no lease until
 * then; the instance that opened the window may die and another fires it;
 * a start after the firing opens a new window; a cancelled window's key
 * starts afresh; keys of different tenants never share a window; bad
 * options are typed errors naming the field.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import { DebounceStore } from "../../../src/stores/DebounceStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import { Harness } from "../../../src/testing/index.ts"
import { backends } from "../fixtures.ts"
import { job, makeLog, statuses } from "./fixtures.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) ? (exit.cause.reasons[0] as { error?: { _tag?: string; field?: string } })?.error : undefined

const recordsOf = (tenantId: string) => Effect.map(RecordStore.use((r) => r.list({ tenantId, limit: 100 })), (page) => page.records)

for (const backend of backends) {
  describe(`debounce on ${backend.name}`, () => {
    it.effect("a burst of 3 starts on 3 instances inside the window is one execution, run once with the last input after the window closes", () =>
      Effect.gen(function*() {
        const log = makeLog()
        const wf = job(log, "1 second")
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
        const debounce = { key: "sync-acct-7", window: "5 seconds" as const }
        const first = yield* h.baton(0).start(wf, { n: 1 }, { debounce })
        yield* h.advance("2 seconds")
        const executed = yield* h.run(1, (b) => b.execute(wf, { n: 2 }, { debounce }))
        yield* h.settle
        yield* h.advance("2 seconds")
        const third = yield* h.baton(2).start(wf, { n: 3 }, { debounce })
        assert.strictEqual(third.executionId, first.executionId, "every start of the burst answers one execution")
        assert.strictEqual(third.threadId, first.threadId)
        const resting = yield* h.baton(1).status(first.executionId)
        assert.deepStrictEqual([resting.status, resting.holder], ["Paused", null], "it rests: no lease")
        const startedAt = (yield* RecordStore.use((r) => r.getRecord("default", first.executionId))).pipe((r) => r._tag === "Some" ? r.value.createdAt : -1)
        assert.deepStrictEqual(resting.keyedWait, { _tag: "Debounce", key: "sync-acct-7", firesAt: startedAt + 9_000 }, "5 s after the last start, at 4 s")
        assert.deepStrictEqual(yield* h.baton(0).pendingPauses({ threadId: first.threadId }), [], "and no pause to answer")
        yield* h.advance("4 seconds")
        assert.deepStrictEqual(log.began, [], "not before the window after the last start passed (4 s of 5)")
        yield* h.advance("1 second")
        yield* h.advance("1 second")
        assert.deepStrictEqual(log.began, [3], "once, with the last input")
        const out = yield* Fiber.join(executed)
        assert.deepStrictEqual(out._tag === "Finished" && out.output.done, 3, "execute of a debounced start answers the burst's output")
        const done = yield* h.baton(0).await(first)
        assert.deepStrictEqual(done._tag === "Finished" && done.output.done, 3)
        assert.strictEqual((yield* recordsOf("default")).length, 1, "one execution recorded")
        assert.isTrue((yield* DebounceStore.use((s) => s.due(Number.MAX_SAFE_INTEGER, 100))).length === 0, "the window is gone")
        const later = yield* h.baton(1).start(wf, { n: 4 }, { debounce })
        assert.notStrictEqual(later.executionId, first.executionId, "a start after the firing opens a new window")
        yield* h.advance("5 seconds")
        yield* h.advance("1 second")
        assert.deepStrictEqual(log.began, [3, 4])
      }).pipe(Effect.scoped, Effect.provide(backend.stores)))

    it.effect("maxWait: a steady stream of starts on 2 instances, each inside the window, still runs once maxWait passed since the first", () =>
      Effect.gen(function*() {
        const log = makeLog()
        const wf = job(log, "1 second")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const debounce = { key: "stream", window: "5 seconds" as const, maxWait: "12 seconds" as const }
        const first = yield* h.baton(0).start(wf, { n: 0 }, { debounce })
        // A start every 3 s: without maxWait the window would never close.
        for (let n = 1; n <= 3; n++) {
          yield* h.advance("3 seconds")
          const again = yield* h.baton(n % 2).start(wf, { n }, { debounce })
          assert.strictEqual(again.executionId, first.executionId, `start ${n} joins the burst`)
        }
        yield* h.advance("2 seconds")
        assert.deepStrictEqual(log.began, [], "11 s after the first start: not yet")
        yield* h.advance("1 second")
        yield* h.advance("1 second")
        assert.deepStrictEqual(log.began, [3], "12 s after the first, with the last input, though the last start was 3 s ago")
        const done = yield* h.baton(1).await(first)
        assert.deepStrictEqual(done._tag === "Finished" && done.output.done, 3)
        const next = yield* h.baton(0).start(wf, { n: 4 }, { debounce })
        assert.notStrictEqual(next.executionId, first.executionId, "the next start opens a new burst")
      }).pipe(Effect.scoped, Effect.provide(backend.stores)))

    it.effect("deleting the thread of a debounced execution before it fired leaves nothing to fire: no run, no window, the key starts afresh", () =>
      Effect.gen(function*() {
        const log = makeLog()
        const wf = job(log, "1 second")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const debounce = { key: "gone", window: "5 seconds" as const }
        const first = yield* h.baton(0).start(wf, { n: 1 }, { debounce })
        yield* h.advance("1 second")
        yield* h.baton(1).deleteThread(first.threadId)
        assert.isTrue(Option.isNone(yield* DebounceStore.use((s) => s.get("default", first.executionId))), "the window went with the thread")
        yield* h.advance("5 seconds")
        yield* h.advance("1 second")
        assert.deepStrictEqual(log.began, [], "nothing ran on the deleted thread")
        assert.deepStrictEqual(yield* recordsOf("default"), [], "and nothing was recorded again")
        const next = yield* h.baton(0).start(wf, { n: 2 }, { debounce })
        assert.notStrictEqual(next.executionId, first.executionId, "the next start opens a new window")
        yield* h.advance("5 seconds")
        yield* h.advance("1 second")
        assert.deepStrictEqual(log.began, [2])
      }).pipe(Effect.scoped, Effect.provide(backend.stores)))

    it.effect("the instance that opened the window dies: another instance fires it on time", () =>
      Effect.gen(function*() {
        const log = makeLog()
        const wf = job(log, "1 second")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const debounce = { key: "k", window: "10 seconds" as const }
        const first = yield* h.baton(0).start(wf, { n: 1 }, { debounce })
        yield* h.advance("3 seconds")
        yield* h.baton(1).start(wf, { n: 2 }, { debounce })
        yield* h.kill(0)
        yield* h.advance("9 seconds")
        assert.deepStrictEqual(log.began, [], "the window runs 10 s after the last start (at 13 s), not at 12 s")
        yield* h.advance("1 second")
        assert.deepStrictEqual(log.began, [2], "at 13 s, on the instance alive, with the last input")
        yield* h.advance("1 second")
        const done = yield* h.baton(1).await(first)
        assert.deepStrictEqual(done._tag === "Finished" && done.output.done, 2)
        assert.strictEqual((yield* h.baton(1).status(first.executionId)).status, "Finished")
      }).pipe(Effect.scoped, Effect.provide(backend.stores)))

    it.effect("a debounced execution cancelled before it fired ends Cancelled and its key starts afresh; another tenant's key is its own", () =>
      Effect.gen(function*() {
        const log = makeLog()
        const wf = job(log, "1 second")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [wf] } })
        const debounce = { key: "k", window: "5 seconds" as const }
        const first = yield* h.baton(0).start(wf, { n: 1 }, { debounce })
        const other = yield* h.baton(1).start(wf, { n: 9 }, { debounce, tenantId: "t-other" })
        assert.notStrictEqual(other.executionId, first.executionId)
        yield* h.baton(1).cancel(first.threadId)
        yield* h.settle
        assert.deepStrictEqual(yield* statuses("default", [first.executionId]), ["Cancelled"])
        const next = yield* h.baton(1).start(wf, { n: 2 }, { debounce })
        assert.notStrictEqual(next.executionId, first.executionId)
        yield* h.advance("5 seconds")
        yield* h.advance("1 second")
        assert.deepStrictEqual([...log.began].sort(), [2, 9])
        assert.strictEqual(failureOf(yield* Effect.exit(h.baton(0).await(first)))?._tag, "ExecutionCancelledError")
      }).pipe(Effect.scoped, Effect.provide(backend.stores)))

    it.effect("bad options are InvalidInputError naming the field, with nothing written", () =>
      Effect.gen(function*() {
        const log = makeLog()
        const wf = job(log)
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [wf] } })
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ key: "k", window: 0 }, "debounce.window"],
          [{ key: "k", window: -5 }, "debounce.window"],
          [{ key: "k", window: "soon" }, "debounce.window"],
          [{ key: "", window: "1 second" }, "debounce.key"],
          [{ key: "k", window: "10 seconds", maxWait: "5 seconds" }, "debounce.maxWait"],
          [{ key: "k", window: "10 seconds", maxWait: "later" }, "debounce.maxWait"],
          [{ key: "k", window: "10 seconds", maxWait: "31 days" }, "debounce.maxWait"],
          [{ key: "k", window: "10 seconds", maxwait: "1 minute" }, "debounce.maxwait"],
          [7, "debounce"]
        ]
        for (const [debounce, field] of cases) {
          const exit = yield* Effect.exit(h.baton(0).start(wf, { n: 1 }, { debounce: debounce as never }))
          assert.deepStrictEqual([failureOf(exit)?._tag, failureOf(exit)?.field], ["InvalidInputError", field], JSON.stringify(debounce))
        }
        const withKey = yield* Effect.exit(h.baton(0).start(wf, { n: 1 }, { debounce: { key: "k", window: 10 }, requestKey: "r" }))
        assert.deepStrictEqual([failureOf(withKey)?._tag, failureOf(withKey)?.field], ["InvalidInputError", "debounce"])
        const withConcurrency = yield* Effect.exit(h.baton(0).start(wf, { n: 1 }, { debounce: { key: "k", window: 10 }, concurrencyKey: { key: "k", limit: 1 } }))
        assert.deepStrictEqual([failureOf(withConcurrency)?._tag, failureOf(withConcurrency)?.field], ["InvalidInputError", "debounce"])
        assert.deepStrictEqual(yield* recordsOf("default"), [], "nothing recorded")
        assert.deepStrictEqual(yield* DebounceStore.use((s) => s.due(Number.MAX_SAFE_INTEGER, 10)), [], "no window opened")
      }).pipe(Effect.scoped, Effect.provide(backend.stores)))
  })
}
