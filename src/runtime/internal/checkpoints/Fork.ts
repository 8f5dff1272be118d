/**
 * `Baton.fork`: a new execution from a past checkpoint of a thread — on a
 * new thread, or on the same one — optionally with a state update first
 * (LangGraph's `updateState`), fenced like any start: its root is recorded
 * under its own lease by the store's one-active-root-per-thread rule, and
 * every checkpoint it writes is a fenced write under that lease. Then the
 * tree is moved like a recovered one: from the forked checkpoint on, only
 * the steps after it run, on this instance (or, if it dies, on any other).
 *
 * To a new thread the checkpoint is copied with its id, its channel values
 * and — when it is its namespace's newest — its pending writes (a decision
 * given to a pause is not copied: the fork pauses anew; an older
 * checkpoint's writes are the next step's, which the fork runs again), and
 * with it the newest checkpoint of each subgraph
 * namespace that ran under it — so a subgraph caught mid-way goes on from
 * its own checkpoint, not from its start, and a subgraph checkpoint can be
 * forked from itself. On the same thread the checkpoint is written again as
 * the thread's newest (source `fork`, its parent the forked one, its channel
 * versions above all the thread holds); the steps after it run again, a
 * subgraph under way in them from its start. A state update is tried on a
 * scratch copy first (`UpdateCheck`), then written from the copied
 * checkpoint.
 *
 * @since 0.1.0
 */
import { type Checkpoint, type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint"
import { Clock, Effect, Option } from "effect"
import { executionKey } from "../../../checkpoint/internal/configKeys.ts"
import { ThreadBusyError, UnknownCheckpointError, UnknownWorkflowError } from "../../Errors.ts"
import { CheckpointStore } from "../../../stores/CheckpointStore.ts"
import { InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { fenceKey, tenantConfigKey } from "../../../stores/Fence.ts"
import { defaultTenant, IdGenerator, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import { checkThread } from "../calls/Threads.ts"
import { Instance, notStopping } from "../Instance.ts"
import * as LeaseHolder from "../lease/LeaseHolder.ts"
import * as ReusedKeys from "../pass/ReusedKeys.ts"
import * as TreeDriver from "../pass/TreeDriver.ts"
import * as UpdateCheck from "./UpdateCheck.ts"
import * as Options from "../../../stores/internal/options.ts"
import { TreeStore } from "../../../stores/TreeStore.ts"

/**
 * What `Baton.fork` forks, and where to.
 *
 * @category models
 * @since 0.1.0
 */
export interface ForkInput {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
  /** The thread the checkpoint is on. */
  readonly threadId: ThreadId
  /** The checkpoint to go on from (an id `Baton.checkpoints` lists). */
  readonly checkpointId: string
  /** Its namespace: "" (default) for the graph's own, a subgraph's to fork from inside it (new threads only). */
  readonly checkpointNs?: string | undefined
  /** A new thread to fork to (created with the caller as owner); default: the same thread, which must be idle. */
  readonly toThreadId?: ThreadId | undefined
  /** A state update applied first, as LangGraph's `updateState` (JSON values, through the graph's reducers). */
  readonly update?: Record<string, unknown> | undefined
  /** The node the update is written as (LangGraph's `asNode`): the graph goes on as if that node had returned it. */
  readonly asNode?: string | undefined
  /**
   * Steps the fork runs again take the idempotency keys they had in the
   * first run (default false: new keys, so side effects run again). A step
   * of the root graph at the same distance from the forked checkpoint, with
   * the same node, as one the first run went through after it takes that
   * step's key; any other step (a new path, a subgraph's step, a node run
   * more than once in one step) gets its own.
   */
  readonly reuseIdempotencyKeys?: boolean | undefined
}

const storeError = (operation: string) => (cause: unknown) =>
  new StoreError({ store: "CheckpointStore", operation, reason: cause instanceof Error ? cause.message : String(cause), cause })

const promise = <A>(operation: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: storeError(operation) })

/** The thread's workflow: that of its newest root, registered here. */
const workflowOf = Effect.fnUntraced(function*(tenantId: TenantId, threadId: ThreadId) {
  const roots = (yield* (yield* RecordStore).listByThread(tenantId, threadId)).filter((r) => r.executionId === r.rootExecutionId)
  const newest = roots[roots.length - 1]
  const workflow = newest === undefined ? undefined : (yield* Instance).config.workflows.get(newest.workflowName)
  if (workflow === undefined) return yield* new UnknownWorkflowError({ workflowName: newest?.workflowName ?? "(none: the thread has no execution)" })
  return workflow
})

const tupleOf = (tenantId: TenantId, threadId: ThreadId, ns: string, checkpointId: string) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    const tuple = yield* promise("getTuple", () =>
      saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId, [tenantConfigKey]: tenantId } }))
    if (tuple === undefined) return yield* new UnknownCheckpointError({ tenantId, threadId, checkpointNs: ns, checkpointId })
    return tuple
  })

