/**
 * The step-slot queue on its own, on the TestClock: free slots, priority
 * order, aging, interrupted waiters, release on every kind of end, the
 * readiness component, and which nodes of a graph close a branch.
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Cause, Duration, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as StepSlots from "../../../src/runtime/internal/limits/StepSlots.ts"

const claim = (depth: number, options?: { closesBranch?: boolean; newRoot?: boolean }): StepSlots.Claim => ({
  depth,
  closesBranch: options?.closesBranch ?? false,
  newRoot: options?.newRoot ?? false
})

/** Lets forked fibers run until `done` holds (a bounded number of turns). */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && !done(); i++) yield* Effect.yieldNow
    assert.isTrue(done(), "the fibers did not get there")
  })

/** Forks a waiter that takes a slot (and keeps it), then writes its name. */
const waiter = (slots: StepSlots.StepSlotsShape, order: Array<string>, name: string, c: StepSlots.Claim) =>
  Effect.gen(function*() {
    const before = slots.waiting
    const fiber = yield* Effect.forkChild(Effect.andThen(slots.take(c), Effect.sync(() => order.push(name))))
    yield* until(() => slots.waiting === before + 1)
    return fiber
  })

/** Gives one slot back and waits until the next waiter wrote its name. */
const handOver = (slots: StepSlots.StepSlotsShape, order: Array<string>) =>
  Effect.gen(function*() {
    const n = order.length
    yield* slots.release
    yield* until(() => order.length === n + 1)
  })

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })
const noop = async () => ({ log: [] as Array<string> })

