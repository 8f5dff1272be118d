/**
 * Seeded schedules of racing calls and faults on one paused tree over three
 * instances (Harness, TestClock): two resumes with different decisions,
 * cancels, freezes, kills and closes, in a random order with random time
 * between them. Whatever the schedule: no call ends in a defect, the tree
 * settles (Finished or Cancelled; Paused, still answerable, only when no
 * resume or cancel got through), the side effect after the pause applies
 * at most once — once exactly when Finished, with a decision some resume gave,
 * which every resume that answered answers too — and a cancel that answered
 * `cancelled: true` leaves no Finished tree (a step may still run within one
 * renewal of a cancel landing elsewhere: a Cancelled tree may have sent).
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import type { ExecutionOutput } from "../../src/runtime/Baton.ts"
import * as Harness from "../../src/testing/Harness.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { childWorkflow, makeChildLog, parentWorkflow } from "./children/childFixtures.ts"
import { booking, makeBook, undoneNodes } from "./undo/undoFixtures.ts"
import { backends, makeSideEffects, recordOf, type SideEffects } from "./fixtures.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** draft → approve (pauses) → work (20 s on the Clock) → send (the side effect). */
const approveThenWork = (fx: SideEffects) =>
  Workflow.make({
    name: "approve-then-work",
    version: "1",
    graph: new StateGraph(State)
      .addNode("draft", Workflow.step(async () => ({ log: ["draft"] })))
      .addNode("approve", Workflow.step(async () => ({ log: [`approved:${String(interrupt({ q: "send?" }))}`] })))
      .addNode("work", Workflow.effectStep(() => Effect.as(Effect.sleep(Duration.seconds(20)), { log: ["work"] }))) // the Harness's TestClock
      .addNode("send", Workflow.step(async (_s, ctx) => {
        fx.apply(ctx.idempotencyKey)
        return { log: ["sent"] }
      }))
      .addEdge(START, "draft")
      .addEdge("draft", "approve")
      .addEdge("approve", "work")
      .addEdge("work", "send")
      .addEdge("send", END)
  })

/** mulberry32: a small seeded generator, so a failing seed replays. */
const seeded = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Call = { readonly what: string; readonly on: number; readonly fiber: Fiber.Fiber<unknown, unknown> }

/**
 * The faults of a seeded schedule on the Harness's three instances, each noted
 * in `trace`: `fault(on, k)` freezes (0), thaws (1), kills (2) or closes (3)
 * instance `on` when that applies (at most two gone; false when not); `wait`
 * settles or advances the TestClock by one of `steps` seconds.
 */
const makeFleet = (h: Harness.Harness, pick: (n: number) => number, steps: readonly [number, number, number], trace: Array<string> = []) => {
  const gone = new Set<number>()
  const frozen = new Set<number>()
  const fault = Effect.fnUntraced(function*(on: number, k: number) {
    if (k === 0 && !frozen.has(on)) {
      frozen.add(on)
      yield* h.freeze(on)
    } else if (k === 1 && frozen.has(on)) {
      frozen.delete(on)
      yield* h.thaw(on)
    } else if (k === 2 && gone.size < 2) {
      gone.add(on)
      frozen.delete(on)
      yield* h.kill(on)
    } else if (k === 3 && gone.size < 2 && !frozen.has(on)) {
      gone.add(on)
      yield* h.close(on)
    } else return false
    trace.push(`${["freeze", "thaw", "kill", "close"][k]}@${on}`)
    return true
  })
  const wait = Effect.suspend(() => {
    const w = pick(4)
    const seconds = [0, ...steps][w]!
    trace.push(w === 0 ? "settle" : `+${seconds}s`)
    return w === 0 ? h.settle : h.advance(`${seconds} seconds`)
  })
  return { gone, frozen, trace, fault, wait }
}

