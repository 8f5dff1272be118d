/**
 * What the schedule tests share: the memory stores, the workflows, and reads
 * of what the ticks started.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Effect, Option } from "effect"
import * as Schedules from "../../../src/runtime/Schedules.ts"
import * as Workflow from "../../../src/runtime/Workflow.ts"
import { LeaseStore } from "../../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../../src/stores/RecordStore.ts"
import * as Leader from "../../../src/runtime/Leader.ts"
import { leaderName } from "../../../src/runtime/internal/schedules/Firing.ts"

export { memoryStores } from "../fixtures.ts"

const State = Annotation.Root({ log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }) })

/** One step, then the end. */
export const report = Workflow.make({
  name: "report",
  version: "1",
  graph: new StateGraph(State)
    .addNode("only", Workflow.step(async () => ({ log: ["only"] })))
    .addEdge(START, "only")
    .addEdge("only", END)
})

/** Pauses at its first step: it "still runs" until answered. */
export const waiting = Workflow.make({
  name: "waiting",
  version: "1",
  graph: new StateGraph(State)
    .addNode("ask", Workflow.step(async () => ({ log: [String(interrupt({ question: "go?" }))] })))
    .addEdge(START, "ask")
    .addEdge("ask", END)
})

export const hour = 60 * 60 * 1000
export const minute = 60 * 1000

/** The schedules API over the (ungated) store of the test. */
export const api = Schedules.make

/** Every root execution of the tenant, oldest first. */
export const executionsOf = (tenantId: string) =>
  Effect.gen(function*() {
    const records = yield* RecordStore
    const found = yield* records.findByStatus("Running", 1000, Option.none())
    const all = [...found]
    for (const status of ["Paused", "Finished", "Failed", "Cancelled"] as const) all.push(...(yield* records.findByStatus(status, 1000, Option.none())))
    return all.filter((r) => r.tenantId === tenantId && r.executionId === r.rootExecutionId).sort((a, b) => a.createdAt - b.createdAt)
  })

/** The index of the instance holding the schedules leader lease now (undefined when none does). */
export const leaderIndex = Effect.map(
  LeaseStore.use((s) => s.get(Leader.leaderTenant, Leader.leaseKey(leaderName))),
  (lease) => Option.match(lease, { onNone: () => undefined, onSome: (l) => Number(/^instance-(\d+)/.exec(l.holder)?.[1]) })
)
