/**
 * A booking workflow whose first three steps register undos, and a fourth
 * step that fails, pauses or works slowly as the test's plan says; every
 * undo try and every applied undo is logged (an undo counts once per
 * idempotency key, and only while its holder still holds the lease).
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Clock, Duration, Effect } from "effect"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { TreeStore } from "../../../src/stores/TreeStore.ts"

export interface UndoPlan {
  /** What the fourth step does after `s4Sleep`: fail, pause, or finish. */
  s4: "fail" | "pause" | "finish"
  s4Sleep: Duration.Input
  /** How long each Effect undo (s2, s3) works on the Clock before it acts. */
  undoSleep: Duration.Input
  /** How many tries of a node's undo fail (Infinity: all). */
  readonly failTries: Map<string, number>
}

export interface UndoBook {
  readonly plan: UndoPlan
  /** Each step's idempotency key, by node. */
  readonly stepKeys: Map<string, string>
  /** Every try of an undo (started). */
  readonly tries: Array<{ readonly node: string; readonly instanceId: string; readonly attempt: number; readonly at: number; readonly key: string }>
  /** Every undo applied: its node, undo key, instance, reason and the step result it got. */
  readonly undone: Array<{ readonly node: string; readonly key: string; readonly instanceId: string; readonly reason: string; readonly result: unknown }>
  /** Undos applied per undo idempotency key. */
  readonly applied: Map<string, number>
}

export const makeBook = (plan: Partial<UndoPlan> = {}): UndoBook => ({
  plan: { s4: "fail", s4Sleep: 0, undoSleep: 0, failTries: new Map(), ...plan },
  stepKeys: new Map(),
  tries: [],
  undone: [],
  applied: new Map()
})

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

const tryUndo = (book: UndoBook, node: string, ctx: Workflow.UndoContext, at: number) => {
  book.tries.push({ node, instanceId: ctx.instanceId, attempt: ctx.attempt, at, key: ctx.idempotencyKey })
}

/** Applies the undo (once per key) if the try is not planned to fail and the lease is held. */
const applyUndo = (book: UndoBook, node: string, result: unknown, ctx: Workflow.UndoContext) => {
  const tries = book.tries.filter((t) => t.node === node).length
  if (tries <= (book.plan.failTries.get(node) ?? 0)) throw new Error(`undo of ${node} refused (try ${tries})`)
  if (!ctx.leaseHeld()) return
  book.undone.push({ node, key: ctx.idempotencyKey, instanceId: ctx.instanceId, reason: ctx.reason, result })
  book.applied.set(ctx.idempotencyKey, (book.applied.get(ctx.idempotencyKey) ?? 0) + 1)
}

const effectUndo = (book: UndoBook, node: string) => (result: { log: Array<string> }, ctx: Workflow.UndoContext) =>
  Effect.gen(function*() {
    tryUndo(book, node, ctx, yield* Clock.currentTimeMillis)
    // An Effect undo runs with the instance's services (here the TreeStore it was given).
    yield* (yield* TreeStore).ping
    yield* Effect.sleep(Duration.fromInputUnsafe(book.plan.undoSleep)) // the Harness's TestClock
    yield* Effect.try({ try: () => applyUndo(book, node, result, ctx), catch: (e) => e as Error })
  })

/** s1 (plain step, plain undo) → s2, s3 (Effect steps, Effect undos) → s4 (as planned). */
export const booking = (book: UndoBook) =>
  Workflow.make({
    name: "booking",
    version: "1",
    graph: new StateGraph(State)
      .addNode("s1", Workflow.step(async (_s, ctx) => {
        book.stepKeys.set("s1", ctx.idempotencyKey)
        return { log: ["s1"] }
      }, {
        undo: async (result, ctx) => {
          tryUndo(book, "s1", ctx, 0)
          applyUndo(book, "s1", result, ctx)
        }
      }))
      .addNode("s2", Workflow.effectStep((_s, ctx) => Effect.sync(() => {
        book.stepKeys.set("s2", ctx.idempotencyKey)
        return { log: ["s2"] }
      }), { undo: effectUndo(book, "s2") }))
      .addNode("s3", Workflow.effectStep((_s, ctx) => Effect.sync(() => {
        book.stepKeys.set("s3", ctx.idempotencyKey)
        return { log: ["s3"] }
      }), { undo: effectUndo(book, "s3") }))
      .addNode("s4", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          book.stepKeys.set("s4", ctx.idempotencyKey)
          yield* Effect.sleep(Duration.fromInputUnsafe(book.plan.s4Sleep)) // the Harness's TestClock
          if (book.plan.s4 === "pause") return { log: [`s4:${String(interrupt({ q: "go on?" }))}`] }
          if (book.plan.s4 === "fail") return yield* Effect.fail(new Error("s4 boom: no seat left"))
          return { log: ["s4"] }
        })
      ))
      .addEdge(START, "s1")
      .addEdge("s1", "s2")
      .addEdge("s2", "s3")
      .addEdge("s3", "s4")
      .addEdge("s4", END)
  })

/** The nodes whose undos were applied, in order. */
export const undoneNodes = (book: UndoBook) => book.undone.map((u) => u.node)
