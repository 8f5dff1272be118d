/**
 * A seeded fault simulation: three instances over shared stores (in memory,
 * or SQLite: one `:memory:` database through the SQL stores) on a TestClock, a mix of executions with pauses and side-effecting steps, and a
 * random schedule of kill, freeze, close, restart, resume, cancel and clock
 * jumps — the same schedule for the same seed. Afterwards it checks that
 * nothing was lost and nothing happened twice.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph"
import { Clock, Duration, Effect, Exit, Fiber, Layer, Option, References, Schema } from "effect"
import { TestClock } from "effect/testing"
import { makeRows } from "../../layers/memory/MemoryCheckpointStore.ts"
import * as MemoryState from "../../layers/memory/MemoryState.ts"
import * as MemoryChildQueueStore from "../../layers/memory/MemoryChildQueueStore.ts"
import * as MemoryLeaseStore from "../../layers/memory/MemoryLeaseStore.ts"
import * as MemoryLiveness from "../../layers/memory/MemoryLiveness.ts"
import { InstanceLiveness } from "../../src/stores/InstanceLiveness.ts"
import * as MemoryPauseStore from "../../layers/memory/MemoryPauseStore.ts"
import * as MemoryRecordStore from "../../layers/memory/MemoryRecordStore.ts"
import * as MemoryTreeStore from "../../layers/memory/MemoryTreeStore.ts"
import * as MemoryTimerStore from "../../layers/memory/MemoryTimerStore.ts"
import * as SqlTimerStore from "../../layers/sql/SqlTimerStore.ts"
import { isTimerWait } from "../../src/runtime/internal/timers/Waits.ts"
import * as SqlCheckpointStore from "../../layers/sql/SqlCheckpointStore.ts"
import * as SqlChildQueueStore from "../../layers/sql/SqlChildQueueStore.ts"
import * as SqlLeaseStore from "../../layers/sql/SqlLeaseStore.ts"
import * as SqlMigrations from "../../layers/sql/SqlMigrations.ts"
import * as SqlPauseStore from "../../layers/sql/SqlPauseStore.ts"
import * as SqlRecordStore from "../../layers/sql/SqlRecordStore.ts"
import * as SqlTreeStore from "../../layers/sql/SqlTreeStore.ts"
import * as SqliteMigrations from "../../layers/sqlite/SqliteMigrations.ts"
import * as SqliteClient from "../../layers/sqlite/SqliteClient.ts"
import type { CheckpointRows } from "../../src/stores/CheckpointRows.ts"
import { CheckpointStore } from "../../src/stores/CheckpointStore.ts"
import type { ExecutionRecord } from "../../src/stores/ExecutionRecord.ts"
import * as CheckpointStores from "../../src/checkpoint/CheckpointStores.ts"
import type { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import type { FenceCheck } from "../../src/stores/Fence.ts"
import * as Ids from "../../src/stores/Ids.ts"
import { PauseStore } from "../../src/stores/PauseStore.ts"
import type { RateLimitStore } from "../../src/stores/RateLimitStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import * as Harness from "../../src/testing/Harness.ts"
import * as Workflow from "../../src/runtime/Workflow.ts"
import * as MemoryRateLimitStore from "../../layers/memory/MemoryRateLimitStore.ts"
import * as SqlRateLimitStore from "../../layers/sql/SqlRateLimitStore.ts"
import * as Quota from "./quota.ts"
import { isChildrenWait } from "../../src/runtime/internal/children/ChildLaunch.ts"

/** mulberry32: a small, fast, seedable PRNG. */
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

