/**
 * Builds one instance's runtime: its state (`Instance`), its recovery sweep,
 * and its calls (execute, resume, cancel, close, health) bound to both.
 * `Baton.layerWith` wraps it as the `Baton` service; the testing harness
 * uses it directly to reach the instance's state.
 *
 * @since 0.1.0
 */
import * as Lifecycle from "./Lifecycle.ts"
import * as Passes from "./pass/Passes.ts"
import { Clock, Context, Effect, Fiber, FiberSet, Option, Stream } from "effect"
import { RateLimitStore } from "../../stores/RateLimitStore.ts"
import { BatonConfigError } from "../../stores/Errors.ts"
import { CheckpointStore } from "../../stores/CheckpointStore.ts"
import { IdGenerator, maxIdLength } from "../../stores/Ids.ts"
import * as V from "../../stores/internal/validate.ts"
import { LeaseStore } from "../../stores/LeaseStore.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { RecordStore } from "../../stores/RecordStore.ts"
import { TreeStore } from "../../stores/TreeStore.ts"
import * as BatonConfig from "../BatonConfig.ts"
import * as Probes from "./observe/Probes.ts"
import * as Budget from "../limits/Budget.ts"
import type { AnyWorkflow, Workflow } from "../Workflow.ts"
import { cancel, type CancelOptions } from "./calls/CancelThread.ts"
import * as ChildLaunch from "./children/ChildLaunch.ts"
import * as ChildWorker from "./children/ChildWorker.ts"
import { close, type CloseOptions } from "./calls/Close.ts"
import { type AwaitOptions, awaitExecution, type ExecutionHandle } from "./calls/Await.ts"
import { execute, type ExecuteOptions, recordWindow, start } from "./calls/Execute.ts"
import type { ExecutionOutput } from "./pass/Executor.ts"
import { type CompiledGraph, Instance, type InstanceShape, type RuntimeConfig } from "./Instance.ts"
import * as Arguments from "./calls/Arguments.ts"
import * as ProviderHealth from "./limits/ProviderHealth.ts"
import * as QuotaPermit from "./limits/QuotaPermit.ts"
import * as Metering from "./observe/Metering.ts"
import * as RecoverySweep from "./background/RecoverySweep.ts"
import * as Reads from "./calls/Reads.ts"
import * as Retention from "./background/Retention.ts"
import { type ReplyInput, resume, type ResumeInput } from "./calls/Resume.ts"
import * as Replies from "./calls/Replies.ts"
import * as RetentionPolicy from "./checkpoints/RetentionPolicy.ts"
import { deleteThread, type DeleteThreadOptions } from "./checkpoints/DeleteThread.ts"
import { checkpoints, type CheckpointsOptions } from "./checkpoints/StateHistory.ts"
import { fork, type ForkInput } from "./checkpoints/Fork.ts"
import { copyThread, type CopyThreadOptions } from "./checkpoints/CopyThread.ts"
import * as StepSlots from "./limits/StepSlots.ts"
import * as Takeover from "./lease/Takeover.ts"
import * as SendSignal from "./timers/SendSignal.ts"
import * as Waker from "./timers/Waker.ts"
import * as Admitter from "./keyed/Admitter.ts"
import * as Debouncer from "./keyed/Debouncer.ts"
import * as ScheduleFiring from "./schedules/Firing.ts"
import type { Stores } from "./pass/TreeDriver.ts"
import * as Follow from "./stream/Follow.ts"

/** Why a workflow name cannot be kept by every store (a name is a key of records, history and the child queue), if it cannot. */
const nameProblem = (name: unknown): string | undefined =>
  typeof name !== "string" || name.length === 0
    ? "holds a workflow without a name: make each with Workflow.make({ name, version, graph })"
    : name.length > maxIdLength
    ? `holds a workflow name of ${name.length} characters: a name must be at most ${maxIdLength} (the stores key by it)`
    : name.includes("\u0000")
    ? `holds the workflow name ${JSON.stringify(name)}, which holds a NUL character: the stores cannot keep it`
    : !V.isWellFormed(name)
    ? `holds the workflow name ${JSON.stringify(name)}, which ${V.illFormedReason}`
    : undefined

/** The highest `recursionLimit` a workflow may take. */
const maxRecursionLimit = 1_000_000