const schedule = (seed: number) =>
  Effect.gen(function*() {
    const rand = seeded(seed)
    const pick = (n: number) => Math.floor(rand() * n)
    const fx = makeSideEffects()
    const wf = approveThenWork(fx)
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
    const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
    assert.strictEqual(first._tag, "Paused")
    if (first._tag !== "Paused") return
    const pauseId = first.pauses[0]!.pauseId
    const calls: Array<Call> = []
    const { fault, frozen, gone, trace, wait } = makeFleet(h, pick, [3, 12, 35])
    for (let step = 0; step < 8; step++) {
      const on = pick(3)
      const op = pick(7)
      if (gone.has(on)) continue
      if (op <= 1) {
        const decision = op === 0 ? "a" : "b"
        calls.push({ what: `resume:${decision}`, on, fiber: yield* h.run(on, (b) => b.resume({ pauseId, decision })) })
        trace.push(`resume@${on}`)
      } else if (op === 2) {
        calls.push({ what: "cancel", on, fiber: yield* h.run(on, (b) => b.cancel(first.threadId)) })
        trace.push(`cancel@${on}`)
      } else if (!(yield* fault(on, op - 3))) continue
      yield* wait
    }
    for (const i of frozen) yield* h.thaw(i)
    for (let i = 0; i < 8; i++) yield* h.advance("30 seconds")
    const what = `seed ${seed}: ${trace.join(" ")}`
    const exits: Array<{ readonly call: Call; readonly exit: Exit.Exit<unknown, unknown> | undefined }> = calls.map((call) => ({
      call,
      exit: call.fiber.pollUnsafe()
    }))
    for (const { call, exit } of exits) {
      if (exit === undefined) {
        assert.isTrue(gone.has(call.on), `${what}: ${call.what} on ${call.on} never answered (its instance is live)`)
        continue
      }
      if (Exit.isFailure(exit) && Option.isNone(Exit.findErrorOption(exit))) {
        assert.isTrue(gone.has(call.on) && Cause.hasInterruptsOnly(exit.cause), `${what}: ${call.what} on ${call.on} ended in a defect: ${Cause.pretty(exit.cause)}`)
      }
    }
    const record = yield* recordOf(first.tenantId, first.executionId)
    const answered = exits.filter(({ call, exit }) => call.what !== "" && exit !== undefined && Exit.isSuccess(exit))
    if (record?.status === "Paused") {
      // Only when no resume or cancel got through (none was made, or each died with its instance first): still answerable.
      assert.deepStrictEqual(answered.map(({ call }) => call.what), [], `${what}: a call answered, yet the tree rests Paused`)
      const live = [0, 1, 2].find((i) => !gone.has(i))!
      const pending = yield* Fiber.join(yield* h.run(live, (b) => b.pendingPauses({ threadId: first.threadId })))
      assert.deepStrictEqual(pending.map((p) => p.pauseId), [pauseId], `${what}: the pause is still answerable`)
      return
    }
    assert.include(["Finished", "Cancelled"], record?.status, `${what}: the tree settled (${record?.status})`)
    const sends = [...fx.applied.values()]
    assert.isTrue(sends.every((n) => n === 1), `${what}: the send applied at most once per key (${sends})`)
    const cancelled = exits.some(({ call, exit }) => call.what === "cancel" && exit !== undefined && Exit.isSuccess(exit) && (exit.value as { cancelled: boolean }).cancelled)
    if (record?.status === "Finished") {
      assert.strictEqual(sends.length, 1, `${what}: a Finished tree sent once`)
      assert.isFalse(cancelled, `${what}: a cancel answered cancelled: true, yet the tree Finished`)
      const decisions = calls.filter((c) => c.what.startsWith("resume")).map((c) => `approved:${c.what.slice(7)}`)
      const out = yield* Fiber.join(yield* h.run([0, 1, 2].find((i) => !gone.has(i))!, (b) => b.await(first.executionId)))
      const log = out._tag === "Finished" ? (out.output as { log: Array<string> }).log : []
      assert.isTrue(log.some((l) => decisions.includes(l)), `${what}: the output holds a decision a resume gave (${log})`)
      for (const { call, exit } of exits) {
        if (call.what.startsWith("resume") && exit !== undefined && Exit.isSuccess(exit)) {
          const answered = exit.value as { _tag: string; output?: { log: Array<string> } }
          assert.deepStrictEqual(answered.output?.log, log, `${what}: a resume answered another output than the tree's`)
        }
      }
    }
  })

for (const backend of backends) {
  describe(`seeded races on one paused tree on ${backend.name}`, () => {
    it.effect("resumes with different decisions, cancels, freezes, kills and closes on three instances: no defect, one outcome", () =>
      Effect.gen(function*() {
        const seeds = Number(process.env.SEEDS ?? (backend.name === "memory" ? 60 : 20))
        for (let seed = Number(process.env.SEED ?? 1); seed <= seeds; seed++) yield* Effect.scoped(schedule(seed)).pipe(Effect.provide(Layer.fresh(backend.stores)))
      }), 240_000)
  })
}

