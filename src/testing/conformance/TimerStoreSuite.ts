/**
 * Conformance suite for {@link TimerStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { type Taken, type Timer, TimerStore, type TimerStoreShape } from "../../stores/TimerStore.ts"
import { deleteTreesAfter, expectInvalid, type Instances, none, nonJsonValues, now, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

const claimFor = 30_000

/** The signal a consume answered, failing the test on anything else. */
const signalTaken = (taken: Taken) => {
  if (taken._tag !== "Signal") return assert.fail(`expected a signal, got ${taken._tag}`)
  return taken.signal
}

/**
 * Registers the TimerStore conformance tests (call it at the top level of a
 * vitest file). `claimDue` takes from every tree, so the database must hold
 * no due timers but the suite's own: every test deletes the trees it wrote
 * when it ends.
 *
 * @category conformance
 * @since 0.1.0
 */
export const timerStoreSuite = (options: SuiteOptions<TimerStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "TimerStore", TimerStore)

  /** A test's `timer` maker over one tree (and `tree()` for more) and its start time `t`; every tree it used is deleted when the test ends. */
  const timersOf = (stores: Instances<TimerStoreShape>) =>
    Effect.gen(function*() {
      yield* TestClock.adjust(1_000_000)
      const t = yield* now
      const track = yield* deleteTreesAfter(stores.first)
      const tree = () => {
        const made = { tenantId: ids("tenant"), rootExecutionId: ids("root"), threadId: ids("thread") }
        track(made)
        return made
      }
      const main = tree()
      const timer = (over: Partial<Timer> = {}): Timer => {
        const made: Timer = {
          ...main,
          pauseId: ids("pause"),
          kind: "Sleep",
          name: null,
          dueAt: t + 60_000,
          wakesAt: t + 60_000,
          claimedBy: null,
          createdAt: t,
          ...over
        }
        track(made)
        return made
      }
      return { timer, t, tree }
    })

  const signalOf = (root: { readonly tenantId: string; readonly rootExecutionId: string; readonly threadId: string }, name: string, payload: unknown, sentAt: number) => ({
    ...root,
    name,
    payload,
    sentAt
  })

  register((test) => {
    test("arm writes a timer once; get answers it from either instance; an unknown pause has none", function*(stores) {
      const { timer } = yield* timersOf(stores)
      const a = timer()
      assert.isTrue(yield* stores.first.arm(a))
      assert.isFalse(yield* stores.second.arm({ ...a, dueAt: 1, wakesAt: 1 }), "a second arm of the pause is refused")
      assert.deepStrictEqual(some(yield* stores.second.get(a.tenantId, a.pauseId), "get"), a)
      const w = timer({ kind: "Signal", name: "approve", dueAt: null, wakesAt: null })
      assert.isTrue(yield* stores.first.arm(w))
      assert.deepStrictEqual(some(yield* stores.second.get(w.tenantId, w.pauseId), "a wait without timeout"), w)
      none(yield* stores.first.get(a.tenantId, ids("pause")), "an unknown pause")
      assert.deepStrictEqual((yield* stores.second.listByRoot(a.tenantId, a.rootExecutionId)).map((x) => x.pauseId).sort(), [a.pauseId, w.pauseId].sort())
    })

    test("claimDue takes due timers earliest first, at most limit, and moves each past its claim; none early", function*(stores) {
      const { timer, t, tree } = yield* timersOf(stores)
      const other = tree()
      const late = timer({ dueAt: t - 100, wakesAt: t - 100 })
      const early = timer({ ...other, dueAt: t - 300, wakesAt: t - 300 })
      const mid = timer({ dueAt: t - 200, wakesAt: t - 200 })
      const future = timer({ dueAt: t + 1, wakesAt: t + 1 })
      const never = timer({ kind: "Signal", name: "go", dueAt: null, wakesAt: null })
      for (const x of [late, future, early, never, mid]) assert.isTrue(yield* stores.first.arm(x))
      assert.strictEqual(some(yield* stores.second.nextWake, "nextWake") <= t - 300, true, "the earliest wake is seen")
      const first = yield* stores.second.claimDue(t, 2, "w1", claimFor)
      assert.deepStrictEqual(first.map((x) => x.pauseId).sort(), [early.pauseId, mid.pauseId].sort(), "the two earliest")
      for (const x of first) {
        assert.strictEqual(x.claimedBy, "w1")
        assert.strictEqual(x.wakesAt, t + claimFor, "due again when the claim runs out")
      }
      assert.strictEqual(first.find((x) => x.pauseId === early.pauseId)?.dueAt, t - 300, "the due time is kept")
      const second = yield* stores.first.claimDue(t, 10, "w2", claimFor)
      assert.deepStrictEqual(second.map((x) => x.pauseId), [late.pauseId], "the claimed ones are not due; the future and signal-only ones neither")
      assert.deepStrictEqual(yield* stores.first.claimDue(t, 10, "w2", claimFor), [])
      yield* TestClock.adjust(1)
      assert.deepStrictEqual((yield* stores.first.claimDue(t + 1, 10, "w3", claimFor)).map((x) => x.pauseId), [future.pauseId], "due at its time, not before")
      const again = yield* stores.second.claimDue(t + claimFor, 10, "w4", claimFor)
      assert.deepStrictEqual(again.map((x) => x.pauseId).sort(), [early.pauseId, mid.pauseId, late.pauseId].sort(), "a claim that ran out is due again")
    })

    test(`of ${racers} racing sweepers each due timer is claimed by exactly one`, function*(stores) {
      const { timer, t } = yield* timersOf(stores)
      const due = Array.from({ length: Math.min(6, racers - 1) }, (_, i) => timer({ dueAt: t - i, wakesAt: t - i }))
      for (const x of due) assert.isTrue(yield* stores.first.arm(x))
      const answers = successes(yield* race(racers, (i) => stores.at(i).claimDue(t, 2, `racer${i}`, claimFor)))
      assert.strictEqual(answers.length, racers)
      const got = answers.flatMap((page, i) => page.map((x) => [i, x] as const))
      assert.deepStrictEqual(got.map(([, x]) => x.pauseId).sort(), due.map((x) => x.pauseId).sort(), "each timer claimed exactly once")
      for (const [i, x] of got) {
        assert.strictEqual(some(yield* stores.first.get(x.tenantId, x.pauseId), "get").claimedBy, `racer${i}`)
      }
    })

    test("release sets a claimed timer back for its claimant only; disarm deletes it", function*(stores) {
      const { timer, t } = yield* timersOf(stores)
      const a = timer({ dueAt: t - 1, wakesAt: t - 1 })
      assert.isTrue(yield* stores.first.arm(a))
      assert.strictEqual((yield* stores.first.claimDue(t, 10, "w1", claimFor)).length, 1)
      assert.isFalse(yield* stores.second.release(a.tenantId, a.pauseId, "w2", t + 5), "not its claim")
      assert.isTrue(yield* stores.second.release(a.tenantId, a.pauseId, "w1", t + 5))
      const back = some(yield* stores.first.get(a.tenantId, a.pauseId), "get")
      assert.deepStrictEqual([back.wakesAt, back.claimedBy], [t + 5, null])
      assert.isTrue(yield* stores.second.disarm(a.tenantId, a.pauseId))
      assert.isFalse(yield* stores.first.disarm(a.tenantId, a.pauseId))
      none(yield* stores.first.get(a.tenantId, a.pauseId), "disarmed")
    })

    test("send numbers signals in send order and makes the tree's waits of that name due, claimed or not", function*(stores) {
      const { timer, t, tree } = yield* timersOf(stores)
      const root = { tenantId: timer().tenantId, rootExecutionId: timer().rootExecutionId, threadId: timer().threadId }
      const waiting = timer({ kind: "Signal", name: "approve", dueAt: null, wakesAt: null })
      const claimed = timer({ kind: "Signal", name: "approve", dueAt: t - 1, wakesAt: t - 1 })
      const otherName = timer({ kind: "Signal", name: "reject", dueAt: null, wakesAt: null })
      const otherTree = timer({ ...tree(), kind: "Signal", name: "approve", dueAt: null, wakesAt: null })
      for (const x of [waiting, claimed, otherName, otherTree]) assert.isTrue(yield* stores.first.arm(x))
      assert.strictEqual((yield* stores.first.claimDue(t, 10, "w1", claimFor)).length, 1)
      const s1 = yield* stores.second.send(signalOf(root, "approve", { by: "ann" }, t))
      const s2 = yield* stores.first.send(signalOf(root, "approve", [1, "two"], t))
      assert.isTrue(s2.seq > s1.seq, "send order")
      assert.deepStrictEqual([s1.payload, s1.consumedBy, s1.name], [{ by: "ann" }, null, "approve"])
      const woken = (yield* stores.first.claimDue(t, 10, "w2", claimFor)).map((x) => x.pauseId).sort()
      assert.deepStrictEqual(woken, [waiting.pauseId, claimed.pauseId].sort(), "both waits of the name are due; not the other name or tree")
      assert.isFalse(yield* stores.first.release(claimed.tenantId, claimed.pauseId, "w1", null), "the signal cleared the first claim")
      assert.deepStrictEqual((yield* stores.second.listSignals(root.tenantId, root.rootExecutionId)).map((s) => s.seq), [s1.seq, s2.seq])
    })

    test("consume takes the earliest untaken signal of the name, once per pause, and discard deletes only untaken ones", function*(stores) {
      const { timer, t } = yield* timersOf(stores)
      const x = timer()
      const root = { tenantId: x.tenantId, rootExecutionId: x.rootExecutionId, threadId: x.threadId }
      const input = (pauseId: string, timeUp = false, name = "approve") => ({ ...root, name, pauseId, timeUp, now: t })
      assert.deepStrictEqual(yield* stores.first.consume(input("p-none")), { _tag: "Waiting" }, "no signal yet")
      const other = yield* stores.first.send(signalOf(root, "reject", 0, t))
      const a = yield* stores.first.send(signalOf(root, "approve", "a", t))
      const b = yield* stores.second.send(signalOf(root, "approve", "b", t))
      const p1 = ids("pause")
      const p2 = ids("pause")
      assert.strictEqual(signalTaken(yield* stores.second.consume(input(p1))).seq, a.seq, "the earliest of the name")
      assert.strictEqual(signalTaken(yield* stores.first.consume(input(p1, true))).seq, a.seq, "the same one again for the same pause")
      const taken = signalTaken(yield* stores.first.consume(input(p2, true)))
      assert.deepStrictEqual([taken.seq, taken.payload, taken.consumedBy], [b.seq, "b", p2], "a signal before the timeout")
      assert.deepStrictEqual(yield* stores.first.consume(input(ids("pause"))), { _tag: "Waiting" }, "every approve is taken")
      assert.isFalse(yield* stores.first.discard(root.tenantId, root.rootExecutionId, a.seq), "a taken signal stays")
      assert.isTrue(yield* stores.second.discard(root.tenantId, root.rootExecutionId, other.seq))
      assert.isTrue(yield* stores.first.discard(root.tenantId, root.rootExecutionId, other.seq), "gone already: no wait took it")
      assert.deepStrictEqual((yield* stores.first.listSignals(root.tenantId, root.rootExecutionId)).map((s) => s.consumedBy), [p1, p2])
      assert.isTrue((yield* stores.first.deleteRoot(root.tenantId, root.rootExecutionId)) >= 2)
      assert.deepStrictEqual(yield* stores.first.listSignals(root.tenantId, root.rootExecutionId), [])
    })

    test("a wait whose time is up is sealed timed out: a signal sent after goes to the next wait, never to it", function*(stores) {
      const { timer, t } = yield* timersOf(stores)
      const x = timer()
      const root = { tenantId: x.tenantId, rootExecutionId: x.rootExecutionId, threadId: x.threadId }
      const late = ids("pause")
      const input = (pauseId: string, timeUp: boolean) => ({ ...root, name: "approve", pauseId, timeUp, now: t })
      assert.deepStrictEqual(yield* stores.first.consume(input(late, true)), { _tag: "TimedOut" })
      const s = yield* stores.second.send(signalOf(root, "approve", "after", t))
      assert.deepStrictEqual(yield* stores.second.consume(input(late, false)), { _tag: "TimedOut" }, "the seal is kept")
      const next = ids("pause")
      assert.strictEqual(signalTaken(yield* stores.first.consume(input(next, false))).seq, s.seq, "the signal waits for the next wait")
      assert.deepStrictEqual((yield* stores.first.listSignals(root.tenantId, root.rootExecutionId)).map((x) => x.seq), [s.seq], "a seal is no signal")
    })

    test(`of ${racers} racing waits, each signal goes to exactly one pause and each pause takes at most one`, function*(stores) {
      const { timer, t } = yield* timersOf(stores)
      const x = timer()
      const root = { tenantId: x.tenantId, rootExecutionId: x.rootExecutionId, threadId: x.threadId }
      const sent = Math.max(1, Math.floor(racers / 2))
      for (let i = 0; i < sent; i++) yield* stores.at(i).send(signalOf(root, "go", i, t))
      const pauses = Array.from({ length: racers }, () => ids("pause"))
      // every pause twice at once (once with its time up): a pause's two racers must answer the same
      const exits = yield* race(racers * 2, (i) =>
        stores.at(i).consume({ ...root, name: "go", pauseId: pauses[i % racers]!, timeUp: i >= racers, now: t }))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers * 2)
      const byPause = new Map<string, Set<string>>()
      answers.forEach((o, i) => {
        const pause = pauses[i % racers]!
        if (o._tag !== "Waiting") byPause.set(pause, (byPause.get(pause) ?? new Set()).add(o._tag === "Signal" ? String(o.signal.seq) : "timeout"))
      })
      const list = yield* stores.first.listSignals(root.tenantId, root.rootExecutionId)
      for (const [pause, got] of byPause) {
        const stored = list.filter((s) => s.consumedBy === pause).map((s) => String(s.seq))
        assert.isTrue(got.size === 1 && stored.length <= 1 && (stored.length === 0 ? got.has("timeout") : got.has(stored[0]!)), `pause ${pause} took one answer and kept it`)
      }
      assert.strictEqual(list.filter((s) => s.consumedBy !== null).length, sent, "every signal was taken, each once")
    })

    test("refuses bad input with InvalidInputError naming the field, writing nothing", function*(stores) {
      const { timer, t } = yield* timersOf(stores)
      const x = timer()
      yield* expectInvalid(stores.first.arm({ ...x, kind: "Nap" as never }), "kind", "an unknown kind")
      yield* expectInvalid(stores.first.arm({ ...x, name: "n" }), "name", "a sleep with a name")
      yield* expectInvalid(stores.first.arm({ ...x, kind: "Signal", name: "" }), "name", "a wait without a name")
      yield* expectInvalid(stores.first.arm({ ...x, dueAt: null }), "dueAt", "a sleep without a due time")
      yield* expectInvalid(stores.first.arm({ ...x, wakesAt: Number.NaN }), "wakesAt", "a NaN wake time")
      yield* expectInvalid(stores.first.arm({ ...x, pauseId: "" }), "pauseId", "an empty pause id")
      yield* expectInvalid(stores.first.claimDue(t, 0, "w", claimFor), "limit", "a zero page")
      yield* expectInvalid(stores.first.claimDue(t, 1, "w", 0), "claimMillis", "a zero claim")
      for (const [what, value] of nonJsonValues) {
        yield* expectInvalid(stores.first.send(signalOf(x, "n", value, t)), "payload", what)
      }
      yield* expectInvalid(stores.first.send(signalOf(x, "", 1, t)), "name", "an empty signal name")
      none(yield* stores.first.get(x.tenantId, x.pauseId), "nothing was armed")
      assert.deepStrictEqual(yield* stores.first.listSignals(x.tenantId, x.rootExecutionId), [], "nothing was sent")
    })
  })
}
