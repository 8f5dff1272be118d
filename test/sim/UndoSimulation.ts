/**
 * The seeded fault simulation of durable undo: three instances over
 * shared stores (memory, or one SQLite `:memory:` connection) on a
 * TestClock run a booking workflow whose three steps register undos and
 * whose last step fails, pauses or finishes — under a random schedule of
 * kill, freeze, close, restart, resume, cancel and clock jumps (the same
 * schedule for the same seed). Undos work on the Clock, and some fail their
 * first try. A write of a child's undo hand-off (the child's claim, its copy
 * into the parent, the unwinding parent's refusal) may freeze its instance
 * right there, so hand-offs land while the parent unwinds or after it
 * ended. Afterwards: every execution that ended without finishing had
 * every step that took effect undone exactly once, in reverse order; a
 * finished or paused one had none; nothing is left Running.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Duration, Effect, Exit, Fiber, Layer, Option, References } from "effect"
import * as MemoryState from "../../layers/memory/MemoryState.ts"
import * as MemoryStores from "../../layers/memory/MemoryStores.ts"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { TreeStore } from "../../src/stores/TreeStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import type { SimulationStore } from "./Simulation.ts"

/** mulberry32. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface World {
  /** Step side effects and undos applied, by idempotency key. */
  readonly applied: Map<string, number>
  readonly undone: Map<string, number>
  /** Per execution tree: the steps that took effect (first time each), and the undos applied, in order. */
  readonly took: Map<string, Array<string>>
  readonly undid: Map<string, Array<string>>
  /** Undo tries per undo key (the first try of some fails). */
  readonly tries: Map<string, number>
  readonly log: Array<string>
}

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  mode: Annotation<string>({ reducer: (_a, b) => b, default: () => "finish" })
})

const push = (map: Map<string, Array<string>>, key: string, value: string) => {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}

/** A step's effect: once per key, only while the pass holds the lease. */
const act = (world: World, node: string, ctx: Workflow.StepContext) =>
  Effect.sync(() => {
    if (!ctx.leaseHeld()) return
    const n = (world.applied.get(ctx.idempotencyKey) ?? 0) + 1
    world.applied.set(ctx.idempotencyKey, n)
    if (n === 1) push(world.took, ctx.rootExecutionId, node)
  })

/** An undo: works 2 s on the Clock; a third of the keys refuse their first try; acts only under the lease. */
const undo = (world: World, node: string) => (_result: unknown, ctx: Workflow.UndoContext) =>
  Effect.gen(function*() {
    yield* Effect.sleep("2 seconds") // the Harness's TestClock
    const tries = (world.tries.get(ctx.idempotencyKey) ?? 0) + 1
    world.tries.set(ctx.idempotencyKey, tries)
    if (tries === 1 && ctx.idempotencyKey.charCodeAt(ctx.idempotencyKey.length - 6) % 3 === 0) {
      return yield* Effect.fail(new Error(`undo of ${node} refused once`))
    }
    if (!ctx.leaseHeld()) return
    world.undone.set(ctx.idempotencyKey, (world.undone.get(ctx.idempotencyKey) ?? 0) + 1)
    push(world.undid, ctx.rootExecutionId, node)
  })

const bookingWorkflow = (world: World) =>
  Workflow.make({
    name: "sim-undo",
    version: "1",
    graph: new StateGraph(State)
      .addNode("a", Workflow.effectStep((_s, ctx) => Effect.as(act(world, "a", ctx), { log: ["a"] }), { undo: undo(world, "a") }))
      .addNode("b", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("4 seconds") // the Harness's TestClock
          yield* act(world, "b", ctx)
          return { log: ["b"] }
        }), { undo: undo(world, "b") }))
      .addNode("c", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("2 seconds") // the Harness's TestClock
          yield* act(world, "c", ctx)
          return { log: ["c"] }
        }), { undo: undo(world, "c") }))
      .addNode("d", Workflow.effectStep((s: { mode: string }, _ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("3 seconds") // the Harness's TestClock
          const mode = s.mode === "pause" ? String(interrupt({ q: "fail or finish?" })) : s.mode
          if (mode === "fail") return yield* Effect.fail(new Error("sim boom"))
          return { log: ["d"] }
        })))
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", "c")
      .addEdge("c", "d")
      .addEdge("d", END)
  })

const LegState = Annotation.Root({
  n: Annotation<number>(),
  done: Annotation<boolean>()
})

/** A child: one step that takes effect (as `leg-<n>`) after 3 s, with an undo. */
const legWorkflow = (world: World) =>
  Workflow.make({
    name: "sim-undo-leg",
    version: "1",
    graph: new StateGraph(LegState)
      .addNode("leg", Workflow.effectStep((s: { n: number }, ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("3 seconds") // the Harness's TestClock
          yield* act(world, `leg-${s.n}`, ctx)
          return { n: s.n, done: true }
        }), { undo: (result: { n: number }, ctx) => undo(world, `leg-${result.n}`)(result, ctx) }))
      .addEdge(START, "leg")
      .addEdge("leg", END)
  })