/**
 * A parent fanning out to children placed on any instance, with cancels of
 * the parent's thread, freezes, kills and closes racing the children's claims.
 * Whatever the schedule: no call ends in a defect, the parent settles, no
 * child is left Running once its parent ended, each child's side effect
 * applies at most once unless a frozen holder woke after a takeover — each
 * when the parent Finished — and a cancel
 * that answered `cancelled: true` leaves no Finished parent.
 */
const fanOut = (seed: number) =>
  Effect.gen(function*() {
    const rand = seeded(seed)
    const pick = (n: number) => Math.floor(rand() * n)
    const log = makeChildLog()
    const child = childWorkflow(log, "8 seconds")
    const parent = parentWorkflow(child, "any")
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [parent, child] } })
    const started = yield* Fiber.join(yield* h.run(0, (b) => b.start(parent, { count: 4 })))
    const calls: Array<Call> = []
    const { fault, frozen, gone, trace, wait } = makeFleet(h, pick, [1, 5, 20])
    for (let step = 0; step < 7; step++) {
      const on = pick(3)
      const op = pick(6)
      if (gone.has(on)) continue
      if (op <= 1) {
        calls.push({ what: "cancel", on, fiber: yield* h.run(on, (b) => b.cancel(started.threadId)) })
        trace.push(`cancel@${on}`)
      } else if (!(yield* fault(on, op - 2))) continue
      yield* wait
    }
    for (const i of frozen) yield* h.thaw(i)
    for (let i = 0; i < 12; i++) yield* h.advance("30 seconds")
    const what = `seed ${seed}: ${trace.join(" ")}`
    for (const call of calls) {
      const exit = call.fiber.pollUnsafe()
      if (exit === undefined) {
        assert.isTrue(gone.has(call.on), `${what}: ${call.what} on ${call.on} never answered (its instance is live)`)
      } else if (Exit.isFailure(exit) && Option.isNone(Exit.findErrorOption(exit))) {
        assert.isTrue(gone.has(call.on) && Cause.hasInterruptsOnly(exit.cause), `${what}: ${call.what} on ${call.on} ended in a defect: ${Cause.pretty(exit.cause)}`)
      }
    }
    const root = yield* recordOf(started.tenantId, started.executionId)
    assert.include(["Finished", "Failed", "Cancelled"], root?.status, `${what}: the parent settled (${root?.status})`)
    const running = yield* RecordStore.use((r) => r.findByStatus("Running", 100, Option.none()))
    assert.deepStrictEqual(running.map((r) => r.executionId), [], `${what}: no execution left Running once the parent ended`)
    const applied = [...log.applied.values()]
    // A frozen holder's step body that wakes after its lease was taken over may still act (the same idempotency key
    // as the new holder's run: that is what the key is for); without a freeze, nothing runs twice.
    if (!trace.some((t) => t.startsWith("freeze"))) {
      assert.isTrue(applied.every((n) => n === 1), `${what}: each child's side effect at most once (${applied})`)
    }
    const cancelled = calls.some((call) => {
      const exit = call.fiber.pollUnsafe()
      return exit !== undefined && Exit.isSuccess(exit) && (exit.value as { cancelled: boolean }).cancelled
    })
    if (root?.status === "Finished") {
      assert.strictEqual(applied.length, 4, `${what}: a Finished parent's four children each applied`)
      assert.isFalse(cancelled, `${what}: a cancel answered cancelled: true, yet the parent Finished`)
    }
  })

for (const backend of backends) {
  describe(`seeded races on a parent and its children on ${backend.name}`, () => {
    it.effect("cancels of the parent, freezes, kills and closes while children are claimed on three instances: no defect, nothing left running", () =>
      Effect.gen(function*() {
        const seeds = Number(process.env.SEEDS ?? (backend.name === "memory" ? 40 : 15))
        for (let seed = Number(process.env.SEED ?? 1); seed <= seeds; seed++) {
          yield* Effect.scoped(fanOut(seed)).pipe(Effect.provide(Layer.fresh(backend.stores)))
        }
      }), 240_000)
  })
}