/** The newest checkpoint of each subgraph namespace that ran under the graph's checkpoint `parentId`. */
const subgraphsUnder = (tenantId: TenantId, threadId: ThreadId, parentId: string) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    return yield* promise("list", async () => {
      const newest = new Map<string, CheckpointTuple>()
      for await (const t of saver.list({ configurable: { thread_id: threadId, [tenantConfigKey]: tenantId } })) {
        const ns = t.config.configurable?.checkpoint_ns as string
        if (ns === "" || newest.has(ns)) continue
        if ((t.metadata?.parents as Record<string, string> | undefined)?.[""] === parentId) newest.set(ns, t)
      }
      return [...newest.values()]
    })
  })

/**
 * The highest channel version any checkpoint of the thread's namespace `ns`
 * holds (0 when none is a number).
 */
const highestVersion = (tenantId: TenantId, threadId: ThreadId, ns: string) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    return yield* promise("list", async () => {
      let highest = 0
      for await (const t of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: ns, [tenantConfigKey]: tenantId } })) {
        for (const v of Object.values(t.checkpoint.channel_versions)) if (typeof v === "number" && v > highest) highest = v
      }
      return highest
    })
  })

/**
 * `checkpoint` with every channel version (and every version a node has
 * seen) moved up by `by`: the same order between them, so the same tasks
 * are due, but above every version the thread has written. A same-thread
 * fork's branch then writes versions no other branch holds: the thread's
 * channel values are stored once per (channel, version), and a version the
 * old branch wrote would answer the new branch with the old value.
 */
const shiftVersions = (checkpoint: Checkpoint, by: number): Checkpoint => {
  const shift = <V>(v: V): V => (typeof v === "number" ? (v + by) as V : v)
  const shiftAll = (versions: Record<string, unknown>) => Object.fromEntries(Object.entries(versions).map(([k, v]) => [k, shift(v)]))
  return {
    ...checkpoint,
    channel_versions: shiftAll(checkpoint.channel_versions) as Checkpoint["channel_versions"],
    versions_seen: Object.fromEntries(Object.entries(checkpoint.versions_seen).map(([node, seen]) => [node, shiftAll(seen)])) as Checkpoint["versions_seen"]
  }
}

/** Writes `tuple` to `config`'s thread (same id, or `id`), with every channel value; its pending writes when `writes`. */
const copy = (
  config: Record<string, unknown>,
  tuple: CheckpointTuple,
  as: { readonly id?: string; readonly parent?: string | undefined; readonly writes: boolean; readonly shiftVersionsBy?: number }
) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    const ns = (tuple.config.configurable?.checkpoint_ns as string | undefined) ?? ""
    const checkpoint: Checkpoint = shiftVersions({ ...tuple.checkpoint, id: as.id ?? tuple.checkpoint.id }, as.shiftVersionsBy ?? 0)
    const parent = as.parent ?? (tuple.parentConfig?.configurable?.checkpoint_id as string | undefined)
    const at = { configurable: { ...config, checkpoint_ns: ns, ...(parent === undefined ? {} : { checkpoint_id: parent }) } }
    const metadata = as.id === undefined ? tuple.metadata! : { ...tuple.metadata!, source: "fork" as const }
    yield* promise("put", () => saver.put(at, checkpoint, metadata, checkpoint.channel_versions))
    if (!as.writes) return
    // A decision given to a pause is the source's: the fork pauses anew. A failed task runs again.
    for (const [taskId, writes] of UpdateCheck.writesByTask(tuple)) {
      yield* promise("putWrites", () => saver.putWrites({ configurable: { ...config, checkpoint_ns: ns, checkpoint_id: checkpoint.id } }, writes, taskId))
    }
  })

