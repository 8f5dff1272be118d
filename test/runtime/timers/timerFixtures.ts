/**
 * Workflows the sleep and signal tests run: a step that sleeps, a node form
 * sleeping until an instant, and a step that waits for a signal.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { type Duration, Effect, Schema } from "effect"
import * as Workflow from "../../../src/runtime/Workflow.ts"

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  got: Annotation<unknown>()
})

/** How often each step body got past its wait, by node and instance. */
export interface Runs {
  readonly at: Array<{ readonly node: string; readonly instanceId: string }>
}

/** before → nap (sleeps `napFor`, then notes when it woke) → after. */
export const napper = (runs: Runs, napFor: Duration.Input = "1 hour", name = "napper") =>
  Workflow.make({
    name,
    version: "1",
    graph: new StateGraph(State)
      .addNode("before", Workflow.step(async () => ({ log: ["before"] })))
      .addNode("nap", Workflow.step(async (_s, ctx) => {
        await ctx.sleep(napFor)
        runs.at.push({ node: "nap", instanceId: ctx.instanceId })
        return { log: ["woke"] }
      }))
      .addNode("after", Workflow.step(async () => ({ log: ["after"] })))
      .addEdge(START, "before").addEdge("before", "nap").addEdge("nap", "after").addEdge("after", END)
  })

/** A graph with `Workflow.sleepNode` until the instant in the input, then a step. */
export const sleepsUntil = Workflow.make({
  name: "sleeps-until",
  version: "1",
  graph: new StateGraph(Annotation.Root({ until: Annotation<number>(), log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) }))
    .addNode("wait", Workflow.sleepNode<{ until: number }>({ until: (s) => s.until }))
    .addNode("done", Workflow.step(async () => ({ log: ["done"] })))
    .addEdge(START, "wait").addEdge("wait", "done").addEdge("done", END)
})

/** The signals `approver` takes. */
export const Approve = Schema.Struct({ by: Schema.String })

/** ask → wait (for "approve", with `timeout`) → record what it got. Declares "approve" and "note". */
export const approver = (timeout?: Duration.Input, name = "approver") =>
  Workflow.make({
    name,
    version: "1",
    signals: { approve: Approve, note: Schema.String },
    graph: new StateGraph(State)
      .addNode("ask", Workflow.step(async () => ({ log: ["ask"] })))
      .addNode("wait", Workflow.step(async (_s, ctx) => {
        const answer = await ctx.waitFor<{ by: string }>("approve", timeout === undefined ? undefined : { timeout })
        return { got: answer, log: [answer._tag] }
      }))
      .addEdge(START, "ask").addEdge("ask", "wait").addEdge("wait", END)
  })

/** Waits for "note" three times in one step: the payloads in the order they came. */
export const collector = Workflow.make({
  name: "collector",
  version: "1",
  signals: { note: Schema.String },
  graph: new StateGraph(State)
    .addNode("collect", Workflow.step(async (_s, ctx) => {
      const got: Array<unknown> = []
      for (let i = 0; i < 3; i++) {
        const r = await ctx.waitFor<string>("note")
        got.push(r._tag === "Received" ? r.payload : "timeout")
      }
      return { got }
    }))
    .addEdge(START, "collect").addEdge("collect", END)
})

/** Like `approver`, but its first step takes 10 s (on the Clock): a signal sent meanwhile comes before the wait. */
export const slowApprover = Workflow.make({
  name: "slow-approver",
  version: "1",
  signals: { approve: Approve },
  graph: new StateGraph(State)
    .addNode("ask", Workflow.effectStep(() => Effect.as(Effect.sleep("10 seconds"), { log: ["ask"] })))
    .addNode("wait", Workflow.step(async (_s, ctx) => {
      const answer = await ctx.waitFor<{ by: string }>("approve")
      return { got: answer, log: [answer._tag] }
    }))
    .addEdge(START, "ask").addEdge("ask", "wait").addEdge("wait", END)
})