/** What the simulated outside world saw. */
interface World {
  /** Side effects applied, by idempotency key (a real system dedups by it; here we count). */
  readonly applied: Map<string, number>
  /** The keys each logical step (tree, node) used over all its runs: exactly one is correct. */
  readonly keysOfStep: Map<string, Set<string>>
  /** Accepted fenced checkpoint writes per tree, as epochs in acceptance order. */
  readonly acceptedEpochs: Map<string, Array<number>>
  readonly log: Array<string>
  /** The instances' liveness signals: a kill ends one (crash takeover), a cut loses one while its instance lives. */
  readonly liveness: MemoryLiveness.MemoryLiveness
  /** Each sleep of sim-nap as the step after it saw it: its tree, when it was due, when (Clock) the step ran. */
  readonly naps: Array<{ readonly root: string; readonly due: number; readonly woke: number }>
  /** What each wait of sim-signal answered, by `<root>#<wait>`: a signal's seq, or "timeout@<at>". */
  readonly waits: Map<string, Set<string>>
  /** Signals `signal` accepted: their tree, seq, and the Clock when the call answered. */
  readonly accepted: Array<{ readonly root: string; readonly seq: number; readonly at: number }>
}

const State = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] })
})

/** A step's side effect: keyed by its idempotency key, made only while the pass still holds the lease. */
const sideEffect = (world: World, node: string, ctx: Workflow.StepContext) =>
  Effect.sync(() => {
    const stepKey = `${ctx.rootExecutionId}/${node}`
    let keys = world.keysOfStep.get(stepKey)
    if (keys === undefined) world.keysOfStep.set(stepKey, keys = new Set())
    keys.add(ctx.idempotencyKey)
    if (!ctx.leaseHeld()) return
    world.applied.set(ctx.idempotencyKey, (world.applied.get(ctx.idempotencyKey) ?? 0) + 1)
  })

const NapState = Annotation.Root({
  log: Annotation<Array<string>>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  t0: Annotation<number>()
})

/** sim-nap: mark (the Clock's time) → nap (a durable sleep until 45 s after it) → check; sim-signal: two waits for "go". */
const timerWorkflows = (world: World) => {
  const nap = Workflow.make({
    name: "sim-nap",
    version: "1",
    graph: new StateGraph(NapState)
      .addNode("mark", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          yield* sideEffect(world, "mark", ctx)
          return { log: ["mark"], t0: yield* Clock.currentTimeMillis }
        })
      ))
      .addNode("nap", Workflow.sleepNode<{ t0: number }>({ until: (s) => s.t0 + 45_000 }))
      .addNode("check", Workflow.effectStep((s: { t0: number }, ctx) =>
        Effect.gen(function*() {
          world.naps.push({ root: ctx.rootExecutionId, due: s.t0 + 45_000, woke: yield* Clock.currentTimeMillis })
          yield* sideEffect(world, "check", ctx)
          return { log: ["check"] }
        })
      ))
      .addEdge(START, "mark").addEdge("mark", "nap").addEdge("nap", "check").addEdge("check", END)
  })
  const signalled = Workflow.make({
    name: "sim-signal",
    version: "1",
    signals: { go: Schema.Number },
    graph: new StateGraph(State)
      .addNode("listen", Workflow.step(async (_s, ctx) => {
        const answers: Array<string> = []
        for (let i = 0; i < 2; i++) {
          const r = await ctx.waitFor<number>("go", { timeout: "60 seconds" })
          answers.push(r._tag === "Received" ? String(r.seq) : `timeout@${r.at}`)
        }
        answers.forEach((a, i) => {
          const key = `${ctx.rootExecutionId}#${i}`
          world.waits.set(key, (world.waits.get(key) ?? new Set()).add(a))
        })
        return { log: ["listen"] }
      }))
      .addEdge(START, "listen").addEdge("listen", END)
  })
  return [nap, signalled]
}