/** The `_tag` of a typed failure, "Success", or undefined (a defect or an interruption). */
const tagOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isSuccess(exit) ? "Success" : Option.getOrUndefined(Option.map(Exit.findErrorOption(exit), (e) => (e as { _tag: string })._tag))

/**
 * Request keys under races: keyed executes of one key on three instances
 * racing cancels of its thread, then keyed resumes of one key with two decisions and cancels, among
 * freezes, kills and closes. Whatever the schedule: one execution for the
 * key, every answering call of the key answers it; one decision wins the
 * resume key (the other is RequestConflictError); no defect.
 */
const keyed = (seed: number) =>
  Effect.gen(function*() {
    const rand = seeded(seed)
    const pick = (n: number) => Math.floor(rand() * n)
    const fx = makeSideEffects()
    const wf = approveThenWork(fx)
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
    const { fault, frozen, gone, trace, wait } = makeFleet(h, pick, [1, 12, 35])
    const live = () => [0, 1, 2].find((i) => !gone.has(i))!
    // Phase 1: keyed executes of one key.
    const executes: Array<Call> = []
    const earlyCancels: Array<Call> = []
    for (let step = 0; step < 5; step++) {
      const on = pick(3)
      if (gone.has(on)) continue
      const op = pick(4)
      if (op <= 1) {
        executes.push({ what: "execute", on, fiber: yield* h.run(on, (b) => b.execute(wf, { log: [] }, { threadId: "the-thread", requestKey: "order-1" })) })
        trace.push(`execute@${on}`)
      } else if (op === 2) {
        earlyCancels.push({ what: "cancel", on, fiber: yield* h.run(on, (b) => b.cancel("the-thread")) })
        trace.push(`cancel@${on}`)
      } else yield* fault(on, pick(4))
      yield* wait
    }
    for (const i of frozen) yield* h.thaw(i)
    frozen.clear()
    for (let i = 0; i < 4; i++) yield* h.advance("30 seconds")
    const what = () => `seed ${seed}: ${trace.join(" ")}`
    if (executes.length === 0) return
    const listed = yield* Fiber.await(yield* h.run(live(), (b) => b.list({ threadId: "the-thread" })))
    // No call of the key got as far as creating the thread.
    if (tagOf(listed) === "UnknownThreadError") return assert.isTrue(executes.every((c) => gone.has(c.on)), `${what()}: no thread`)
    const roots = Exit.isSuccess(listed) ? listed.value.executions : assert.fail(`${what()}: list failed: ${String(listed)}`)
    for (const call of earlyCancels) {
      const exit = call.fiber.pollUnsafe()
      if (exit === undefined || tagOf(exit) === undefined) {
        assert.isTrue(gone.has(call.on), `${what()}: cancel on ${call.on} did not answer or died: ${exit === undefined ? "pending" : Cause.pretty((exit as Exit.Failure<unknown, unknown>).cause)}`)
      } else if (Exit.isFailure(exit) && !gone.has(call.on)) {
        assert.include(["UnknownThreadError", "InstanceStoppingError"], tagOf(exit), `${what()}: cancel on ${call.on}`)
      } else if (Exit.isSuccess(exit) && (exit.value as { cancelled: boolean }).cancelled) {
        // A cancel that landed on the key's execution: it ended Cancelled, and every execute of the key that answered says so.
        assert.strictEqual((yield* recordOf(roots[0]!.tenantId, roots[0]!.executionId))?.status, "Cancelled", `${what()}: cancelled: true, yet not Cancelled`)
        return
      }
    }
    assert.isAtMost(roots.length, 1, `${what()}: one execution for the key`)
    for (const call of executes) {
      const exit = call.fiber.pollUnsafe()
      if (exit === undefined || tagOf(exit) === undefined) {
        assert.isTrue(gone.has(call.on), `${what()}: execute on ${call.on} did not answer or died: ${exit === undefined ? "pending" : Cause.pretty((exit as Exit.Failure<unknown, unknown>).cause)}`)
      } else if (Exit.isSuccess(exit)) {
        assert.strictEqual((exit.value as { executionId: string }).executionId, roots[0]?.executionId, `${what()}: an execute answered another execution`)
      } else if (!gone.has(call.on)) assert.include(["InstanceStoppingError", "ExecutionCancelledError"], tagOf(exit), `${what()}: execute on ${call.on}`)
    }
    if (roots.length === 0) return
    const pending = yield* Fiber.join(yield* h.run(live(), (b) => b.pendingPauses({ threadId: "the-thread" })))
    if (pending.length === 0) return
    const pauseId = pending[0]!.pauseId
    // Phase 2: keyed resumes of one key with two decisions, and cancels.
    const calls: Array<Call> = []
    for (let step = 0; step < 6; step++) {
      const on = pick(3)
      if (gone.has(on)) continue
      const op = pick(5)
      if (op <= 2) {
        const decision = op === 0 ? "b" : "a"
        calls.push({ what: `resume:${decision}`, on, fiber: yield* h.run(on, (b) => b.resume({ pauseId, decision, requestKey: "approve-1" })) })
        trace.push(`resume:${decision}@${on}`)
      } else if (op === 3) {
        calls.push({ what: "cancel", on, fiber: yield* h.run(on, (b) => b.cancel("the-thread")) })
        trace.push(`cancel@${on}`)
      } else yield* fault(on, pick(4))
      yield* wait
    }
    for (const i of frozen) yield* h.thaw(i)
    for (let i = 0; i < 8; i++) yield* h.advance("30 seconds")
    const record = yield* recordOf(roots[0]!.tenantId, roots[0]!.executionId)
    const outputs = new Map<string, string>()
    for (const call of calls) {
      const exit = call.fiber.pollUnsafe()
      if (exit === undefined || tagOf(exit) === undefined) {
        assert.isTrue(gone.has(call.on), `${what()}: ${call.what} on ${call.on} did not answer or died: ${exit === undefined ? "pending" : Cause.pretty((exit as Exit.Failure<unknown, unknown>).cause)}`)
      } else if (Exit.isSuccess(exit) && call.what.startsWith("resume")) {
        outputs.set(call.what, JSON.stringify(exit.value))
      } else if (Exit.isFailure(exit) && !gone.has(call.on)) {
        assert.include(["RequestConflictError", "NotPausedError", "ExecutionCancelledError", "InstanceStoppingError", "LeaseLostError"], tagOf(exit), `${what()}: ${call.what} on ${call.on}`)
      }
    }
    assert.isAtMost(outputs.size, 1, `${what()}: both decisions answered under one key: ${[...outputs.entries()]}`)
    if (record?.status === "Finished") {
      const out = yield* Fiber.join(yield* h.run(live(), (b) => b.await(roots[0]!.executionId)))
      for (const [, answered] of outputs) assert.strictEqual(answered, JSON.stringify(out), `${what()}: a resume answered another output`)
    }
    if (!trace.some((t) => t.startsWith("freeze"))) {
      assert.isTrue([...fx.applied.values()].every((n) => n === 1), `${what()}: the send at most once`)
    }
  })

