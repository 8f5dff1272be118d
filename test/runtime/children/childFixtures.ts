/**
 * Workflows for the child-execution tests: a child that works on the Clock
 * and counts how many children run at once on each instance, and a parent
 * that fans out to it.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { Duration, Effect } from "effect"
import type { Placement } from "../../../src/runtime/Children.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"

export interface ChildLog {
  /** Every run of the child's step: its input and instance. */
  readonly runs: Array<{ readonly n: number; readonly instanceId: string }>
  /** Children at work now, per instance. */
  readonly now: Map<string, number>
  /** The most children at work at once, per instance. */
  readonly max: Map<string, number>
  /** Side effects by idempotency key. */
  readonly applied: Map<string, number>
  /** Inputs whose child fails. */
  readonly failing: Set<number>
  /** The most children at work at once, over every instance. */
  peak: number
}

export const makeChildLog = (): ChildLog => ({ runs: [], now: new Map(), max: new Map(), applied: new Map(), failing: new Set(), peak: 0 })

const ChildState = Annotation.Root({
  n: Annotation<number>(),
  doubled: Annotation<number>()
})

/** One step that works `workFor` on the Clock, then doubles its input. */
export const childWorkflow = (log: ChildLog, workFor: Duration.Input = "5 seconds") =>
  Workflow.make({
    name: "child",
    version: "1",
    graph: new StateGraph(ChildState)
      .addNode("work", Workflow.effectStep((s: { n: number }, ctx) =>
        Effect.gen(function*() {
          log.runs.push({ n: s.n, instanceId: ctx.instanceId })
          const at = (log.now.get(ctx.instanceId) ?? 0) + 1
          log.now.set(ctx.instanceId, at)
          log.max.set(ctx.instanceId, Math.max(log.max.get(ctx.instanceId) ?? 0, at))
          log.peak = Math.max(log.peak, [...log.now.values()].reduce((a, b) => a + b, 0))
          yield* Effect.sleep(Duration.fromInputUnsafe(workFor)).pipe( // the Harness's TestClock
            Effect.ensuring(Effect.sync(() => log.now.set(ctx.instanceId, log.now.get(ctx.instanceId)! - 1)))
          )
          if (log.failing.has(s.n)) return yield* Effect.die(new Error(`child ${s.n} broke`))
          log.applied.set(ctx.idempotencyKey, (log.applied.get(ctx.idempotencyKey) ?? 0) + 1)
          return { doubled: s.n * 2 }
        })
      ))
      .addEdge(START, "work")
      .addEdge("work", END)
  })

const ParentState = Annotation.Root({
  count: Annotation<number>(),
  results: Annotation<Array<number>>(),
  failed: Annotation<string>(),
  total: Annotation<number>()
})

export interface ParentLog {
  readonly fans: Array<string>
  readonly afters: Array<string>
}

/** fan (launches `count` children, catching a failure) → after. */
export const parentWorkflow = (
  child: ReturnType<typeof childWorkflow>,
  placement: Placement,
  log: ParentLog = { fans: [], afters: [] },
  maxConcurrentExecutions?: number
) =>
  Workflow.make({
    name: `parent-${placement}`,
    version: "1",
    maxConcurrentExecutions,
    children: [child],
    graph: new StateGraph(ParentState)
      .addNode("fan", Workflow.step(async (s: { count: number }, ctx) => {
        log.fans.push(ctx.instanceId)
        const inputs = Array.from({ length: s.count }, (_, n) => ({ n }))
        try {
          const outs = await ctx.launch(child, inputs, { placement })
          return { results: outs.map((o) => (o as { doubled: number }).doubled) }
        } catch (e) {
          if ((e as { _tag?: string })._tag === "ChildExecutionsFailedError") return { failed: (e as Error).message, results: [] }
          throw e
        }
      }))
      .addNode("after", Workflow.step(async (s: { results: Array<number> }, ctx) => {
        log.afters.push(ctx.instanceId)
        return { total: s.results.length }
      }))
      .addEdge(START, "fan")
      .addEdge("fan", "after")
      .addEdge("after", END)
  })
