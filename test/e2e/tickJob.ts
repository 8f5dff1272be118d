/**
 * The workflow of the schedule test of real processes: one step that tells `say` it ran.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import * as Workflow from "../../src/runtime/Workflow.ts"

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

export const tickJob = (say: (line: string) => void) =>
  Workflow.make({
    name: "tick-job",
    version: "1",
    graph: new StateGraph(State)
      .addNode("only", Workflow.step(async (_s, ctx) => {
        say(`run ${ctx.threadId} ${Date.now()}`)
        return { log: ["only"] }
      }))
      .addEdge(START, "only")
      .addEdge("only", END)
  })