/** Sleeps never woke early; each wait answered one way; each signal taken once; none an earlier wait should have taken was lost. */
const checkTimers = (world: World, finished: ReadonlySet<string>, violations: Array<string>) => {
  for (const n of world.naps) if (n.woke < n.due) violations.push(`sleep of ${n.root} woke at ${n.woke}, before its due time ${n.due}`)
  const takenBy = new Map<string, string>()
  const received = new Map<string, Set<string>>()
  for (const [key, answers] of world.waits) {
    if (answers.size > 1) violations.push(`wait ${key} answered ${[...answers].join(" and ")}`)
    const root = key.split("#")[0]!
    for (const a of answers) {
      if (a.startsWith("timeout@")) continue
      const other = takenBy.get(a)
      if (other !== undefined && other !== key) violations.push(`signal #${a} was taken by ${other} and by ${key}`)
      takenBy.set(a, key)
      received.set(root, (received.get(root) ?? new Set()).add(a))
    }
  }
  for (const [key, answers] of world.waits) {
    const root = key.split("#")[0]!
    if (!finished.has(root)) continue
    for (const a of answers) {
      if (!a.startsWith("timeout@")) continue
      const at = Number(a.slice("timeout@".length))
      for (const s of world.accepted) {
        if (s.root === root && s.at < at && !received.get(root)?.has(String(s.seq))) {
          violations.push(`signal #${s.seq} to ${root}, accepted at ${s.at}, was lost: wait ${key} timed out at ${at}`)
        }
      }
    }
  }
}

const workflows = (world: World) => {
  const approval = Workflow.make({
    name: "sim-approval",
    version: "1",
    graph: new StateGraph(State)
      .addNode("draft", Workflow.effectStep((_s, ctx) => Effect.as(sideEffect(world, "draft", ctx), { log: ["draft"] })))
      .addNode("approve", Workflow.effectStep((_s, _ctx) => Effect.sync(() => ({ log: [`approve:${String(interrupt({ q: "ok?" }))}`] }))))
      .addNode("send", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("3 seconds") // the Harness's TestClock
          yield* sideEffect(world, "send", ctx)
          return { log: ["send"] }
        })
      ))
      .addEdge(START, "draft")
      .addEdge("draft", "approve")
      .addEdge("approve", "send")
      .addEdge("send", END)
  })
  const slow = Workflow.make({
    name: "sim-slow",
    version: "1",
    graph: new StateGraph(State)
      .addNode("first", Workflow.effectStep((_s, ctx) => Effect.as(sideEffect(world, "first", ctx), { log: ["first"] })))
      .addNode("work", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("20 seconds")
          yield* sideEffect(world, "work", ctx)
          return { log: ["work"] }
        })
      ))
      .addNode("last", Workflow.effectStep((_s, ctx) => Effect.as(sideEffect(world, "last", ctx), { log: ["last"] })))
      .addEdge(START, "first")
      .addEdge("first", "work")
      .addEdge("work", "last")
      .addEdge("last", END)
  })
  const branches = Workflow.make({
    name: "sim-branches",
    version: "1",
    graph: new StateGraph(State)
      .addNode("fork", Workflow.effectStep((_s, ctx) => Effect.as(sideEffect(world, "fork", ctx), { log: ["fork"] })))
      .addNode("left", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          const d = interrupt({ side: "left" })
          yield* Effect.sleep("5 seconds")
          yield* sideEffect(world, "left", ctx)
          return { log: [`left:${String(d)}`] }
        })
      ))
      .addNode("right", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          const d = interrupt({ side: "right" })
          yield* sideEffect(world, "right", ctx)
          return { log: [`right:${String(d)}`] }
        })
      ))
      .addNode("join", Workflow.effectStep((_s, ctx) => Effect.as(sideEffect(world, "join", ctx), { log: ["join"] })))
      .addEdge(START, "fork")
      .addEdge("fork", "left")
      .addEdge("fork", "right")
      .addEdge(["left", "right"], "join")
      .addEdge("join", END)
  })
  // Children launched anywhere: a fan-out whose three children any instance claims (its rows in the ChildQueueStore).
  const child = Workflow.make({
    name: "sim-child",
    version: "1",
    graph: new StateGraph(State)
      .addNode("work", Workflow.effectStep((_s, ctx) =>
        Effect.gen(function*() {
          yield* Effect.sleep("4 seconds") // the Harness's TestClock
          yield* sideEffect(world, "work", ctx)
          return { log: ["work"] }
        })
      ))
      .addEdge(START, "work")
      .addEdge("work", END)
  })
  const fanout = Workflow.make({
    name: "sim-fanout",
    version: "1",
    children: [child],
    graph: new StateGraph(State)
      .addNode("fan", Workflow.step(async (_s, ctx) => {
        // A child cancelled on its own fails the launch: the parent goes on and says so.
        const outcome = await ctx.launch(child, [{ log: [] }, { log: [] }, { log: [] }], { placement: "any" }).then(
          (outs) => `ok${outs.length}`,
          (e) => {
            if ((e as { _tag?: string })._tag === "ChildExecutionsFailedError") return "failed"
            throw e
          }
        )
        await Effect.runPromise(sideEffect(world, "fan", ctx))
        return { log: [`fan:${outcome}`] }
      }))
      .addNode("after", Workflow.effectStep((_s, ctx) => Effect.as(sideEffect(world, "after", ctx), { log: ["after"] })))
      .addEdge(START, "fan")
      .addEdge("fan", "after")
      .addEdge("after", END)
  })
  return [approval, slow, branches, fanout, ...timerWorkflows(world)]
}