/**
 * Whether `tuple` is the newest checkpoint of its namespace. Only then are
 * its pending writes those of a step cut short (a pause, a crash, a task that
 * finished while another of its step did not), kept so that the fork does not
 * run that task again; an older checkpoint's writes are those of the step
 * that went on from it, which the fork runs again.
 */
const isNewest = (tenantId: TenantId, threadId: ThreadId, tuple: CheckpointTuple) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    const ns = (tuple.config.configurable?.checkpoint_ns as string | undefined) ?? ""
    const newest = yield* promise("getTuple", () => saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, [tenantConfigKey]: tenantId } }))
    return newest?.checkpoint.id === tuple.checkpoint.id
  })

/** What a fork writes, read (and checked) before anything is: the checkpoints to copy, or the one to write again. */
type Plan =
  | {
    readonly _tag: "NewThread"
    readonly head: CheckpointTuple
    /** Whether the head's pending writes go with it: only when it is its namespace's newest (see `isNewest`). */
    readonly headWrites: boolean
    readonly subgraphs: ReadonlyArray<CheckpointTuple>
  }
  | { readonly _tag: "SameThread"; readonly source: CheckpointTuple }

/** The graph's checkpoint the fork goes on from (a subgraph fork's parent checkpoint). */
const forkedRoot = (plan: Plan): string => plan._tag === "NewThread" ? plan.head.checkpoint.id : plan.source.checkpoint.id

/** The compiled graph's state history, as far as it is needed: the root graph's snapshots down to `from`. */
interface StateHistory {
  readonly getStateHistory: (config: { readonly configurable: Record<string, unknown> }) => AsyncIterable<{
    readonly config: { readonly configurable?: Record<string, unknown> }
    readonly parentConfig?: { readonly configurable?: Record<string, unknown> } | undefined
    readonly metadata?: { readonly step?: number } | undefined
    readonly tasks: ReadonlyArray<{ readonly id: string; readonly name: string }>
  }>
}

/**
 * How many steps a state update adds before the steps the fork runs again:
 * none without one; none when it is written as a node the first run ran
 * right after the forked checkpoint (the update stands in for that node's
 * step, and the steps after it keep their numbers); otherwise one.
 */
const updateSteps = (input: ForkInput, forked: ReusedKeys.HistoryEntry | undefined): number =>
  input.update === undefined || (input.asNode !== undefined && forked?.tasks.some((t) => t.name === input.asNode) === true) ? 0 : 1

/**
 * The first run's keys for a fork that reuses them (see `ReusedKeys`), read
 * from the source thread's history before anything is written.
 */
const reusedKeysOf = (input: ForkInput, workflow: AnyWorkflow, plan: Plan, tenantId: TenantId) =>
  Effect.gen(function*() {
    const graph = (yield* Instance).compiled(workflow) as unknown as StateHistory
    const from = forkedRoot(plan)
    const entries = yield* promise("list", async () => {
      const out: Array<ReusedKeys.HistoryEntry> = []
      for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: input.threadId, checkpoint_ns: "", [tenantConfigKey]: tenantId } })) {
        const at = snapshot.config.configurable ?? {}
        if ((at.checkpoint_ns ?? "") !== "") continue
        const checkpointId = at.checkpoint_id as string
        out.push({
          checkpointId,
          parentId: snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined,
          step: snapshot.metadata?.step ?? -1,
          tasks: snapshot.tasks.map((t) => ({ id: t.id, name: t.name }))
        })
        // Newest first: every descendant of the forked checkpoint came before it.
        if (checkpointId === from) break
      }
      return out
    })
    return ReusedKeys.mapOf(tenantId, input.threadId, from, entries, updateSteps(input, entries.find((e) => e.checkpointId === from)))
  })