/**
 * The workflows by name, children included; a list that cannot work fails on field `workflows`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const registry = Effect.fnUntraced(function*(list: ReadonlyArray<AnyWorkflow>) {
  const refuse = (reason: string) => Effect.fail(new BatonConfigError({ field: "workflows", reason }))
  if (!Array.isArray(list)) return yield* refuse("must be an array of workflows made with Workflow.make")
  const workflows = new Map<string, AnyWorkflow>()
  const listed = new Set<string>()
  for (const w of list) {
    if (typeof w?.name !== "string" || w.name.length === 0 || typeof w.version !== "string" || w.version.length === 0) {
      return yield* refuse("holds a workflow without a name or version: make each with Workflow.make({ name, version, graph })")
    }
    const badName = nameProblem(w.name)
    if (badName !== undefined) return yield* refuse(badName)
    if (typeof w.graph?.compile !== "function" || Object.keys(w.graph.nodes ?? {}).length === 0) {
      return yield* refuse(
        `workflow "${w.name}": \`graph\` must be the uncompiled StateGraph with its nodes — pass it before .compile() (the runtime compiles it with its own checkpointer)`
      )
    }
    if (!Array.isArray(w.children)) return yield* refuse(`workflow "${w.name}": \`children\` must be an array of workflows made with Workflow.make`)
    // A declared child listed as well (before or after its parent) is one registration; a name listed twice is not.
    // A declared child and its listing are one graph when their config hashes agree (even two Workflow.make calls).
    const known = workflows.get(w.name)
    if (listed.has(w.name) || (known !== undefined && known.configHash !== w.configHash)) {
      return yield* refuse(`names workflow "${w.name}" twice; names must be unique`)
    }
    listed.add(w.name)
    const cap = w.maxConcurrentExecutions
    if (cap !== undefined && !(Number.isInteger(cap) && cap >= 1)) {
      return yield* refuse(`workflow "${w.name}": maxConcurrentExecutions must be a whole number ≥ 1 (got ${String(cap)})`)
    }
    const limit = w.recursionLimit
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1 && limit <= maxRecursionLimit)) {
      return yield* refuse(`workflow "${w.name}": recursionLimit must be a whole number from 1 to ${maxRecursionLimit} (got ${String(limit)})`)
    }
    yield* Budget.validateDeclared(`workflow "${w.name}": budgets`, w.budgets).pipe(
      Effect.mapError((e) => new BatonConfigError({ field: "workflows", reason: `${e.field} ${e.reason}` }))
    )
    workflows.set(w.name, w)
    // Its children, and theirs (a child may launch children of its own); a name taken by another graph is a conflict.
    const addChildren = (parent: AnyWorkflow): string | undefined => {
      for (const child of parent.children) {
        const badChild = nameProblem(child?.name)
        if (badChild !== undefined) return badChild
        const taken = workflows.get(child.name)
        if (taken !== undefined && taken.configHash !== child.configHash) {
          return `workflow "${parent.name}" declares a child "${child.name}" whose graph differs from the workflow registered under that name (config hashes ${child.configHash} and ${taken.configHash}); names must be unique`
        }
        if (taken !== undefined) continue
        workflows.set(child.name, child)
        const conflict = addChildren(child)
        if (conflict !== undefined) return conflict
      }
      return undefined
    }
    const conflict = addChildren(w)
    if (conflict !== undefined) return yield* refuse(conflict)
  }
  return workflows as ReadonlyMap<string, AnyWorkflow>
})

/** Each workflow's graph compiled once with the instance's checkpointer, keyed by config hash (never by name alone). */
const compiledOnce = (checkpointer: InstanceShape["saver"]) => {
  const graphs = new Map<string, CompiledGraph>()
  return (workflow: AnyWorkflow) => {
    const key = `${workflow.name}#${workflow.configHash}`
    let graph = graphs.get(key)
    if (graph === undefined) {
      graph = workflow.graph.compile({ checkpointer }) as CompiledGraph
      graphs.set(key, graph)
    }
    return graph
  }
}

/** The stores every instance needs. */
const requiredStores: ReadonlyArray<Context.Key<any, any>> = [LeaseStore, RecordStore, PauseStore, TreeStore, CheckpointStore, IdGenerator]

/**
 * The stores in context, or a `BatonConfigError` naming the missing ones:
 * TypeScript refuses a `Baton` Layer without them, JavaScript would meet a
 * defect deep in the build.
 */
const storesGiven = Effect.gen(function*() {
  const missing: Array<string> = []
  for (const store of requiredStores) if (Option.isNone(yield* Effect.serviceOption(store))) missing.push(store.key)
  if (missing.length === 0) return
  return yield* new BatonConfigError({
    field: "stores",
    reason: `are not provided (missing ${missing.join(", ")}): provide a stores bundle — MemoryStores.layer, SqliteStores.layer or PgStores.layer — or each store's Layer`
  })
})