/** Checkpoint rows that record every fenced write the store accepted. */
const recordingRows = (rows: CheckpointRows, world: World): CheckpointRows => {
  const accepted = (fence: FenceCheck | undefined) => {
    if (fence === undefined) return
    const tree = `${fence.lease.tenantId}/${fence.lease.rootExecutionId}`
    let epochs = world.acceptedEpochs.get(tree)
    if (epochs === undefined) world.acceptedEpochs.set(tree, epochs = [])
    epochs.push(fence.lease.epoch)
  }
  return {
    ...rows,
    putCheckpoint: async (row, blobs, fence) => {
      await rows.putCheckpoint(row, blobs, fence)
      accepted(fence)
    },
    putWrites: async (writes, fence) => {
      await rows.putWrites(writes, fence)
      accepted(fence)
    }
  }
}

/** The same stores over SQLite: one `:memory:` connection per seed, shared by the three instances. */
const sqliteStoresFor = (world: World) => {
  const checkpoints = Layer.effect(
    CheckpointStore,
    Effect.andThen(SqlMigrations.migrate(), Effect.map(SqlCheckpointStore.makeRows(), (rows) => CheckpointStores.fromRows(recordingRows(rows, world))))
  )
  return Layer.mergeAll(
    SqlLeaseStore.layer(),
    SqlRecordStore.layer(),
    SqlPauseStore.layer(),
    SqlTreeStore.layer(),
    SqlRateLimitStore.layer(),
    SqlChildQueueStore.layer(),
    SqlTimerStore.layer(),
    checkpoints,
    Layer.succeed(InstanceLiveness, world.liveness)
  ).pipe(
    Layer.provide(SqliteMigrations.layer()),
    Layer.provideMerge(Layer.merge(SqliteClient.layer({ path: ":memory:", busyTimeout: 0 }), Ids.layerSequential))
  )
}

/** Which stores a simulation runs over. */
export type SimulationStore = "memory" | "sqlite"

const storesFor = (world: World, store: SimulationStore): Layer.Layer<Harness.HarnessStores | RateLimitStore, StoreError | BatonConfigError> =>
  store === "sqlite" ? sqliteStoresFor(world) : memoryStoresFor(world)

const memoryStoresFor = (world: World) => {
  const checkpoints = Layer.effect(
    CheckpointStore,
    Effect.map(makeRows, (rows) => CheckpointStores.fromRows(recordingRows(rows, world)))
  )
  return Layer.mergeAll(
    MemoryLeaseStore.layer,
    MemoryRecordStore.layer,
    MemoryPauseStore.layer,
    MemoryTreeStore.layer,
    MemoryRateLimitStore.layer,
    MemoryChildQueueStore.layer,
    MemoryTimerStore.layer,
    checkpoints,
    Layer.succeed(InstanceLiveness, world.liveness)
  ).pipe(Layer.provideMerge(Layer.merge(MemoryState.layer, Ids.layerSequential)))
}

/** An instance's liveness key (its holder ids' prefix), as it registered it. */
const livenessKey = (x: Harness.HarnessInstance) => `${x.instance.instanceId}#${x.instance.incarnation}`

