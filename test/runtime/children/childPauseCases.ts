/**
 * A pause inside a child reaches the parent's caller: the cases, on the
 * Harness over any stores Layer (memory and SQLite in
 * `ChildPauses.test.ts`, Postgres in `test/pg/childPauses.test.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { type Duration, Effect, Exit, Fiber, type Layer, Option } from "effect"
import type { Placement } from "../../../src/runtime/Children.ts"
import type { ExecutionOutput, PendingPause } from "../../../src/runtime/Baton.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Harness from "../../../src/testing/Harness.ts"

export interface AskLog {
  /** Each time the child's `ask` step ran past its pause: `<item>:<answer>@<instance>`. */
  readonly answered: Array<string>
  /** Each start of the child's `work` step (after the answer): its instance. */
  readonly worked: Array<string>
}

const ChildState = Annotation.Root({ item: Annotation<string>(), answer: Annotation<string>() })

/** ask (pauses with `{ question }`) → work (`workFor` on the Clock) → END. */
export const askingChild = (log: AskLog, workFor: Duration.Input = "1 second") =>
  Workflow.make({
    name: "asking-child",
    version: "1",
    graph: new StateGraph(ChildState)
      .addNode("ask", Workflow.step(async (s: typeof ChildState.State, ctx) => {
        const answer = String(interrupt({ question: `${s.item}?` }))
        log.answered.push(`${s.item}:${answer}@${ctx.instanceId}`)
        return { answer: `${s.item}:${answer}` }
      }))
      .addNode("work", Workflow.effectStep((_s: typeof ChildState.State, ctx) =>
        Effect.sync(() => log.worked.push(ctx.instanceId)).pipe(Effect.andThen(Effect.sleep(workFor)), Effect.as({}))
      ))
      .addEdge(START, "ask")
      .addEdge("ask", "work")
      .addEdge("work", END)
  })

const ParentState = Annotation.Root({ items: Annotation<Array<string>>(), answers: Annotation<Array<string>>() })

/** fan: launches one child per item with `placement` and keeps their answers (flattened, in launch order). */
export const fanning = (name: string, child: Workflow.AnyWorkflow, placement: Placement) =>
  Workflow.make({
    name,
    version: "1",
    children: [child],
    graph: new StateGraph(ParentState)
      .addNode("fan", Workflow.step(async (s: typeof ParentState.State, ctx) => {
        const outs = await ctx.launch(child, s.items.map((item) => ({ item, items: [item] })), { placement })
        return { answers: outs.flatMap((o) => (o as { answer?: string; answers?: Array<string> }).answers ?? [(o as { answer: string }).answer]) }
      }))
      .addEdge(START, "fan")
      .addEdge("fan", END)
  })

const advanceUntil = (h: Harness.Harness, step: Duration.Input, max: number, done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < max && !done(); i++) yield* h.advance(step)
  })

/** Runs a call on instance `i` and moves the Clock until it answered. */
const settled = <A, E>(h: Harness.Harness, i: number, f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>, max = 60) =>
  Effect.gen(function*() {
    const fiber = yield* h.run(i, f)
    yield* advanceUntil(h, "1 second", max, () => fiber.pollUnsafe() !== undefined)
    return yield* Fiber.join(fiber)
  })

const pausedOf = (out: ExecutionOutput): ReadonlyArray<PendingPause> => {
  assert.strictEqual(out._tag, "Paused")
  return (out as Extract<ExecutionOutput, { _tag: "Paused" }>).pauses
}

const answersOf = (out: ExecutionOutput) => {
  assert.strictEqual(out._tag, "Finished")
  return (out as { output: { answers: Array<string> } }).output.answers
}

const recordOf = (tenantId: string, executionId: string) =>
  Effect.map(RecordStore.use((r) => r.getRecord(tenantId, executionId)), Option.getOrUndefined)