/** The instance's state over the stores in context; the step slots (with a cap) travel with its services. */
const makeInstance = Effect.fnUntraced(function*(
  config: RuntimeConfig,
  slots: StepSlots.StepSlotsShape | undefined,
  runner: Context.Service.Shape<typeof ChildLaunch.ChildRunner>
) {
  const ids = yield* IdGenerator
  const { saver } = yield* CheckpointStore
  const instanceId = config.instanceId ?? (yield* ids.make("instance"))
  const stores = yield* Effect.context<Stores>()
  // Part of every holder id, so two instances given one instanceId by mistake never hold under equal ids (a
  // lease store extends a live lease for its holder): the last 12 characters of a new id (random in production).
  const incarnation = (yield* ids.make("holder")).slice(-12)
  let holderSeq = 0
  return {
    instanceId,
    incarnation,
    config,
    saver,
    passes: Passes.make(),
    lifecycle: yield* Lifecycle.make(yield* Clock.currentTimeMillis),
    nextHolder: () => `${instanceId}#${incarnation}.${++holderSeq}`,
    compiled: compiledOnce(saver),
    services: Context.add(slots === undefined ? stores : Context.add(stores, StepSlots.StepSlots, slots), ChildLaunch.ChildRunner, runner)
  } satisfies InstanceShape as InstanceShape
})