const expectedFailures = new Set([
  "LeaseLostError",
  "InstanceStoppingError",
  "ExecutionCancelledError",
  "NotPausedError",
  "UnknownPauseError",
  "StoreError",
  "ThreadBusyError",
  "TenantQuotaExceededError",
  // a signal to a tree that ended meanwhile
  "ThreadNotRunningError"
])

export interface SimulationResult {
  readonly seed: number
  readonly executions: number
  readonly finished: number
  readonly cancelled: number
  readonly paused: number
  /** Child executions launched (placement "any") that ran. */
  readonly children: number
  readonly violations: ReadonlyArray<string>
  readonly log: ReadonlyArray<string>
  /** Sleeps that woke, waits that answered, signals accepted: what the timer checks looked at. */
  readonly timers: { readonly naps: number; readonly waits: number; readonly signals: number }
}

/**
 * The public reads agree with the stores: `list` pages over every execution
 * once; `status` of each shows its stored status (and, paused, its pending
 * pauses); `pendingPauses` of its thread the same pauses.
 */
const checkReads = (h: Harness.Harness, records: ReadonlyArray<ExecutionRecord>, violations: Array<string>) =>
  Effect.gen(function*() {
    const pauses = yield* PauseStore
    const read = <A, E>(f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>) => Effect.flatMap(h.run(0, f), Fiber.join)
    const listed = new Map<string, string>()
    let cursor: string | undefined
    do {
      const page = yield* read((b) => b.list({ cursor, limit: 7 }))
      for (const e of page.executions) {
        if (listed.has(e.executionId)) violations.push(`list answered execution ${e.executionId} twice`)
        listed.set(e.executionId, e.status)
      }
      cursor = page.next ?? undefined
    } while (cursor !== undefined)
    if (listed.size !== records.length) violations.push(`list answered ${listed.size} executions, the stores hold ${records.length}`)
    for (const r of records) {
      if (listed.get(r.executionId) !== r.status) violations.push(`list shows execution ${r.executionId} ${listed.get(r.executionId)}, stored ${r.status}`)
      const status = yield* read((b) => b.status(r.executionId))
      if (status.status !== r.status) violations.push(`status of ${r.executionId} is ${status.status}, stored ${r.status}`)
      if (r.status !== "Paused") continue
      // A children wait is the runtime's to answer: the reads leave it out.
      const stored = (yield* pauses.listByRoot(r.tenantId, r.rootExecutionId, ["Pending"]))
        .filter((p) => !isChildrenWait(p) && !isTimerWait(p)).map((p) => p.pauseId).sort()
      const shown = status.pendingPauses.map((p) => p.pauseId).sort()
      const ofThread = (yield* read((b) => b.pendingPauses({ threadId: r.threadId }))).map((p) => p.pauseId).sort()
      if (JSON.stringify(shown) !== JSON.stringify(stored)) violations.push(`status of ${r.executionId} shows pauses [${shown}], stored [${stored}]`)
      if (JSON.stringify(ofThread) !== JSON.stringify(stored)) violations.push(`pendingPauses of thread ${r.threadId}: [${ofThread}], stored [${stored}]`)
    }
  })