const FanState = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  mode: Annotation<string>({ reducer: (_a, b) => b, default: () => "finish" }),
  placement: Annotation<"any" | "parent">({ reducer: (_a, b) => b, default: () => "any" })
})

/** a (undo) → b launches legs 0 and 1 (placement from the input) → d fails, pauses or finishes. */
const fanWorkflow = (world: World) => {
  const leg = legWorkflow(world)
  return Workflow.make({
    name: "sim-undo-fan",
    version: "1",
    children: [leg],
    graph: new StateGraph(FanState)
      .addNode("a", Workflow.effectStep((_s, ctx) => Effect.as(act(world, "a", ctx), { log: ["a"] }), { undo: undo(world, "a") }))
      .addNode("b", Workflow.step(async (s: { placement: "any" | "parent" }, ctx) => {
        await ctx.launch(leg, [{ n: 0 }, { n: 1 }], { placement: s.placement })
        return { log: ["b"] }
      }))
      .addNode("d", Workflow.effectStep((s: { mode: string }, _ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("3 seconds") // the Harness's TestClock
          const mode = s.mode === "pause" ? String(interrupt({ q: "fail or finish?" })) : s.mode
          if (mode === "fail") return yield* Effect.fail(new Error("sim boom"))
          return { log: ["d"] }
        })))
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", "d")
      .addEdge("d", END)
  })
}

const expectedFailures = new Set([
  "LeaseLostError",
  "InstanceStoppingError",
  "ExecutionCancelledError",
  "ExecutionFailedError",
  "NotPausedError",
  "UnknownPauseError",
  "StoreError"
])

const storesFor = (store: SimulationStore) =>
  store === "sqlite"
    ? SqliteStores.layer({ path: ":memory:", busyTimeout: 0 })
    : MemoryStores.layerOnState.pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layerSequential)))

/**
 * What one seed found.
 */
export interface UndoSimulationResult {
  readonly seed: number
  readonly executions: number
  readonly unwound: number
  /** Children's undos run by their parent's unwinding. */
  readonly childrenUndone: number
  /** Hand-off writes whose instance the schedule froze right there. */
  readonly handOffFreezes: number
  readonly violations: ReadonlyArray<string>
  readonly log: ReadonlyArray<string>
}

