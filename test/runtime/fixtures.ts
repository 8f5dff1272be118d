/**
 * Workflows the runtime tests run, with a side-effect log keyed by
 * idempotency key (a side effect counts once per key, however often its
 * step runs).
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { assert } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Option } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as MemoryState from "../../layers/memory/MemoryState.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as MemoryStores from "../../layers/memory/MemoryStores.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import type * as Harness from "../../src/testing/Harness.ts"

export interface SideEffects {
  /** Every run of a step: node name and instance. */
  readonly runs: Array<{ readonly node: string; readonly instanceId: string; readonly key: string }>
  /** Side effects applied, by idempotency key: applied once per key. */
  readonly applied: Map<string, number>
  readonly apply: (key: string) => void
}

export const makeSideEffects = (): SideEffects => {
  const applied = new Map<string, number>()
  return {
    runs: [],
    applied,
    apply: (key) => {
      if (!applied.has(key)) applied.set(key, 1)
      else applied.set(key, applied.get(key)! + 1)
    }
  }
}

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** One step ("only"), then the end: the least a run can be. */
export const oneStep = Workflow.make({
  name: "one-step",
  version: "1",
  graph: new StateGraph(State)
    .addNode("only", Workflow.step(async () => ({ log: ["only"] })))
    .addEdge(START, "only")
    .addEdge("only", END)
})

/** draft → approve (pauses) → send. */
export const approval = (fx: SideEffects) =>
  Workflow.make({
    name: "approval",
    version: "1",
    graph: new StateGraph(State)
      .addNode("draft", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "draft", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        return { log: ["draft"] }
      }))
      .addNode("approve", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "approve", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        const decision = interrupt({ question: "send it?" })
        return { log: [`approved:${String(decision)}`] }
      }))
      .addNode("send", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "send", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        fx.apply(ctx.idempotencyKey)
        return { log: ["sent"] }
      }))
      .addEdge(START, "draft")
      .addEdge("draft", "approve")
      .addEdge("approve", "send")
      .addEdge("send", END)
  })

/** first → slow (sleeps `slowFor` on the Clock, then applies its side effect) → last. */
export const slow = (fx: SideEffects, slowFor: Duration.Input = "45 seconds") =>
  Workflow.make({
    name: "slow",
    version: "1",
    graph: new StateGraph(State)
      .addNode("first", Workflow.effectStep((_s, ctx) =>
        Effect.sync(() => {
          fx.runs.push({ node: "first", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
          fx.apply(ctx.idempotencyKey)
          return { log: ["first"] }
        })
      ))
      .addNode("slow", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          fx.runs.push({ node: "slow", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
          yield* Effect.sleep(Duration.fromInputUnsafe(slowFor))
          fx.apply(ctx.idempotencyKey)
          return { log: ["slow"] }
        })
      ))
      .addNode("last", Workflow.effectStep((_s, ctx) =>
        Effect.sync(() => {
          fx.runs.push({ node: "last", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
          fx.apply(ctx.idempotencyKey)
          return { log: ["last"] }
        })
      ))
      .addEdge(START, "first")
      .addEdge("first", "slow")
      .addEdge("slow", "last")
      .addEdge("last", END)
  })

/** fork → left and right pause at once → join. */
export const parallel = (fx: SideEffects) =>
  Workflow.make({
    name: "parallel",
    version: "1",
    graph: new StateGraph(State)
      .addNode("fork", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "fork", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        return { log: ["fork"] }
      }))
      .addNode("left", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "left", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        const d = interrupt({ side: "left" })
        fx.apply(ctx.idempotencyKey)
        return { log: [`left:${String(d)}`] }
      }))
      .addNode("right", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "right", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        const d = interrupt({ side: "right" })
        fx.apply(ctx.idempotencyKey)
        return { log: [`right:${String(d)}`] }
      }))
      .addNode("join", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "join", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        fx.apply(ctx.idempotencyKey)
        return { log: ["join"] }
      }))
      .addEdge(START, "fork")
      .addEdge("fork", "left")
      .addEdge("fork", "right")
      .addEdge(["left", "right"], "join")
      .addEdge("join", END)
  })

/** Memory stores with reproducible ids. */
export const memoryStores = MemoryStores.layerOnState.pipe(
  Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layerSequential))
)

/** fork → left (pauses, then works `slowFor` on the Clock) and right (pauses) → join. */
export const slowBranch = (fx: SideEffects, slowFor: Duration.Input = "45 seconds") =>
  Workflow.make({
    name: "slow-branch",
    version: "1",
    graph: new StateGraph(State)
      .addNode("fork", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "fork", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        return { log: ["fork"] }
      }))
      .addNode("left", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          const d = interrupt({ side: "left" })
          fx.runs.push({ node: "left", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
          yield* Effect.sleep(Duration.fromInputUnsafe(slowFor))
          fx.apply(ctx.idempotencyKey)
          return { log: [`left:${String(d)}`] }
        })
      ))
      .addNode("right", Workflow.step(async (_s, ctx) => {
        const d = interrupt({ side: "right" })
        fx.runs.push({ node: "right", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        fx.apply(ctx.idempotencyKey)
        return { log: [`right:${String(d)}`] }
      }))
      .addNode("join", Workflow.step(async (_s, ctx) => {
        fx.runs.push({ node: "join", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
        fx.apply(ctx.idempotencyKey)
        return { log: ["join"] }
      }))
      .addEdge(START, "fork")
      .addEdge("fork", "left")
      .addEdge("fork", "right")
      .addEdge(["left", "right"], "join")
      .addEdge("join", END)
  })

/** A fresh SQLite file per test (one connection shared by the harness's instances), removed afterwards. */
export const sqliteStores = Layer.unwrap(
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-runtime-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => SqliteStores.layer({ path: Path.join(dir, "stores.sqlite"), busyTimeout: 0 })))
)