const planOf = (input: ForkInput, tenantId: TenantId, target: ThreadId) =>
  Effect.gen(function*() {
    const ns = input.checkpointNs ?? ""
    if (target === input.threadId && ns !== "") {
      return yield* new InvalidInputError({ operation: "Baton.fork", field: "checkpointNs", reason: "forks from inside a subgraph to a new thread only: give toThreadId" })
    }
    const source = yield* tupleOf(tenantId, input.threadId, ns, input.checkpointId)
    if (target === input.threadId) return { _tag: "SameThread", source } satisfies Plan as Plan
    const parentId = ns === "" ? source.checkpoint.id : (source.metadata?.parents as Record<string, string> | undefined)?.[""]
    if (parentId === undefined) {
      return yield* new UnknownCheckpointError({ tenantId, threadId: input.threadId, checkpointNs: "", checkpointId: "(the parent of a subgraph checkpoint)" })
    }
    const head = ns === "" ? source : yield* tupleOf(tenantId, input.threadId, "", parentId)
    const subgraphs = ns === "" ? yield* subgraphsUnder(tenantId, input.threadId, parentId) : [source]
    const headWrites = ns === "" && (yield* isNewest(tenantId, input.threadId, source))
    return { _tag: "NewThread", head, headWrites, subgraphs } satisfies Plan as Plan
  })

/** The plan written to the target under the new root's lease, then the update. */
const writeFork = (input: ForkInput, workflow: AnyWorkflow, plan: Plan, config: Record<string, unknown>) =>
  Effect.gen(function*() {
    const copyId = uuid6(-1)
    if (plan._tag === "NewThread") {
      yield* copy(config, plan.head, { writes: plan.headWrites })
      for (const sub of plan.subgraphs) yield* copy(config, sub, { writes: true })
    } else {
      const above = yield* highestVersion(config[tenantConfigKey] as TenantId, config.thread_id as ThreadId, "")
      yield* copy(config, plan.source, { id: copyId, parent: plan.source.checkpoint.id, writes: false, shiftVersionsBy: above })
    }
    if (input.update === undefined) return
    // The update is written from the checkpoint just copied, the thread's newest: the update's writes are kept on it
    // and the graph goes on from the update's checkpoint. (The compiled graph's `updateState`, which the runtime's
    // own type of it leaves out.)
    const graph = (yield* Instance).compiled(workflow) as unknown as {
      readonly updateState: (config: { readonly configurable: Record<string, unknown> }, values: unknown, asNode?: string) => Promise<unknown>
    }
    yield* Effect.tryPromise({
      try: () => graph.updateState({ configurable: { ...config, checkpoint_id: plan._tag === "NewThread" ? plan.head.checkpoint.id : copyId } }, input.update, input.asNode),
      // It passed on the scratch copy (`UpdateCheck`): failing here, the fork is written already and its root Running.
      catch: (e) =>
        new StoreError({
          store: "CheckpointStore",
          operation: "updateState",
          reason: `the fork's state update failed after the fork was written (${e instanceof Error ? e.message : String(e)}): ` +
            `its execution goes on from the copied checkpoint without the update; cancel it if that is not wanted`,
          cause: e
        })
    })
  })