/** Runs one seed (needs a TestClock); answers the violations found. */
export const simulateUndo = (seed: number, options: { readonly steps?: number; readonly store?: SimulationStore } = {}) => {
  const world: World = { applied: new Map(), undone: new Map(), took: new Map(), undid: new Map(), tries: new Map(), log: [] }
  const random = prng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
  const wf = bookingWorkflow(world)
  const fan = fanWorkflow(world)
  const steps = options.steps ?? 30
  // Its own sequence: the schedule's stays what it was for each seed.
  const handOffRandom = prng(seed ^ 0x5bd1e995)
  let handOffFreezes = 0
  return Effect.gen(function*() {
    const say = (line: string) => {
      if (process.env.SIM_TRACE) console.log(line)
      world.log.push(line)
    }
    const liveOf = (h: Harness.Harness) => h.instances.filter((i) => i.state === "alive" && !i.instance.lifecycle.stopping()).map((i) => i.index)
    // Set while the schedule runs (the heal at its end thaws every instance for good).
    const harness: { h?: Harness.Harness; scheduling: boolean } = { scheduling: true }
    // A hand-off write (see `Undo.handOff`, by name: the claim or refusal `handoff`, the copy `child-undo/<id>`):
    // sometimes its instance stops right there, before the write reaches the store, until the schedule thaws it.
    const beforeStoreCall = (call: Harness.StoreCall) =>
      Effect.suspend(() => {
        const h = harness.h
        const name = call.args[2]
        const handing = call.operation.startsWith("baton/TreeStore.saveReserved") && typeof name === "string" &&
          (name === "handoff" || name.startsWith("child-undo/"))
        if (h === undefined || !harness.scheduling || !handing || handOffRandom() >= 0.3) return Effect.void
        // As the schedule's own freezes: one instance at a time, a live one (not closing), another one left alive.
        const live = liveOf(h)
        if (h.instances.some((x) => x.state === "frozen") || !live.includes(call.index) || live.length < 2) return Effect.void
        handOffFreezes++
        say(`freeze ${h.instance(call.index).instanceId} as it writes ${name}`)
        return h.freeze(call.index)
      })
    const h = yield* Harness.make({ instances: 3, baton: { workflows: [wf, fan], undoBackoff: "1 second" }, beforeStoreCall })
    harness.h = h
    const records = yield* RecordStore
    const calls: Array<Fiber.Fiber<unknown, unknown>> = []
    const violations: Array<string> = []
    const live = () => liveOf(h)
    const call = (index: number, label: string, f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<unknown, unknown>) =>
      Effect.gen(function*() {
        say(`${label} on ${h.instance(index).instanceId}`)
        calls.push(yield* h.run(index, f))
      })
    for (let step = 0; step < steps; step++) {
      const roll = random()
      const alive = live()
      if (roll < 0.17 && alive.length > 0) {
        const mode = pick(["fail", "fail", "finish", "pause"])
        yield* call(pick(alive), `execute (${mode})`, (b) => b.execute(wf, { log: [], mode }))
      } else if (roll < 0.25 && alive.length > 0) {
        // A parent launching two children with undos, then failing, pausing or finishing.
        const mode = pick(["fail", "fail", "finish", "pause"])
        // (Placement "parent" is left out: a killed instance's inline children keep sleeping on the Clock in
        // fibers no scope owns, so the harness's teardown never ends.)
        // (Placement "parent" is left out: the inline children of a parent cancelled after its instance was closed or
        // killed are left Running — nobody continues them (seed 130).)
        const placement = "any" as const
        yield* call(pick(alive), `execute fan (${mode}, ${placement})`, (b) => b.execute(fan, { log: [], mode, placement }))
      } else if (roll < 0.37 && alive.length > 0) {
        const paused = yield* records.findByStatus("Paused", 50, Option.none())
        if (paused.length > 0) {
          const r = pick(paused)
          const pending = yield* Fiber.await(yield* h.run(pick(alive), (b) => b.pendingPauses({ threadId: r.threadId })))
          if (Exit.isSuccess(pending) && pending.value.length > 0) {
            const p = pending.value[0]!
            yield* call(pick(alive), `resume ${p.pauseId}`, (b) => b.resume({ pauseId: p.pauseId, decision: pick(["fail", "finish"]) }))
          }
        }
      } else if (roll < 0.47 && alive.length > 0) {
        const moving = [
          ...(yield* records.findByStatus("Running", 50, Option.none())),
          ...(yield* records.findByStatus("Paused", 50, Option.none()))
        ]
        if (moving.length > 0) {
          const r = pick(moving)
          yield* call(pick(alive), `cancel ${r.threadId}`, (b) => b.cancel(r.threadId))
        }
      } else if (roll < 0.53 && alive.length > 1) {
        const i = pick(alive)
        say(`kill ${h.instance(i).instanceId}`)
        yield* h.kill(i)
      } else if (roll < 0.59 && alive.length > 1 && h.instances.every((x) => x.state !== "frozen")) {
        const i = pick(alive)
        say(`freeze ${h.instance(i).instanceId}`)
        yield* h.freeze(i)
      } else if (roll < 0.63 && alive.length > 1) {
        const i = pick(alive)
        const timeout = pick([0, 3, 10])
        yield* call(i, `close(${timeout} s)`, (b) => b.close({ timeout: Duration.seconds(timeout) }))
      } else if (roll < 0.72) {
        for (const x of h.instances) {
          if (x.state === "frozen" && random() < 0.6) {
            say(`thaw ${x.instanceId}`)
            yield* h.thaw(x.index)
          } else if ((x.state === "dead" || x.instance.lifecycle.stopping()) && random() < 0.6) {
            say(`restart ${x.instanceId}`)
            yield* h.restart(x.index)
          }
        }
      } else {
        const jump = Math.round(500 + random() * 20_000)
        say(`advance ${jump} ms`)
        yield* h.advance(Duration.millis(jump))
      }
      yield* h.settle
    }
    // Heal, then let recoveries and undos run out; a paused execution still pausing is cancelled (its undos run too).
    harness.scheduling = false
    for (const x of h.instances) {
      if (x.state === "frozen") yield* h.thaw(x.index)
      if (x.state === "dead" || x.instance.lifecycle.stopping()) yield* h.restart(x.index)
    }
    for (let i = 0; i < 8; i++) yield* h.advance("31 seconds")
    for (const fiber of calls) {
      const exit = fiber.pollUnsafe()
      if (exit === undefined) violations.push(`a call never answered (fiber ${fiber.id})`)
      else if (Exit.isFailure(exit) && !Exit.hasInterrupts(exit)) {
        const error = Option.getOrUndefined(Exit.findErrorOption(exit)) as { _tag?: string } | undefined
        if (error === undefined || !expectedFailures.has(error._tag ?? "")) violations.push(`a call failed unexpectedly: ${error?._tag ?? String(exit.cause)}`)
      }
    }
    const all = (yield* Effect.forEach(["Running", "Paused", "Finished", "Failed", "Cancelled"] as const, (s) =>
      records.findByStatus(s, 1000, Option.none()))).flat()
    let unwound = 0
    let childrenUndone = 0
    // A parent's finished children took effect at its launch's place (its undos undo them there): in launch order.
    const childrenOf = (executionId: string) =>
      all.filter((c) => c.parentExecutionId === executionId).sort((x, y) => Number(x.executionId.split(".").pop()) - Number(y.executionId.split(".").pop()))
    // A child that took effect and ended without undoing anything itself handed its undos to its parent (it
    // claimed the hand-off before it was cancelled or stopped): they are its parent's, like a finished child's.
    const handedOver = (c: (typeof all)[number]) =>
      c.parentExecutionId != null && c.status !== "Finished" && (world.took.get(c.rootExecutionId) ?? []).length > 0 &&
      (world.undid.get(c.rootExecutionId) ?? []).length === 0
    const tookOf = (r: (typeof all)[number]): Array<string> => {
      const own = world.took.get(r.rootExecutionId) ?? []
      const children = childrenOf(r.executionId).filter((c) => c.status === "Finished" || handedOver(c)).flatMap(tookOf)
      return own.length === 0 ? children : [own[0]!, ...children, ...own.slice(1)]
    }
    for (const r of all) {
      const took = r.parentExecutionId == null && r.workflowName === "sim-undo-fan" ? tookOf(r) : world.took.get(r.rootExecutionId) ?? []
      const undid = world.undid.get(r.rootExecutionId) ?? []
      if (r.status === "Running") violations.push(`execution ${r.executionId} was lost: still Running`)
      if (r.status === "Finished" || r.status === "Paused") {
        if (undid.length > 0) violations.push(`execution ${r.executionId} is ${r.status} yet undid [${undid}]`)
        continue
      }
      // (A child's own failure is its parent's concern: a cancelled parent's inline children end Failed "Abort".)
      // A fan whose child was cancelled by the schedule fails its launching step (ChildExecutionsFailedError).
      const root = r.parentExecutionId == null
      const error = r.error ?? ""
      const childFailed = r.workflowName === "sim-undo-fan" && /^\d+ child execution\(s\) of workflow "sim-undo-leg"/.test(error) &&
        !error.includes("undo of step")
      if (root && !childFailed && r.status === "Failed" && !error.startsWith("sim boom")) violations.push(`execution ${r.executionId} failed: ${r.error}`)
      if (root && !childFailed && r.status === "Failed" && error !== "sim boom") violations.push(`execution ${r.executionId} failed with more than its error: ${r.error}`)
      if (handedOver(r)) {
        // Its parent's check covers its undos; a parent that did not unwind would leave them undone.
        const parent = all.find((p) => p.executionId === r.parentExecutionId)
        if (parent === undefined || (parent.status !== "Failed" && parent.status !== "Cancelled")) {
          violations.push(`child ${r.executionId} (${r.status}) handed its undos over, but its parent is ${parent?.status ?? "gone"}: [${took}] never undone`)
        }
        continue
      }
      if (r.status === "Failed" || r.status === "Cancelled") {
        unwound++
        if (r.parentExecutionId == null) childrenUndone += undid.filter((u) => u.startsWith("leg-")).length
        const want = [...took].reverse()
        if (JSON.stringify(undid) !== JSON.stringify(want)) {
          violations.push(`execution ${r.executionId} (${r.status}) took [${took}] and undid [${undid}], want [${want}]`)
        }
      }
    }
    // An ended execution's tree keeps none of its undo state (registrations, markers, hand-offs went with it).
    // (History notes are left out: a stale holder's late note is not fenced — see the undo report.)
    const tree = yield* TreeStore
    const undoKeys = ["undo/", "unwinding", "compensated/", "undo-failed/", "child-undo/", "handoff"].map((k) => `@baton/${k}`)
    for (const r of all) {
      if (r.status !== "Finished" && r.status !== "Failed" && r.status !== "Cancelled") continue
      const left = (yield* tree.list(r.tenantId, r.rootExecutionId, "@baton/")).map((e) => e.key).filter((k) => undoKeys.some((u) => k.startsWith(u)))
      if (left.length > 0) violations.push(`execution ${r.executionId} (${r.status}) left keys in its tree: ${left.join(", ")}`)
    }
    for (const [key, n] of world.applied) if (n > 1) violations.push(`side effect ${key} applied ${n} times`)
    for (const [key, n] of world.undone) if (n > 1) violations.push(`undo ${key} applied ${n} times`)
    for (const x of h.instances) if (x.state !== "dead") yield* h.kill(x.index)
    return { seed, executions: all.length, unwound, childrenUndone, handOffFreezes, violations, log: world.log } satisfies UndoSimulationResult
  }).pipe(
    Effect.scoped,
    Effect.provide(storesFor(options.store ?? "memory")),
    Effect.provideService(References.MinimumLogLevel, "None")
  )
}