/** Runs one seed; answers the violations found (none when all is well). Needs a TestClock. */
export const simulate = (seed: number, options: { readonly steps?: number; readonly store?: SimulationStore; readonly quota?: Quota.SimQuota | undefined } = {}) => {
  const world: World = {
    applied: new Map(),
    keysOfStep: new Map(),
    acceptedEpochs: new Map(),
    log: [],
    liveness: MemoryLiveness.make(),
    naps: [],
    waits: new Map(),
    accepted: []
  }
  /** The liveness keys cut and not restored yet. */
  const cutKeys = new Set<string>()
  const random = prng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]!
  const wfs = workflows(world)
  const steps = options.steps ?? 40
  // Some seeds run with a tenant quota: its permits are checked at every step (see quota.ts).
  const quota = "quota" in options ? options.quota : Quota.quotaFor(seed)
  return Effect.gen(function*() {
    const h = yield* Harness.make({ instances: 3, baton: { workflows: wfs, ...Quota.batonOptions(quota) } })
    const records = yield* RecordStore
    const pauses = yield* PauseStore
    const calls: Array<Fiber.Fiber<unknown, unknown>> = []
    const violations: Array<string> = []
    const live = () => h.instances.filter((i) => i.state === "alive" && !i.instance.lifecycle.stopping()).map((i) => i.index)
    const say = (line: string) => world.log.push(line)
    const call = (index: number, label: string, f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<unknown, unknown>) =>
      Effect.gen(function*() {
        say(`${label} on ${h.instance(index).instanceId}`)
        calls.push(yield* h.run(index, f))
      })

    for (let step = 0; step < steps; step++) {
      const roll = random()
      const alive = live()
      if (roll < 0.22 && alive.length > 0) {
        const wf = pick(wfs)
        if (random() < 0.5) yield* call(pick(alive), `execute ${wf.name}`, (b) => b.execute(wf, { log: [] }))
        else {
          // start, and await the handle on any instance (the same one or another)
          const on = pick(alive)
          const handle = yield* Fiber.await(yield* h.run(on, (b) => b.start(wf, { log: [] })))
          if (Exit.isSuccess(handle)) {
            say(`start ${wf.name} on ${h.instance(on).instanceId}: ${handle.value.executionId}`)
            yield* call(pick(alive), `await ${handle.value.executionId}`, (b) => b.await(handle.value))
          } else say(`start ${wf.name} on ${h.instance(on).instanceId} refused`)
        }
      } else if (roll < 0.40 && alive.length > 0) {
        // the pauses to answer, read through the public API of a live instance
        const reader = pick(alive)
        const read = <A, E>(f: (b: Harness.HarnessInstance["baton"]) => Effect.Effect<A, E>) =>
          Effect.flatMap(h.run(reader, f), Fiber.await)
        const paused = yield* read((b) => b.list({ status: "Paused", limit: 50 }))
        const threads = Exit.isSuccess(paused) ? [...new Set(paused.value.executions.map((e) => e.threadId))] : []
        const pending = (yield* Effect.forEach(threads, (threadId) =>
          Effect.map(read((b) => b.pendingPauses({ threadId })), (exit) => Exit.isSuccess(exit) ? exit.value : []))).flat()
        if (pending.length > 0) {
          const p = pick(pending)
          yield* call(pick(alive), `resume ${p.pauseId}`, (b) => b.resume({ pauseId: p.pauseId, decision: pick(["yes", "no"]) }))
        }
      } else if (roll < 0.46 && alive.length > 0) {
        const moving = [
          ...(yield* records.findByStatus("Running", 50, Option.none())),
          ...(yield* records.findByStatus("Paused", 50, Option.none()))
        ]
        if (moving.length > 0) {
          const r = pick(moving)
          yield* call(pick(alive), `cancel ${r.threadId}`, (b) => b.cancel(r.threadId))
        }
      } else if (roll < 0.50 && alive.length > 1) {
        const i = pick(alive)
        say(`kill ${h.instance(i).instanceId}`)
        yield* h.kill(i)
      } else if (roll < 0.52 && alive.length > 1) {
        // Its liveness signal lost while it lives (a cut connection): the others take its trees; the fence stops it.
        const i = pick(alive)
        say(`cut the liveness of ${h.instance(i).instanceId}`)
        world.liveness.cut(livenessKey(h.instance(i)))
        cutKeys.add(livenessKey(h.instance(i)))
      } else if (roll < 0.58 && alive.length > 1 && h.instances.every((x) => x.state !== "frozen")) {
        const i = pick(alive)
        say(`freeze ${h.instance(i).instanceId}`)
        yield* h.freeze(i)
      } else if (roll < 0.63 && alive.length > 1) {
        const i = pick(alive)
        const timeout = pick([0, 5, 10, 25])
        yield* call(i, `close(${timeout} s)`, (b) => b.close({ timeout: Duration.seconds(timeout) }))
      } else if (roll < 0.80 && roll >= 0.72 && alive.length > 0) {
        // A signal to a listening tree (sent before its waits, while they rest, or as the tree ends).
        const listening = [
          ...(yield* records.findByStatus("Running", 50, Option.none())),
          ...(yield* records.findByStatus("Paused", 50, Option.none()))
        ].filter((r) => r.workflowName === "sim-signal")
        if (listening.length > 0) {
          const r = pick(listening)
          const value = Math.floor(random() * 1000)
          yield* call(pick(alive), `signal go=${value} to ${r.threadId}`, (b) =>
            b.signal(r.threadId, "go", value).pipe(
              Effect.tap((sent) => Effect.map(Clock.currentTimeMillis, (at) => void world.accepted.push({ root: r.rootExecutionId, seq: sent.seq, at })))
            ))
        }
      } else if (roll < 0.72) {
        for (const x of h.instances) {
          if (cutKeys.has(livenessKey(x)) && random() < 0.6) {
            say(`restore the liveness of ${x.instanceId}`)
            world.liveness.restore(livenessKey(x))
            cutKeys.delete(livenessKey(x))
          }
          if (x.state === "frozen" && random() < 0.6) {
            say(`thaw ${x.instanceId}`)
            yield* h.thaw(x.index)
          } else if ((x.state === "dead" || x.instance.lifecycle.stopping()) && random() < 0.6) {
            say(`restart ${x.instanceId}`)
            yield* h.restart(x.index)
          }
        }
      } else {
        const jump = Math.round(500 + random() * 34_500)
        say(`advance ${jump} ms`)
        yield* h.advance(Duration.millis(jump))
      }
      yield* h.settle
      yield* Quota.checkCap(quota, h, `step ${step}`, violations)
    }

    // Heal: every instance alive again, then let time pass for recoveries and waiting calls.
    for (const x of h.instances) {
      world.liveness.restore(livenessKey(x))
      if (x.state === "frozen") yield* h.thaw(x.index)
      if (x.state === "dead" || x.instance.lifecycle.stopping()) yield* h.restart(x.index)
    }
    for (let i = 0; i < 8; i++) {
      yield* h.advance("31 seconds")
      yield* Quota.checkCap(quota, h, `healing ${i}`, violations)
    }
    // Under a quota trees run a few at a time: give the waiting ones time to run (bounded).
    for (let i = 0; quota !== undefined && i < 40 && (yield* records.findByStatus("Running", 1, Option.none())).length > 0; i++) {
      yield* h.advance("31 seconds")
      yield* Quota.checkCap(quota, h, `healing ${8 + i}`, violations)
    }

    for (const fiber of calls) {
      const exit = fiber.pollUnsafe()
      if (exit === undefined) {
        violations.push(`a call never answered (fiber ${fiber.id})`)
        continue
      }
      if (Exit.isFailure(exit) && !Exit.hasInterrupts(exit)) {
        const error = Option.getOrUndefined(Exit.findErrorOption(exit)) as { _tag?: string } | undefined
        if (error === undefined || !expectedFailures.has(error._tag ?? "")) {
          violations.push(`a call failed unexpectedly: ${error?._tag ?? Exit.isFailure(exit) ? String(exit.cause) : "?"}`)
        }
      }
    }
    const all = [
      ...(yield* records.findByStatus("Running", 1000, Option.none())).map((r) => ({ r, s: "Running" })),
      ...(yield* records.findByStatus("Paused", 1000, Option.none())).map((r) => ({ r, s: "Paused" })),
      ...(yield* records.findByStatus("Finished", 1000, Option.none())).map((r) => ({ r, s: "Finished" })),
      ...(yield* records.findByStatus("Cancelled", 1000, Option.none())).map((r) => ({ r, s: "Cancelled" })),
      ...(yield* records.findByStatus("Failed", 1000, Option.none())).map((r) => ({ r, s: "Failed" }))
    ]
    yield* checkReads(h, all.map((x) => x.r), violations)
    for (const { r, s } of all) {
      if (s === "Running") violations.push(`execution ${r.executionId} (${r.workflowName}) was lost: still Running`)
      if (s === "Failed") violations.push(`execution ${r.executionId} failed: ${r.error}`)
      if (s === "Paused") {
        const pending = yield* pauses.listByRoot(r.tenantId, r.rootExecutionId, ["Pending"])
        if (pending.length === 0) violations.push(`execution ${r.executionId} rests paused with no pending pause`)
        const resolved = yield* pauses.listByRoot(r.tenantId, r.rootExecutionId, ["Resolved"])
        if (resolved.length > 0) violations.push(`execution ${r.executionId} rests paused with an answer never taken`)
      }
    }
    // The final state holds each step's write once: no stale holder's write was accepted over the new one's.
    const expected: Record<string, ReadonlyArray<string>> = {
      "sim-approval": ["draft", "approve", "send"],
      "sim-slow": ["first", "work", "last"],
      "sim-branches": ["fork", "left", "right", "join"],
      "sim-fanout": ["fan", "after"],
      "sim-child": ["work"],
    "sim-nap": ["mark", "check"],
    "sim-signal": ["listen"]
    }
    const saver = (yield* CheckpointStore).saver
    for (const { r, s } of all) {
      if (s !== "Finished") continue
      const tuple = yield* Effect.promise(() => saver.getTuple({ configurable: { thread_id: r.threadId, baton_tenant_id: r.tenantId } }))
      const log = ((tuple?.checkpoint.channel_values as { log?: Array<string> })?.log ?? []).map((l) => l.split(":")[0]!)
      const want = expected[r.workflowName] ?? []
      if (JSON.stringify([...log].sort()) !== JSON.stringify([...want].sort())) {
        violations.push(`execution ${r.executionId} finished with steps [${log.join(", ")}], expected each of [${want.join(", ")}] once`)
      }
    }
    for (const [key, n] of world.applied) if (n > 1) violations.push(`side effect ${key} applied ${n} times`)
    checkTimers(world, new Set(all.filter((x) => x.s === "Finished").map((x) => x.r.rootExecutionId)), violations)
    for (const [step, keys] of world.keysOfStep) if (keys.size > 1) violations.push(`step ${step} ran under ${keys.size} idempotency keys`)
    if (all.length > 0 && world.acceptedEpochs.size === 0) violations.push("no fenced checkpoint write was recorded: the check saw nothing")
    for (const [tree, epochs] of world.acceptedEpochs) {
      for (let i = 1; i < epochs.length; i++) {
        if (epochs[i]! < epochs[i - 1]!) {
          violations.push(`tree ${tree}: a write of epoch ${epochs[i]} was accepted after one of epoch ${epochs[i - 1]}`)
          break
        }
      }
    }
    // Every tree rests: each gave its permit back.
    if (!all.some((x) => x.s === "Running")) yield* Quota.checkNone(quota, "every tree at rest", violations)
    // Let every instance go before the scope closes.
    for (const x of h.instances) if (x.state !== "dead") yield* h.kill(x.index)
    // Every holder gone and its lease run out: no permit held.
    if (quota !== undefined) {
      yield* TestClock.adjust("31 seconds")
      yield* Quota.checkNone(quota, "every holder gone, leases expired", violations)
    }
    return {
      seed,
      executions: all.length,
      finished: all.filter((x) => x.s === "Finished").length,
      cancelled: all.filter((x) => x.s === "Cancelled").length,
      paused: all.filter((x) => x.s === "Paused").length,
      children: all.filter((x) => x.r.parentExecutionId !== null).length,
      violations,
      log: world.log,
      timers: { naps: world.naps.length, waits: world.waits.size, signals: world.accepted.length }
    } satisfies SimulationResult
  }).pipe(
    Effect.scoped,
    Effect.provide(storesFor(world, options.store ?? "memory")),
    // The runtime logs every recovery; a thousand schedules would drown a failure's report.
    Effect.provideService(References.MinimumLogLevel, "Error")
  )
}