for (const backend of backends) {
  describe(`seeded races of request keys on ${backend.name}`, () => {
    it.effect("keyed executes, keyed resumes with two decisions and cancels, among freezes, kills and closes: one execution, one decision, no defect", () =>
      Effect.gen(function*() {
        const seeds = Number(process.env.SEEDS ?? (backend.name === "memory" ? 40 : 15))
        for (let seed = Number(process.env.SEED ?? 1); seed <= seeds; seed++) {
          yield* Effect.scoped(keyed(seed)).pipe(Effect.provide(Layer.fresh(backend.stores)))
        }
      }), 240_000)
  })
}

/**
 * A paused booking (three steps with undos, then a pause), resumed and
 * cancelled on three instances among freezes, kills and closes — resumes
 * landing while a cancel unwinds it. Whatever the schedule: no defect; it
 * ends Finished with nothing undone, or Cancelled with s3, s2, s1 undone once
 * each in that order (or rests Paused when neither call got through); a
 * cancel answered `cancelled: true` leaves no Finished tree, and a resume
 * answered Finished leaves no Cancelled one.
 */
const unwinding = (seed: number) =>
  Effect.gen(function*() {
    const rand = seeded(seed)
    const pick = (n: number) => Math.floor(rand() * n)
    const book = makeBook({ s4: "pause", undoSleep: `${1 + pick(15)} seconds` })
    const wf = booking(book)
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf] } })
    const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] })))
    if (first._tag !== "Paused") return assert.fail(`seed ${seed}: the booking did not pause`)
    const pauseId = first.pauses[0]!.pauseId
    const calls: Array<Call> = []
    const { fault, frozen, gone, trace, wait } = makeFleet(h, pick, [2, 7, 31], [book.plan.undoSleep as string])
    for (let step = 0; step < 8; step++) {
      const on = pick(3)
      const op = pick(7)
      if (gone.has(on)) continue
      if (op <= 1) {
        calls.push({ what: "resume", on, fiber: yield* h.run(on, (b) => b.resume({ pauseId, decision: "yes" })) })
        trace.push(`resume@${on}`)
      } else if (op === 2) {
        calls.push({ what: "cancel", on, fiber: yield* h.run(on, (b) => b.cancel(first.threadId)) })
        trace.push(`cancel@${on}`)
      } else if (!(yield* fault(on, op - 3))) continue
      yield* wait
    }
    for (const i of frozen) yield* h.thaw(i)
    for (let i = 0; i < 10; i++) yield* h.advance("30 seconds")
    const what = `seed ${seed}: ${trace.join(" ")}`
    const answered = (w: string, ok: (value: unknown) => boolean) =>
      calls.some((call) => {
        const exit = call.fiber.pollUnsafe()
        return call.what === w && exit !== undefined && Exit.isSuccess(exit) && ok(exit.value)
      })
    for (const call of calls) {
      const exit = call.fiber.pollUnsafe()
      if (exit === undefined || tagOf(exit) === undefined) {
        assert.isTrue(gone.has(call.on), `${what}: ${call.what} on ${call.on} did not answer or died: ${exit === undefined ? "pending" : Cause.pretty((exit as Exit.Failure<unknown, unknown>).cause)}`)
      }
    }
    const record = yield* recordOf(first.tenantId, first.executionId)
    assert.isTrue([...book.applied.values()].every((n) => n === 1), `${what}: each undo at most once`)
    const cancelled = answered("cancel", (v) => (v as { cancelled: boolean }).cancelled)
    const finished = answered("resume", (v) => (v as { _tag: string })._tag === "Finished")
    if (record?.status === "Paused") {
      assert.isFalse(cancelled || finished || answered("resume", () => true), `${what}: a call got through, yet it rests Paused`)
      return
    }
    if (record?.status === "Finished") {
      assert.deepStrictEqual(undoneNodes(book), [], `${what}: a Finished booking undid nothing`)
      assert.isFalse(cancelled, `${what}: a cancel answered cancelled: true, yet it Finished`)
      return
    }
    assert.strictEqual(record?.status, "Cancelled", `${what}: it settled`)
    assert.isFalse(finished, `${what}: a resume answered Finished, yet it ended Cancelled`)
    assert.deepStrictEqual(undoneNodes(book), ["s3", "s2", "s1"], `${what}: undone once each, in reverse order`)
  })