/** The new root, recorded Running under its lease, the fork written under it; answers the record. */
const startFork = (input: ForkInput, workflow: AnyWorkflow, plan: Plan, reused: ReusedKeys.ReusedKeys | undefined, tenantId: TenantId, target: ThreadId) =>
  Effect.scoped(Effect.gen(function*() {
    const instance = yield* Instance
    const executionId = yield* (yield* IdGenerator).make("execution")
    const now = yield* Clock.currentTimeMillis
    const record: ExecutionRecord = {
      tenantId,
      executionId,
      threadId: target,
      rootExecutionId: executionId,
      parentExecutionId: null,
      depth: 1,
      workflowName: workflow.name,
      workflowVersion: workflow.version,
      configHash: workflow.configHash,
      status: "Running",
      error: null,
      createdAt: now,
      updatedAt: now
    }
    const held = yield* LeaseHolder.acquire({
      tenantId,
      rootExecutionId: executionId,
      holder: instance.nextHolder(),
      leaseMillis: instance.config.leaseMillis,
      renewMillis: instance.config.renewMillis,
      instanceId: instance.instanceId
    })
    if (Option.isNone(held)) return yield* new StoreError({ store: "LeaseStore", operation: "acquire", reason: `the lease of the new execution ${executionId} was taken`, kind: "Data" })
    const started = yield* (yield* RecordStore).startRoot(record)
    if (started._tag === "ThreadBusy") {
      return yield* new ThreadBusyError({ tenantId, threadId: target, executionId: started.active.executionId, status: started.active.status })
    }
    const config = { thread_id: target, [tenantConfigKey]: tenantId, [fenceKey]: held.value.fence, [executionKey]: executionId }
    yield* writeFork(input, workflow, plan, config)
    if (reused !== undefined) {
      yield* (yield* TreeStore).saveReservedFenced(tenantId, executionId, ReusedKeys.reusedKeysName, reused, held.value.lease, held.value.fence.now())
    }
    return record
  }))

/** What a `ForkInput` may hold: a misspelt option (say `reuseIdempotencyKey`) is refused, not ignored. */
const inputFields = ["tenantId", "ownerId", "threadId", "checkpointId", "checkpointNs", "toThreadId", "update", "asNode", "reuseIdempotencyKeys"]

/** Refuses a field the input may not hold, and a `reuseIdempotencyKeys` that is not a boolean. */
const checkInput = (input: ForkInput) => {
  const unknown = Options.unknownField(input, inputFields)
  if (unknown !== undefined) return Effect.fail(new InvalidInputError({ operation: "Baton.fork", field: unknown.field, reason: unknown.reason }))
  if (input.reuseIdempotencyKeys !== undefined && typeof input.reuseIdempotencyKeys !== "boolean") {
    return Effect.fail(new InvalidInputError({ operation: "Baton.fork", field: "reuseIdempotencyKeys", reason: "must be true or false" }))
  }
  return Effect.void
}

/**
 * Forks (see the module) and moves the new execution until it rests: its output, as `execute` answers it.
 *
 * @category internal
 * @since 0.1.0
 */
export const fork = (input: ForkInput) =>
  Effect.gen(function*() {
    yield* notStopping
    yield* checkInput(input)
    const tenantId = input.tenantId ?? defaultTenant
    yield* checkThread(tenantId, input.threadId, input.ownerId)
    const workflow = yield* workflowOf(tenantId, input.threadId)
    const target = input.toThreadId ?? input.threadId
    // Everything the fork copies is read first: a checkpoint that is not there starts nothing.
    const plan = yield* planOf(input, tenantId, target)
    if (input.update !== undefined) {
      yield* plan._tag === "NewThread"
        ? UpdateCheck.check(workflow, plan.head, plan.headWrites, input.update, input.asNode)
        : UpdateCheck.check(workflow, plan.source, false, input.update, input.asNode)
    }
    const reused = input.reuseIdempotencyKeys === true ? yield* reusedKeysOf(input, workflow, plan, tenantId) : undefined
    if (target !== input.threadId) {
      const now = yield* Clock.currentTimeMillis
      const made = yield* (yield* RecordStore).createThread({ tenantId, threadId: target, ownerId: input.ownerId ?? null, now })
      if (!made.created) {
        return yield* new InvalidInputError({ operation: "Baton.fork", field: "toThreadId", reason: `names thread ${target}, which exists: fork to a new thread id, or to the same thread` })
      }
    }
    const record = yield* startFork(input, workflow, plan, reused, tenantId, target)
    const out = yield* TreeDriver.drive(workflow, tenantId, record.rootExecutionId, { _tag: "Continue", reason: "Recovered" }, { wait: true })
    return Option.getOrThrow(out)
  }).pipe(Effect.withSpan("Baton.fork"))
