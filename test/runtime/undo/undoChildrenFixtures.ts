/**
 * A trip: step `a` (with an undo), step `b` launching three `leg` children
 * (each books with an undo) and step `c` that fails — or not — as the plan
 * says. Every undo try and every applied undo is logged (an undo counts
 * once per idempotency key, and only while its holder holds the lease).
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Clock, Duration, Effect } from "effect"
import type { Placement } from "../../../src/runtime/Children.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"

export interface TripPlan {
  readonly placement: Placement
  /** Whether step `c` fails. */
  readonly cFails: boolean
  /** Legs (by input) whose booking step fails. */
  readonly failingLegs: ReadonlySet<number>
  /** How long each leg's undo works on the Clock before it acts. */
  readonly undoSleep: Duration.Input
  /** How long each leg's booking works on the Clock. */
  readonly legWork: Duration.Input
  /** Per leg (by input), overriding `legWork`. */
  readonly legWorkOf: ReadonlyMap<number, Duration.Input>
  /** Whether step `a` declares an undo (without: the trip's only undos are its children's). */
  readonly aUndo: boolean
  /** How many legs step `b` launches (inputs 0, 1, …). */
  readonly legs: number
  /** The trip's cap on its legs running at once (`maxConcurrentExecutions`), if any. */
  readonly maxConcurrentExecutions?: number | undefined
}

export interface TripBook {
  readonly plan: TripPlan
  /** Step keys by name: `a`, `b`, `c`, `leg-<n>`. */
  readonly stepKeys: Map<string, string>
  readonly tries: Array<{ readonly who: string; readonly instanceId: string; readonly key: string; readonly executionId: string }>
  readonly undone: Array<{ readonly who: string; readonly instanceId: string; readonly key: string; readonly result: unknown; readonly reason: string }>
  readonly applied: Map<string, number>
}

export const makeTripBook = (plan: Partial<TripPlan> = {}): TripBook => ({
  plan: { placement: "any", cFails: true, failingLegs: new Set(), undoSleep: 0, legWork: "1 second", legWorkOf: new Map(), aUndo: true, legs: 3, ...plan },
  stepKeys: new Map(),
  tries: [],
  undone: [],
  applied: new Map()
})

const apply = (book: TripBook, who: string, result: unknown, ctx: Workflow.UndoContext) => {
  if (!ctx.leaseHeld()) return
  book.undone.push({ who, instanceId: ctx.instanceId, key: ctx.idempotencyKey, result, reason: ctx.reason })
  book.applied.set(ctx.idempotencyKey, (book.applied.get(ctx.idempotencyKey) ?? 0) + 1)
}

const LegState = Annotation.Root({
  n: Annotation<number>(),
  booked: Annotation<string>()
})

/** One step that books leg `n` (with an Effect undo working `undoSleep` on the Clock). */
export const legWorkflow = (book: TripBook) =>
  Workflow.make({
    name: "leg",
    version: "1",
    graph: new StateGraph(LegState)
      .addNode("book", Workflow.effectStep((s: { n: number }, ctx) =>
        Effect.gen(function*() {
          book.stepKeys.set(`leg-${s.n}`, ctx.idempotencyKey)
          yield* Effect.sleep(Duration.fromInputUnsafe(book.plan.legWorkOf.get(s.n) ?? book.plan.legWork)) // the Harness's TestClock
          if (book.plan.failingLegs.has(s.n)) return yield* Effect.fail(new Error(`leg ${s.n}: no seat`))
          return { booked: `leg-${s.n}` }
        }), {
        undo: (result: { booked: string }, ctx) =>
          Effect.gen(function*() {
            book.tries.push({ who: result.booked, instanceId: ctx.instanceId, key: ctx.idempotencyKey, executionId: ctx.executionId })
            yield* Effect.sleep(Duration.fromInputUnsafe(book.plan.undoSleep)) // the Harness's TestClock
            yield* Clock.currentTimeMillis
            apply(book, result.booked, result, ctx)
          })
      }))
      .addEdge(START, "book")
      .addEdge("book", END)
  })