for (const backend of backends) {
  describe(`seeded races on an unwinding tree on ${backend.name}`, () => {
    it.effect("resumes and cancels of a paused booking with undos, among freezes, kills and closes: one outcome, undos once each in reverse order", () =>
      Effect.gen(function*() {
        const seeds = Number(process.env.SEEDS ?? (backend.name === "memory" ? 40 : 15))
        for (let seed = Number(process.env.SEED ?? 1); seed <= seeds; seed++) {
          yield* Effect.scoped(unwinding(seed)).pipe(Effect.provide(Layer.fresh(backend.stores)))
        }
      }), 240_000)
  })
}

/** s1 → s2 (works 5 s) → approve (pauses) → s3 → s4; each step logs itself and applies its side effect. */
const chain = (fx: SideEffects) => {
  const logged = (node: string) =>
    Workflow.effectStep((_s, ctx) =>
      Effect.gen(function*() {
        if (node === "s2") yield* Effect.sleep(Duration.seconds(5)) // on the Harness's TestClock
        fx.runs.push({ node, instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        fx.apply(ctx.idempotencyKey)
        return { log: [node] }
      })
    )
  return Workflow.make({
    name: "chain",
    version: "1",
    graph: new StateGraph(State)
      .addNode("s1", logged("s1"))
      .addNode("s2", logged("s2"))
      .addNode("approve", Workflow.step(async () => ({ log: [`approved:${String(interrupt({ q: "go on?" }))}`] })))
      .addNode("s3", logged("s3"))
      .addNode("s4", logged("s4"))
      .addEdge(START, "s1")
      .addEdge("s1", "s2")
      .addEdge("s2", "approve")
      .addEdge("approve", "s3")
      .addEdge("s3", "s4")
      .addEdge("s4", END)
  })
}

/**
 * The holder frozen at its N-th store call (any kind: a status, a pause, a
 * tree key, a lease call), for a random N, while another instance takes the
 * tree over; thawed at a random time; the pause answered on a random
 * instance. Whatever N: no defect, the tree Finishes with one log — each step
 * once, in order — whatever the stale holder wrote after its thaw.
 */
const frozenAt = (seed: number) =>
  Effect.gen(function*() {
    const rand = seeded(seed)
    const pick = (n: number) => Math.floor(rand() * n)
    const fx = makeSideEffects()
    const wf = chain(fx)
    const freezeAt = 1 + pick(40)
    const calls: Array<string> = []
    const ref: { h?: Harness.Harness; armed: boolean } = { armed: true }
    const h = yield* Harness.make({
      instances: 3,
      baton: { workflows: [wf] },
      beforeStoreCall: (call) =>
        Effect.suspend(() => {
          if (!ref.armed || call.index !== 0 || ref.h?.instance(0).state !== "alive") return Effect.void
          calls.push(call.operation)
          return calls.length === freezeAt ? ref.h.freeze(0) : Effect.void
        })
    })
    ref.h = h
    const first = yield* h.run(0, (b) => b.execute(wf, { log: [] }, { threadId: "t" }))
    const thawAfter = [1, 10, 31, 40, 70][pick(5)]!
    yield* h.advance(`${thawAfter} seconds`)
    // Frozen only in this first phase: a call counted later is not frozen.
    ref.armed = false
    const frozeAt = calls[freezeAt - 1] ?? "none (it rested before)"
    yield* h.thaw(0)
    for (let i = 0; i < 3; i++) yield* h.advance("30 seconds")
    const what = `seed ${seed}: frozen at call ${freezeAt} (${frozeAt}), thawed after ${thawAfter} s`
    const firstExit = first.pollUnsafe()
    assert.isDefined(firstExit, `${what}: the first execute answered`)
    assert.isDefined(tagOf(firstExit!), `${what}: the first execute ended in a defect: ${String(firstExit)}`)
    const pending = yield* Fiber.join(yield* h.run(1, (b) => b.pendingPauses({ threadId: "t" })))
    assert.strictEqual(pending.length, 1, `${what}: one pending pause`)
    const on = pick(3)
    const resumed = yield* h.run(on, (b) => b.resume({ pauseId: pending[0]!.pauseId, decision: "yes" }))
    for (let i = 0; i < 3; i++) yield* h.advance("30 seconds")
    const out = resumed.pollUnsafe()
    assert.isTrue(out !== undefined && Exit.isSuccess(out), `${what}: the resume on ${on} answered ${String(out)}`)
    const output = (out as Exit.Success<ExecutionOutput, unknown>).value
    assert.strictEqual(output._tag, "Finished", what)
    assert.deepStrictEqual(output._tag === "Finished" ? (output.output as { log: Array<string> }).log : [], ["s1", "s2", "approved:yes", "s3", "s4"], `${what}: one log, each step once in order`)
    const done = yield* Fiber.join(yield* h.run(2, (b) => b.await(output.executionId)))
    assert.deepStrictEqual(done, output, `${what}: await answers the same output`)
    // A step body the freeze caught may finish after its thaw (same key); s3 and s4 ran after the pause, once.
    const keys = new Set(fx.runs.filter((r) => r.node === "s3" || r.node === "s4").map((r) => r.key))
    assert.strictEqual(keys.size, 2, `${what}: s3 and s4 under one key each`)
  })

for (const backend of backends) {
  describe(`a holder frozen at any store call on ${backend.name}`, () => {
    it.effect("frozen at its N-th store call while another instance takes over, thawed later: one log, each step once, no defect", () =>
      Effect.gen(function*() {
        const seeds = Number(process.env.SEEDS ?? (backend.name === "memory" ? 60 : 20))
        for (let seed = Number(process.env.SEED ?? 1); seed <= seeds; seed++) {
          yield* Effect.scoped(frozenAt(seed)).pipe(Effect.provide(Layer.fresh(backend.stores)))
        }
      }), 240_000)
  })
}