/** The backends every runtime test runs on. */
export const backends = [
  { name: "memory", stores: memoryStores },
  { name: "sqlite", stores: sqliteStores }
] as const

/** The `_tag` of an exit's typed error, or "Success" (undefined for a defect or an interruption). */
export const errorTag = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit) as Option.Option<{ _tag: string }>)?._tag : "Success"

/** An execution's record as stored now. */
export const recordOf = (tenantId: string, executionId: string) =>
  RecordStore.use((r) => r.getRecord(tenantId, executionId)).pipe(Effect.map(Option.getOrUndefined))

export const statusOf = (tenantId: string, executionId: string) => Effect.map(recordOf(tenantId, executionId), (r) => r?.status)

/** A tree's lease as stored now (undefined once released). */
export const leaseOf = (tenantId: string, root: string) =>
  LeaseStore.use((s) => s.get(tenantId, root)).pipe(Effect.map(Option.getOrUndefined))

/** The one Running execution of the test (fails the test if there is not exactly one). */
export const theRunningRoot = RecordStore.use((r) => r.findByStatus("Running", 10, Option.none())).pipe(
  Effect.map((running) => {
    assert.strictEqual(running.length, 1, "exactly one running execution")
    return running[0]!
  })
)

/** A workflow no test's parent launches: an instance registering only it can run none of the children. */
export const unrelated = Workflow.make({
  name: "unrelated",
  version: "1",
  graph: new StateGraph(Annotation.Root({ x: Annotation<number>() }))
    .addNode("noop", Workflow.step(async () => ({ x: 1 })))
    .addEdge(START, "noop")
    .addEdge("noop", END)
})

/**
 * approve (pauses) → work (`workFor` on the Clock, noting its run, then its
 * side effect) → end: a tree that goes on working after its pause was answered.
 */
export const approveThenWork = (fx: SideEffects, workFor: Duration.Input = "45 seconds", name = "approve-then-work") =>
  Workflow.make({
    name,
    version: "1",
    graph: new StateGraph(State)
      .addNode("approve", Workflow.step(async () => ({ log: [`approved:${String(interrupt({ q: "go?" }))}`] })))
      .addNode("work", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          fx.runs.push({ node: "work", instanceId: ctx.instanceId, key: ctx.idempotencyKey })
          yield* Effect.sleep(workFor) // the Harness's TestClock
          fx.apply(ctx.idempotencyKey)
          return { log: ["worked"] }
        })
      ))
      .addEdge(START, "approve")
      .addEdge("approve", "work")
      .addEdge("work", END)
  })

/** A pass's pause save as the store sees it: fenced, or (a backend without it) plain. */
export const isPauseSave = (call: Harness.StoreCall) => call.operation === "baton/PauseStore.saveFenced" || call.operation === "baton/PauseStore.save"

/**
 * A `beforeStoreCall` that stops instance `index` once (`how`: freeze or
 * kill it): at its first store call `match` accepts, or — `after` — at its
 * first store call after that one (which then ran). `matched` runs as the
 * matching call is seen. `attach` the Harness once it is made; `call` is the
 * matching call, `stopped` whether it stopped the instance.
 */
export const stopOnce = (
  index: number,
  match: (call: Harness.StoreCall) => boolean,
  options: { readonly how?: "freeze" | "kill"; readonly after?: boolean; readonly matched?: () => void } = {}
) => {
  const state: { h?: Harness.Harness; call?: Harness.StoreCall; stopped: boolean } = { stopped: false }
  const stop = (h: Harness.Harness) => {
    state.stopped = true
    // A valid index: this instance made the call.
    return Effect.orDie(options.how === "kill" ? h.kill(index) : h.freeze(index))
  }
  return {
    beforeStoreCall: (call: Harness.StoreCall) =>
      Effect.suspend(() => {
        if (state.stopped || state.h === undefined || call.index !== index) return Effect.void
        if (state.call !== undefined) return stop(state.h)
        if (!match(call)) return Effect.void
        state.call = call
        options.matched?.()
        return options.after ? Effect.void : stop(state.h)
      }),
    attach: (h: Harness.Harness) => {
      state.h = h
    },
    get call() {
      return state.call
    },
    get stopped() {
      return state.stopped
    }
  }
}

/** {@link stopOnce} freezing instance `index` at its first store call `match` accepts. */
export const freezeOnce = (index: number, match: (call: Harness.StoreCall) => boolean) => stopOnce(index, match)
