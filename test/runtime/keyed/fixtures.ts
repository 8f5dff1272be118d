/**
 * Workflows of the keyed-start tests: a job that works for a while on the
 * Clock and logs when each run of it begins and ends, and one that pauses.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Duration, Effect, Option, Schema } from "effect"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"

const State = Annotation.Root({
  n: Annotation<number>(),
  done: Annotation<number>()
})

/** What the job's runs did, in order. */
export interface JobLog {
  /** `n` of each run of the work step as it began (a step run again after a takeover is listed again). */
  readonly began: Array<number>
  /** The runs in their step right now (by `n`). */
  readonly inStep: Set<number>
  /** The most runs in their step at once. */
  max: number
}

export const makeLog = (): JobLog => ({ began: [], inStep: new Set(), max: 0 })

/** One step that works `workFor` on the Clock, then answers `done: n`. */
export const job = (log: JobLog, workFor: Duration.Input = "10 seconds", name = "keyed-job") =>
  Workflow.make({
    name,
    version: "1",
    input: Schema.Struct({ n: Schema.Number }),
    graph: new StateGraph(State)
      .addNode("work", Workflow.effectStep((s: typeof State.State) =>
        Effect.gen(function*() {
          log.began.push(s.n)
          log.inStep.add(s.n)
          log.max = Math.max(log.max, log.inStep.size)
          // On the step's Clock: the Harness's TestClock, moved by the tests (`TestClock.adjust`); no real time passes.
          yield* Effect.sleep(Duration.fromInputUnsafe(workFor))
          return { done: s.n }
        }).pipe(Effect.ensuring(Effect.sync(() => log.inStep.delete(s.n))))
      ))
      .addEdge(START, "work")
      .addEdge("work", END)
  })

/** One step that pauses for an answer, then answers `done: n`. */
export const asking = Workflow.make({
  name: "keyed-asking",
  version: "1",
  input: Schema.Struct({ n: Schema.Number }),
  graph: new StateGraph(State)
    .addNode("ask", Workflow.step(async (s: typeof State.State) => {
      interrupt({ question: `go on with ${s.n}?` })
      return { done: s.n }
    }))
    .addEdge(START, "ask")
    .addEdge("ask", END)
})

/** The statuses of the executions, read from the records. */
export const statuses = (tenantId: string, ids: ReadonlyArray<string>) =>
  RecordStore.use((records) =>
    Effect.forEach(ids, (id) => Effect.map(records.getRecord(tenantId, id), (r) => Option.match(r, { onNone: () => "Gone", onSome: (x) => x.status })))
  )