/** Registers the cases for one backend. */
export const childPauseCases = <E>(backend: string, stores: () => Layer.Layer<Harness.HarnessStores, E>) =>
  describe(`a child's pause reaches the parent's caller on ${backend}`, () => {
    it.effect("placement any, the child on another instance: the parent's caller sees the child's pause as its own (output, status, pendingPauses), the parent rests without a lease, a resume by that pause id goes to the child through the queue and the tree finishes", () =>
      Effect.gen(function*() {
        const log: AskLog = { answered: [], worked: [] }
        const child = askingChild(log)
        const parent = fanning("asking-parent", child, "any")
        // 0 launches only: the child runs on 1
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] }, instanceOptions: (i) => (i === 0 ? { maxClaimedChildren: 0 } : {}) })
        const out = yield* settled(h, 0, (b) => b.execute(parent, { items: ["a"], answers: [] }))
        const [pause, ...more] = pausedOf(out)
        assert.strictEqual(more.length, 0)
        assert.deepStrictEqual(pause!.payload, { question: "a?" })
        assert.strictEqual(pause!.child?.workflowName, "asking-child")
        assert.strictEqual(pause!.child?.depth, 2)
        assert.strictEqual(pause!.child?.pauseId, pause!.pauseId)
        assert.notStrictEqual(pause!.child?.executionId, out.executionId)
        const status = yield* settled(h, 1, (b) => b.status(out.executionId))
        assert.strictEqual(status.status, "Paused")
        assert.deepStrictEqual(status.pendingPauses.map((p) => [p.pauseId, p.executionId, p.threadId, p.child?.executionId]), [
          [pause!.pauseId, out.executionId, out.threadId, pause!.child!.executionId]
        ])
        const listed = yield* settled(h, 1, (b) => b.pendingPauses({ threadId: out.threadId }))
        assert.deepStrictEqual(listed.map((p) => [p.pauseId, p.child?.threadId]), [[pause!.pauseId, pause!.child!.threadId]])
        assert.isTrue(Option.isNone(yield* LeaseStore.use((l) => l.get(out.tenantId, out.executionId))), "the parent rests without a lease")
        const done = yield* settled(h, 0, (b) => b.resume({ pauseId: pause!.pauseId, decision: "yes" }))
        assert.strictEqual(done.executionId, out.executionId, "the resume answers the parent's output")
        assert.deepStrictEqual(answersOf(done), ["a:yes"])
        assert.deepStrictEqual(log.answered, ["a:yes@instance-1"], "the child went on where the queue put it")
        assert.strictEqual((yield* recordOf(out.tenantId, pause!.child!.executionId))?.status, "Finished")
      }).pipe(Effect.provide(stores())))

    it.effect("placement parent: the parent rests too (no lease), the child's pause is the parent's, and the answer continues the child inside the parent's step", () =>
      Effect.gen(function*() {
        const log: AskLog = { answered: [], worked: [] }
        const child = askingChild(log)
        const parent = fanning("asking-parent-inline", child, "parent")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const out = yield* settled(h, 0, (b) => b.execute(parent, { items: ["a", "b"], answers: [] }))
        const pauses = pausedOf(out)
        assert.deepStrictEqual(pauses.map((p) => p.payload), [{ question: "a?" }, { question: "b?" }])
        assert.isTrue(pauses.every((p) => p.child?.depth === 2))
        assert.isTrue(Option.isNone(yield* LeaseStore.use((l) => l.get(out.tenantId, out.executionId))), "the parent rests without a lease")
        // the first answer moves one child; the parent rests again on the other
        const half = yield* settled(h, 1, (b) => b.resume({ pauseId: pauses[0]!.pauseId, decision: "1" }))
        assert.deepStrictEqual(pausedOf(half).map((p) => p.pauseId), [pauses[1]!.pauseId])
        const done = yield* settled(h, 1, (b) => b.resume({ pauseId: pauses[1]!.pauseId, decision: "2" }))
        assert.deepStrictEqual(answersOf(done), ["a:1", "b:2"])
        assert.deepStrictEqual(log.answered, ["a:1@instance-1", "b:2@instance-1"], "each child continued once, on the resuming instance")
      }).pipe(Effect.provide(stores())))

    for (const [top, mid] of [["any", "parent"], ["parent", "any"], ["any", "any"]] as const) {
      it.effect(`nested (root ${top} → child ${mid} → grandchild): the grandchild's pause reaches the root's caller and its answer finishes the tree`, () =>
        Effect.gen(function*() {
          const log: AskLog = { answered: [], worked: [] }
          const leaf = askingChild(log)
          const middle = fanning("middle", leaf, mid)
          const root = fanning("root", middle, top)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [root] } })
          const out = yield* settled(h, 0, (b) => b.execute(root, { items: ["x"], answers: [] }))
          const [pause] = pausedOf(out)
          assert.deepStrictEqual(pause!.payload, { question: "x?" })
          assert.strictEqual(pause!.child?.workflowName, "asking-child")
          assert.strictEqual(pause!.child?.depth, 3)
          const listed = yield* settled(h, 1, (b) => b.pendingPauses({ threadId: out.threadId }))
          assert.deepStrictEqual(listed.map((p) => p.pauseId), [pause!.pauseId])
          // awaited from the other instance meanwhile: it hands back the same pause
          const awaited = yield* settled(h, 1, (b) => b.await(out.executionId))
          assert.deepStrictEqual(pausedOf(awaited).map((p) => p.child?.pauseId), [pause!.pauseId])
          const done = yield* settled(h, 1, (b) => b.resume({ pauseId: pause!.pauseId, decision: "ok" }))
          assert.deepStrictEqual(answersOf(done), ["x:ok"])
          assert.strictEqual(log.answered.length, 1)
        }).pipe(Effect.provide(stores())))
    }

    it.effect("the child's instance dies after the answer, mid-step: another worker claims it again once its claim expired and the tree finishes", () =>
      Effect.gen(function*() {
        const log: AskLog = { answered: [], worked: [] }
        const child = askingChild(log, "45 seconds")
        const parent = fanning("asking-parent", child, "any")
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [parent] }, instanceOptions: (i) => (i === 0 ? { maxClaimedChildren: 0 } : {}) })
        const out = yield* settled(h, 0, (b) => b.execute(parent, { items: ["a"], answers: [] }))
        const [pause] = pausedOf(out)
        const resumed = yield* h.run(0, (b) => b.resume({ pauseId: pause!.pauseId, decision: "go" }))
        yield* advanceUntil(h, "1 second", 10, () => log.worked.length > 0)
        assert.strictEqual(log.worked.length, 1)
        const worker = log.worked[0]!
        yield* h.kill(worker === "instance-1" ? 1 : 2)
        yield* advanceUntil(h, "5 seconds", 40, () => resumed.pollUnsafe() !== undefined)
        assert.deepStrictEqual(answersOf(yield* Fiber.join(resumed)), ["a:go"])
        assert.strictEqual(log.worked.length, 2)
        assert.notStrictEqual(log.worked[1], worker, "the other worker finished it")
      }).pipe(Effect.provide(stores())))

    it.effect("the parent's instance dies after the answer while the inline child works: the recovery on another instance continues the parent and its child", () =>
      Effect.gen(function*() {
        const log: AskLog = { answered: [], worked: [] }
        const child = askingChild(log, "45 seconds")
        const parent = fanning("asking-parent-inline", child, "parent")
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
        const out = yield* settled(h, 0, (b) => b.execute(parent, { items: ["a"], answers: [] }))
        const [pause] = pausedOf(out)
        yield* h.run(0, (b) => b.resume({ pauseId: pause!.pauseId, decision: "go" }))
        yield* advanceUntil(h, "1 second", 10, () => log.worked.length > 0)
        assert.deepStrictEqual(log.worked, ["instance-0"])
        yield* h.kill(0)
        const done = yield* settled(h, 1, (b) => b.await(out.executionId), 120)
        assert.deepStrictEqual(answersOf(done), ["a:go"])
        assert.deepStrictEqual(log.worked, ["instance-0", "instance-1"])
      }).pipe(Effect.provide(stores())))

    for (const placement of ["any", "parent"] as const) {
      it.effect(`cancel of the parent while its child (placement ${placement}) rests at a pause ends both cancelled`, () =>
        Effect.gen(function*() {
          const log: AskLog = { answered: [], worked: [] }
          const child = askingChild(log)
          const parent = fanning("asking-parent", child, placement)
          const h = yield* Harness.make({ instances: 2, baton: { workflows: [parent] } })
          const out = yield* settled(h, 0, (b) => b.execute(parent, { items: ["a"], answers: [] }))
          const [pause] = pausedOf(out)
          const cancelled = yield* settled(h, 1, (b) => b.cancel(out.threadId))
          assert.isTrue(cancelled.cancelled)
          for (let i = 0; i < 120; i++) {
            if ((yield* recordOf(out.tenantId, pause!.child!.executionId))?.status === "Cancelled") break
            yield* h.advance("1 second")
          }
          assert.strictEqual((yield* recordOf(out.tenantId, out.executionId))?.status, "Cancelled")
          assert.strictEqual((yield* recordOf(out.tenantId, pause!.child!.executionId))?.status, "Cancelled")
          const late = yield* Effect.exit(settled(h, 0, (b) => b.resume({ pauseId: pause!.pauseId, decision: "late" })))
          assert.isTrue(Exit.isFailure(late), "the child's pause went with it")
          assert.deepStrictEqual(log.answered, [])
        }).pipe(Effect.provide(stores())))
    }

    it.effect("the owner check of the parent's thread holds for its child's pause: another owner's resume is refused", () =>
      Effect.gen(function*() {
        const log: AskLog = { answered: [], worked: [] }
        const child = askingChild(log)
        const parent = fanning("asking-parent", child, "any")
        const h = yield* Harness.make({ instances: 1, baton: { workflows: [parent] } })
        const out = yield* settled(h, 0, (b) => b.execute(parent, { items: ["a"], answers: [] }, { ownerId: "alice" }))
        const [pause] = pausedOf(out)
        const refused = yield* Effect.flip(settled(h, 0, (b) => b.resume({ pauseId: pause!.pauseId, decision: "no", ownerId: "mallory" })))
        assert.strictEqual(refused._tag, "ThreadOwnerError")
        const done = yield* settled(h, 0, (b) => b.resume({ pauseId: pause!.pauseId, decision: "yes", ownerId: "alice" }))
        assert.deepStrictEqual(answersOf(done), ["a:yes"])
      }).pipe(Effect.provide(stores())))
  })