/**
 * One instance's runtime over the stores and `BatonConfig` in context: its
 * state and its calls. Its sweep and background waits live in the scope.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(workflows: ReadonlyArray<AnyWorkflow>) {
  yield* storesGiven
  const registered = yield* registry(workflows)
  yield* RetentionPolicy.validateWorkflows(registered)
  const config: RuntimeConfig = { ...(yield* BatonConfig.validate(yield* BatonConfig.BatonConfig)), workflows: registered }
  const slots = config.maxConcurrentSteps === undefined ? undefined : yield* StepSlots.make(config.maxConcurrentSteps)
  const childState = ChildWorker.makeState()
  const instance = yield* makeInstance(config, slots, childState.runner)
  // Registered first, so released last: the instance's liveness (crash takeover) for its whole scope.
  yield* Takeover.start(instance)
  const capped = [...registered.values()].find((w) => w.maxConcurrentExecutions !== undefined)
  if (capped !== undefined && Option.isNone(Context.getOption(instance.services, RateLimitStore))) {
    return yield* new BatonConfigError({
      field: "workflows",
      reason: `workflow "${capped.name}" sets maxConcurrentExecutions: provide a RateLimitStore shared by the instances (the store bundles do)`
    })
  }
  const providerHealth = yield* ProviderHealth.providerReadiness(config.providers, instance.services)
  yield* QuotaPermit.check(instance)
  yield* SendSignal.checkStores(instance)
  yield* Metering.registerGauges(instance, slots)
  const run = <A, E>(effect: Effect.Effect<A, E, Stores | Instance>): Effect.Effect<A, E> =>
    effect.pipe(Effect.provideService(Instance, instance), Effect.provide(instance.services), Effect.annotateLogs({ instanceId: instance.instanceId }))
  const closeScope = yield* Effect.scope
  const recoveries = yield* FiberSet.make()
  // Started executions run here, in the instance's scope: a caller may go away; close waits for them like any pass.
  const runs = yield* FiberSet.make()
  // The sweep runs on every instance; retention under the fleet's leader. Close stops both (handing the leader lease back).
  // Queued children (placement "any") of the workflows registered here are claimed by a loop of their own (see ChildWorker).
  const children = yield* FiberSet.make()
  // A child run inline by its parent's step is owned here too: a closing (or killed) instance interrupts it.
  childState.state.run = (spec) =>
    Effect.flatMap(FiberSet.run(children, run(ChildWorker.runChild(spec))), (fiber) => Effect.onInterrupt(Fiber.join(fiber), () => Fiber.interrupt(fiber)))
  // Trees whose sleep or signal wait was answered here continue in a set of their own.
  const woken = yield* FiberSet.make()
  const admitted = yield* FiberSet.make()
  const sweep = yield* Effect.forkScoped(run(Effect.all([
    RecoverySweep.run(recoveries),
    Retention.run,
    ChildWorker.run(childState.state, children, recoveries),
    Waker.run(woken),
    // Trees admitted by their concurrency key move here, in a set of their own (only with a ConcurrencyKeyStore).
    Admitter.run(admitted),
    // Debounce windows fire here when due, their trees moved in the same set (only with a DebounceStore).
    Debouncer.run(admitted, (window) => run(recordWindow(runs)(window))),
    // Schedule ticks, once per fleet under the schedules leader (only with a ScheduleStore).
    ScheduleFiring.run({
      start: (workflow, input, options) => Effect.map(start(runs)(workflow, input, options), (started) => started.handle),
      cancel
    })
  ], { concurrency: "unbounded", discard: true })))
  // Added last, run first when the scope closes: from then on every call is refused and liveness is Unhealthy.
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      instance.lifecycle.stop()
      instance.lifecycle.close()
    })
  )
  const closeInstance = close(sweep, closeScope)
  const startIn = start(runs)
  const executeIn = execute(runs)
  return {
    instance,
    instanceId: instance.instanceId,
    start: <I, O>(workflow: Workflow<I, O, any, any>, input: I, options?: ExecuteOptions) =>
      Effect.andThen(
        Effect.andThen(Arguments.workflow("Baton.start", workflow), Arguments.scope("Baton.start", options)),
        run(Effect.map(startIn(workflow, input, options), (started) => started.handle as ExecutionHandle<O>))
      ),
    execute: <I, O>(workflow: Workflow<I, O, any, any>, input: I, options?: ExecuteOptions) =>
      Effect.andThen(
        Effect.andThen(Arguments.workflow("Baton.execute", workflow), Arguments.scope("Baton.execute", options)),
        run(executeIn(workflow, input, options))
      ),
    await: <O = unknown>(target: ExecutionHandle<O> | string, options?: AwaitOptions) =>
      Effect.andThen(
        Effect.andThen(
          Arguments.awaitTarget(target),
          Effect.suspend(() => Arguments.scope("Baton.await", options, { executionId: typeof target === "string" ? target : target.executionId }))
        ),
        run(awaitExecution(target, options)).pipe(Effect.map((out) => out as ExecutionOutput<O>))
      ),
    status: (executionId: string, options?: Reads.ReadOptions) =>
      Effect.andThen(Arguments.scope("Baton.status", options, { executionId }), run(Reads.status(executionId, options))),
    list: (options?: Reads.ListOptions) => Effect.andThen(Arguments.scope("Baton.list", options), run(Reads.list(options))),
    pendingPauses: (options: Reads.ReadOptions & { readonly threadId: string }) =>
      Effect.andThen(
        Effect.andThen(
          Arguments.object("Baton.pendingPauses", "options", "such as { tenantId, ownerId, threadId }", options),
          Arguments.scope("Baton.pendingPauses", options, { threadId: options?.threadId })
        ),
        run(Reads.pendingPauses(options))
      ),
    resume: (input: ResumeInput | ReplyInput) =>
      Effect.andThen(
        Effect.andThen(
          Arguments.object("Baton.resume", "input", "such as { tenantId, ownerId, pauseId, decision }", input),
          Arguments.scope("Baton.resume", input, { pauseId: input?.pauseId })
        ),
        run(Effect.flatMap(
          Effect.flatMap(Replies.isReply(input) ? Replies.interpret(input) : Effect.succeed(input), resume),
          (out) => ChildLaunch.untilNotOnChildren(out, () => awaitExecution(out.executionId, { tenantId: out.tenantId, ownerId: input.ownerId }))
        ))
      ),
    cancel: (threadId: string, options?: CancelOptions) =>
      Effect.andThen(Arguments.scope("Baton.cancel", options, { threadId }), run(cancel(threadId, options))),
    signal: (threadId: string, name: string, payload: unknown, options?: SendSignal.SignalOptions) =>
      Effect.andThen(Arguments.scope("Baton.signal", options, { threadId }), run(SendSignal.signal(threadId, name, payload, options))),
    close: (options?: CloseOptions) => Effect.andThen(Arguments.options("Baton.close", options), run(closeInstance(options))),
    deleteThread: (threadId: string, options?: DeleteThreadOptions) =>
      Effect.andThen(Arguments.scope("Baton.deleteThread", options, { threadId }), run(deleteThread(threadId, options))),
    checkpoints: (threadId: string, options?: CheckpointsOptions) =>
      Effect.andThen(Arguments.scope("Baton.checkpoints", options, { threadId }), run(checkpoints(threadId, options))),
    fork: (input: ForkInput) =>
      Effect.andThen(
        Effect.andThen(
          Arguments.object("Baton.fork", "input", "such as { threadId, checkpointId, toThreadId }", input),
          Arguments.scope("Baton.fork", input, {
            threadId: input?.threadId,
            checkpointId: input?.checkpointId,
            ...(input?.toThreadId === undefined ? {} : { toThreadId: input.toThreadId })
          })
        ),
        run(fork(input))
      ),
    copyThread: (from: string, to: string, options?: CopyThreadOptions) =>
      Effect.andThen(Arguments.scope("Baton.copyThread", options, { from, to }), run(copyThread(from, to, options))),
    checkLiveness: run(Probes.checkLiveness(instance)),
    stream: (threadId: string, options?: Follow.StreamOptions) =>
      Stream.unwrap(Effect.as(Arguments.scope("Baton.stream", options, { threadId }), Follow.follow(threadId, options))).pipe(
        Stream.provideContext(instance.services)
      ),
    checkReadiness: run(Probes.checkReadiness(
      instance,
      Effect.map(Effect.all([StepSlots.readiness(slots), providerHealth]), (parts) => [...parts.flat(), ...Takeover.readiness(instance)])
    ))
  }
})