const TripState = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** a (undo) → b (launches legs 0, 1, 2 — or as many as planned) → c (fails if planned). */
export const tripWorkflow = (book: TripBook) => {
  const leg = legWorkflow(book)
  return Workflow.make({
    name: `trip-${book.plan.placement}`,
    version: "1",
    maxConcurrentExecutions: book.plan.maxConcurrentExecutions,
    children: [leg],
    graph: new StateGraph(TripState)
      .addNode("a", Workflow.step(async (_s, ctx) => {
        book.stepKeys.set("a", ctx.idempotencyKey)
        return { log: ["a"] }
      }, book.plan.aUndo ? {
        undo: async (result, ctx) => {
          book.tries.push({ who: "a", instanceId: ctx.instanceId, key: ctx.idempotencyKey, executionId: ctx.executionId })
          apply(book, "a", result, ctx)
        }
      } : {}))
      .addNode("b", Workflow.step(async (_s, ctx) => {
        book.stepKeys.set("b", ctx.idempotencyKey)
        const outs = await ctx.launch(leg, Array.from({ length: book.plan.legs }, (_, n) => ({ n })), { placement: book.plan.placement })
        return { log: outs.map((o) => (o as { booked: string }).booked) }
      }))
      .addNode("c", Workflow.step(async (_s, ctx) => {
        book.stepKeys.set("c", ctx.idempotencyKey)
        if (book.plan.cFails) throw new Error("c boom: the hotel is full")
        return { log: ["c"] }
      }))
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", "c")
      .addEdge("c", END)
  })
}

/** Who was undone, in order. */
export const undoneWho = (book: TripBook) => book.undone.map((u) => u.who)

const MiddleState = Annotation.Root({
  m: Annotation<number>(),
  legs: Annotation<Array<string>>()
})

/**
 * Two levels: a (undo) → b launches middles 0 and 1 (placement "any") → c
 * fails. Each middle: x (undo, logged `x-<m>`) → y launches legs 10m and
 * 10m + 1 (placement "parent").
 */
export const nestedTripWorkflow = (book: TripBook) => {
  const leg = legWorkflow(book)
  const middle = Workflow.make({
    name: "middle",
    version: "1",
    children: [leg],
    graph: new StateGraph(MiddleState)
      .addNode("x", Workflow.step(async (s: { m: number }, ctx) => {
        book.stepKeys.set(`x-${s.m}`, ctx.idempotencyKey)
        return { legs: [] }
      }, {
        undo: async (_result, ctx) => {
          const who = [...book.stepKeys].find(([, k]) => k === ctx.stepIdempotencyKey)![0]
          book.tries.push({ who, instanceId: ctx.instanceId, key: ctx.idempotencyKey, executionId: ctx.executionId })
          apply(book, who, null, ctx)
        }
      }))
      .addNode("y", Workflow.step(async (s: { m: number }, ctx) => {
        const outs = await ctx.launch(leg, [{ n: s.m * 10 }, { n: s.m * 10 + 1 }], { placement: "parent" })
        return { legs: outs.map((o) => (o as { booked: string }).booked) }
      }))
      .addEdge(START, "x")
      .addEdge("x", "y")
      .addEdge("y", END)
  })
  return Workflow.make({
    name: "trip-nested",
    version: "1",
    children: [middle],
    graph: new StateGraph(TripState)
      .addNode("a", Workflow.step(async (_s, ctx) => {
        book.stepKeys.set("a", ctx.idempotencyKey)
        return { log: ["a"] }
      }, {
        undo: async (result, ctx) => {
          book.tries.push({ who: "a", instanceId: ctx.instanceId, key: ctx.idempotencyKey, executionId: ctx.executionId })
          apply(book, "a", result, ctx)
        }
      }))
      .addNode("b", Workflow.step(async (_s, ctx) => {
        await ctx.launch(middle, [{ m: 0 }, { m: 1 }], { placement: "any" })
        return { log: ["b"] }
      }))
      .addNode("c", Workflow.step(async () => {
        throw new Error("c boom: the hotel is full")
      }))
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", "c")
      .addEdge("c", END)
  })
}