describe("StepSlots", () => {
  it.effect("free slots are taken at once; a step without one waits (never an error) and gets the next one", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(2)
      const order: Array<string> = []
      yield* slots.take(claim(1))
      yield* slots.take(claim(1))
      assert.deepStrictEqual([slots.busy, slots.free, slots.waiting], [2, 0, 0])
      yield* waiter(slots, order, "third", claim(1))
      assert.deepStrictEqual([slots.busy, slots.free, slots.waiting], [2, 0, 1])
      yield* handOver(slots, order)
      assert.deepStrictEqual(order, ["third"])
      assert.deepStrictEqual([slots.busy, slots.free, slots.waiting], [2, 0, 0], "the slot changed hands without being free")
      yield* slots.release
      yield* slots.release
      assert.deepStrictEqual([slots.busy, slots.free, slots.waiting], [0, 2, 0])
    }))

  it.effect("waiters are served closers first, then the deepest, a new root's first step last, equals by arrival", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const order: Array<string> = []
      yield* slots.take(claim(1))
      yield* waiter(slots, order, "new root", claim(1, { newRoot: true }))
      yield* waiter(slots, order, "shallow", claim(1))
      yield* waiter(slots, order, "deep 3", claim(3))
      yield* waiter(slots, order, "closer", claim(1, { closesBranch: true }))
      yield* waiter(slots, order, "deep 2", claim(2))
      yield* waiter(slots, order, "deep 3 again", claim(3))
      yield* waiter(slots, order, "deeper closer", claim(2, { closesBranch: true }))
      assert.strictEqual(slots.waiting, 7)
      for (let i = 0; i < 7; i++) yield* handOver(slots, order)
      assert.deepStrictEqual(order, ["deeper closer", "closer", "deep 3", "deep 3 again", "deep 2", "shallow", "new root"])
      assert.strictEqual(slots.waiting, 0)
    }))

  it.effect("each 10 s of waiting counts one level deeper: a shallow waiter overtakes deeper arrivals", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const order: Array<string> = []
      yield* slots.take(claim(1))
      yield* waiter(slots, order, "shallow", claim(1))
      yield* waiter(slots, order, "deep at 0 s", claim(3))
      yield* handOver(slots, order)
      yield* TestClock.adjust("19 seconds")
      yield* waiter(slots, order, "deep at 19 s", claim(3))
      // At 19 s the shallow one is level 1 + 1 = 2: the new deep one (3) still goes first.
      yield* handOver(slots, order)
      yield* TestClock.adjust("1 second")
      yield* waiter(slots, order, "deep at 20 s", claim(3))
      // At 20 s it is level 1 + 2 = 3, equal to depth 3: it came first, so it goes first.
      yield* handOver(slots, order)
      yield* handOver(slots, order)
      assert.deepStrictEqual(order, ["deep at 0 s", "deep at 19 s", "shallow", "deep at 20 s"])
    }))

  it.effect("aging lifts a new root's first step over later steps of its depth after one period", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const order: Array<string> = []
      yield* slots.take(claim(1))
      yield* waiter(slots, order, "new root at 0 s", claim(1, { newRoot: true }))
      yield* TestClock.adjust("9 seconds")
      yield* waiter(slots, order, "step at 9 s", claim(1))
      yield* handOver(slots, order)
      yield* TestClock.adjust("1 second")
      yield* waiter(slots, order, "step at 10 s", claim(1))
      yield* handOver(slots, order)
      yield* handOver(slots, order)
      assert.deepStrictEqual(order, ["step at 9 s", "new root at 0 s", "step at 10 s"])
    }))

  it.effect("the aging period can be set (the runtime uses 10 s)", () =>
    Effect.gen(function*() {
      assert.strictEqual(Duration.toMillis(StepSlots.agingPeriod), 10_000)
      const slots = yield* StepSlots.make(1, { agingPeriod: "1 second" })
      const order: Array<string> = []
      yield* slots.take(claim(1))
      yield* waiter(slots, order, "shallow", claim(1))
      yield* TestClock.adjust("2 seconds")
      yield* waiter(slots, order, "deep", claim(3))
      yield* handOver(slots, order)
      assert.deepStrictEqual(order, ["shallow"])
    }))

  it.effect("an interrupted waiter leaves the queue at once and is never handed a slot", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const order: Array<string> = []
      yield* slots.take(claim(1))
      const gone = yield* waiter(slots, order, "cancelled", claim(5, { closesBranch: true }))
      yield* waiter(slots, order, "kept", claim(1))
      assert.strictEqual(slots.waiting, 2)
      yield* Fiber.interrupt(gone)
      assert.strictEqual(slots.waiting, 1)
      yield* handOver(slots, order)
      assert.deepStrictEqual(order, ["kept"])
      yield* slots.release
      assert.deepStrictEqual([slots.busy, slots.waiting], [0, 0])
    }))

  it.effect("a slot handed to a waiter in the instant it is interrupted goes on to the next waiter", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const order: Array<string> = []
      yield* slots.take(claim(1))
      const first = yield* waiter(slots, order, "first", claim(2))
      yield* waiter(slots, order, "second", claim(1))
      // Handed over and interrupted before its fiber ran again.
      slots.releaseUnsafe()
      yield* Fiber.interrupt(first)
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(first)))
      yield* until(() => order.length === 1)
      assert.deepStrictEqual(order, ["second"])
      assert.deepStrictEqual([slots.busy, slots.waiting], [1, 0])
    }))

  it.effect("withSlot gives the slot back however the step ends: success, failure, defect, interruption", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      const c = claim(1)
      assert.strictEqual(yield* slots.withSlot(c)(Effect.succeed(1)), 1)
      assert.strictEqual(slots.busy, 0)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(slots.withSlot(c)(Effect.fail("boom")))))
      assert.strictEqual(slots.busy, 0)
      const died = yield* Effect.exit(slots.withSlot(c)(Effect.die(new Error("defect"))))
      assert.isTrue(Exit.isFailure(died) && Cause.hasDies(died.cause))
      assert.strictEqual(slots.busy, 0)
      const running = yield* Effect.forkChild(slots.withSlot(c)(Effect.never))
      yield* until(() => slots.busy === 1)
      const waiting = yield* Effect.forkChild(slots.withSlot(c)(Effect.never))
      yield* until(() => slots.waiting === 1)
      yield* Fiber.interrupt(waiting)
      assert.deepStrictEqual([slots.busy, slots.waiting], [1, 0], "an interrupted waiter took nothing")
      yield* Fiber.interrupt(running)
      assert.deepStrictEqual([slots.busy, slots.waiting], [0, 0])
    }))

  it.effect("10 000 short steps through 1 slot: each waits its turn, the stack does not grow", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(1)
      let running = 0
      let most = 0
      let done = 0
      yield* Effect.forEach(
        Array.from({ length: 10_000 }, (_, i) => i),
        (i) =>
          slots.withSlot(claim(1 + (i % 3), { closesBranch: i % 7 === 0 }))(Effect.sync(() => {
            running++
            most = Math.max(most, running)
            running--
            done++
          })),
        { concurrency: "unbounded", discard: true }
      )
      assert.deepStrictEqual([done, most, slots.busy, slots.waiting], [10_000, 1, 0, 0])
    }))

  it.effect("readiness: Healthy with a free slot, Degraded with the counts while every slot is busy", () =>
    Effect.gen(function*() {
      const slots = yield* StepSlots.make(2)
      const order: Array<string> = []
      assert.deepStrictEqual(StepSlots.healthComponent(slots), { name: "step-slots", status: "Healthy", message: "0 of 2 step slots busy" })
      yield* slots.take(claim(1))
      assert.deepStrictEqual(StepSlots.healthComponent(slots).status, "Healthy")
      yield* slots.take(claim(1))
      assert.deepStrictEqual(StepSlots.healthComponent(slots), {
        name: "step-slots",
        status: "Degraded",
        message: "2 of 2 step slots busy, 0 steps waiting"
      })
      yield* waiter(slots, order, "a", claim(1))
      assert.strictEqual(StepSlots.healthComponent(slots).message, "2 of 2 step slots busy, 1 step waiting")
      for (const name of ["b", "c", "d", "e", "f", "g"]) yield* waiter(slots, order, name, claim(1))
      assert.strictEqual(StepSlots.healthComponent(slots).message, "2 of 2 step slots busy, 7 steps waiting")
      assert.deepStrictEqual(yield* StepSlots.readiness(undefined), [], "no cap: no component")
    }))

  describe("branchClosers", () => {
    it("the end of a waiting edge with several starts closes a branch", () => {
      const graph = new StateGraph(State)
        .addNode("fork", noop).addNode("left", noop).addNode("right", noop).addNode("join", noop)
        .addEdge(START, "fork").addEdge("fork", "left").addEdge("fork", "right")
        .addEdge(["left", "right"], "join").addEdge("join", END)
      assert.deepStrictEqual([...StepSlots.branchClosers(graph)], ["join"])
    })

    it("a node reached over plain edges from two nodes closes a branch; START does not count", () => {
      const graph = new StateGraph(State)
        .addNode("a", noop).addNode("b", noop).addNode("c", noop).addNode("merge", noop)
        .addEdge(START, "a").addEdge(START, "b").addEdge("a", "merge").addEdge("b", "merge")
        .addEdge(START, "c").addEdge("c", END).addEdge("merge", END)
      assert.deepStrictEqual([...StepSlots.branchClosers(graph)], ["merge"])
    })

    it("the declared ends of a conditional edge count as sources; a loop's entry is no closer", () => {
      const graph = new StateGraph(State)
        .addNode("agent", noop).addNode("tools", noop).addNode("review", noop).addNode("done", noop)
        .addEdge(START, "agent")
        .addConditionalEdges("agent", () => "tools", { tools: "tools", review: "review" })
        .addEdge("tools", "agent")
        .addEdge("tools", "done")
        .addEdge("review", "done")
        .addEdge("done", END)
      assert.deepStrictEqual([...StepSlots.branchClosers(graph)], ["done"])
    })
  })
})
