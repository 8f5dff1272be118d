/**
 * Moving one execution tree on this instance: register the pass, take the
 * tree's lease (waiting for it, or not), run a pass, release.
 *
 * @since 0.1.0
 */
import * as ReusedKeys from "./ReusedKeys.ts"
import { Cause, Clock, Data, Deferred, Duration, Effect, Exit, Fiber, FiberSet, Option } from "effect"
import type { ResumeError } from "../../Errors.ts"
import * as Cancel from "../undo/Cancel.ts"
import type { CheckpointStore } from "../../../stores/CheckpointStore.ts"
import { StoreError } from "../../../stores/Errors.ts"
import { ExecutionCancelledError, ThreadBusyError, UnknownExecutionError } from "../../Errors.ts"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { currentOutput, type ExecutionOutput, inputKeyName, type PassStart, runPass } from "./Executor.ts"
import type { IdGenerator } from "../../../stores/Ids.ts"
import { type ActivePass, Instance, type InstanceShape, workflowForRecord } from "../Instance.ts"
import * as LeaseHolder from "../lease/LeaseHolder.ts"
import * as Takeover from "../lease/Takeover.ts"
import * as QuotaPermit from "../limits/QuotaPermit.ts"
import { LeaseStore } from "../../../stores/LeaseStore.ts"
import { LeaseWakeups } from "../../../stores/LeaseWakeups.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { reservedPrefix, TreeStore } from "../../../stores/TreeStore.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import * as Undo from "../undo/Undo.ts"
import * as Gate from "../keyed/Gate.ts"
import * as Debounce from "../keyed/Debounce.ts"
import * as Unwind from "../undo/Unwind.ts"
import * as Passes from "./Passes.ts"

/**
 * The store services the runtime runs over.
 *
 * @category models
 * @since 0.1.0
 */
export type Stores = LeaseStore | RecordStore | PauseStore | TreeStore | CheckpointStore | IdGenerator

interface TrackedPass extends ActivePass {
  readonly setHolder: (holder: LeaseHolder.LeaseHolder) => void
  /** Fails once the pass was stopped (cancel, close) before it held the lease. */
  readonly stopped: Deferred.Deferred<never, unknown>
}

/** Registers a pass on the instance for the duration of `use` (graceful close and test harnesses see it). */
const tracked = <A, E, R>(tenantId: string, rootExecutionId: string, use: (pass: TrackedPass) => Effect.Effect<A, E, R>) =>
  Instance.use((instance) => {
    let holder: LeaseHolder.LeaseHolder | undefined
    const stopped = Deferred.makeUnsafe<never, unknown>()
    const pass: TrackedPass = {
      tenantId,
      rootExecutionId,
      holder: instance.nextHolder(),
      phase: "running",
      bodies: new Set(),
      parkedBodies: 0,
      signal: () => holder?.signal,
      abort: (error) => {
        if (holder !== undefined) holder.abort(error)
        else Deferred.doneUnsafe(stopped, Exit.fail(error))
      },
      setHolder: (h) => {
        holder = h
      },
      stopped
    }
    instance.passes.register(pass)
    return use(pass).pipe(Effect.ensuring(Effect.sync(() => instance.passes.unregister(pass))))
  })

/**
 * Waits until every step body of the pass has settled (they may outlive an
 * aborted invoke) — or until a closing instance's deadline passed, when the
 * bodies still running are named in the log (each one's node and step key).
 */
const bodiesSettled = (pass: ActivePass, instance: InstanceShape) =>
  Effect.asVoid(
    Effect.raceFirst(
      Effect.promise(() => Promise.allSettled([...pass.bodies])).pipe(
        Effect.repeat({ until: () => pass.bodies.size === 0 }),
        Effect.asVoid
      ),
      Deferred.await(instance.lifecycle.closeDeadline).pipe(
        // Counted at the deadline, not when the wait began.
        Effect.andThen(Effect.suspend(() =>
          Effect.logWarning(
            `step bodies still running at the close deadline: ${pass.bodies.size} of execution ${pass.rootExecutionId}: ${Passes.runningBodies(pass).join(", ")}`
          )
        ))
      )
    )
  )

const acquireFor = (pass: TrackedPass) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const { config } = instance
    const tree = yield* TreeStore
    // After each renewal the store confirmed: a cancel request from any instance stops the pass.
    const onConfirmed = tree.get(pass.tenantId, pass.rootExecutionId, Cancel.requestKey).pipe(
      Effect.flatMap((found) =>
        Option.isSome(found)
          ? Effect.sync(() => pass.abort(new ExecutionCancelledError({ tenantId: pass.tenantId, executionId: pass.rootExecutionId })))
          : Effect.void
      ),
      Effect.catch((e) => Effect.logWarning("reading the cancel request failed; read again at the next renewal", e.message)),
      // A tenant quota's permit is renewed with the lease.
      Effect.andThen(QuotaPermit.renewWithLease(pass))
    )
    return yield* LeaseHolder.acquire({
      tenantId: pass.tenantId,
      rootExecutionId: pass.rootExecutionId,
      holder: pass.holder,
      leaseMillis: config.leaseMillis,
      renewMillis: config.renewMillis,
      onConfirmed,
      beforeRelease: bodiesSettled(pass, instance),
      instanceId: instance.instanceId,
      takeOver: Takeover.attempt(instance, pass.tenantId, pass.rootExecutionId, pass.holder, config.leaseMillis),
      stillLive: Takeover.selfLive(instance, pass.tenantId)
    }).pipe(Effect.tap(Option.match({
      onNone: () => Effect.void,
      onSome: (h) => Effect.sync(() => pass.setHolder(h))
    })))
  })

/** Fails with the reason a waiting pass was stopped (a cancel or a closing instance). */
const stoppedWhileWaiting = (pass: TrackedPass): Effect.Effect<never, ResumeError> =>
  Deferred.await(pass.stopped).pipe(Effect.catch((e) => Effect.fail(e as ResumeError)))

/** The registered workflow that may run the record's undos: its name and config hash (or `resumeAnyway`). */
const workflowFor = (record: ExecutionRecord) =>
  Effect.map(Effect.service(Instance), (instance) => {
    const registered = instance.config.workflows.get(record.workflowName)
    return registered !== undefined && (registered.configHash === record.configHash || registered.resumeAnyway) ? registered : undefined
  })

/**
 * True when the tree has undos that need its workflow to run. With none on
 * record, its launched children's hand-offs are closed (see
 * `Undo.closeHandOffs`) before it is read again: a child that claimed its
 * hand-off but has not copied it here yet has it copied (its undos are the
 * tree's to run), one that has not claimed is refused (it undoes itself) —
 * so a child's undos are never lost with a tree ended without its workflow.
 * A lease lost meanwhile answers true: the tree is left to its new holder.
 */
const hasOpenUndos = (record: ExecutionRecord, holder: LeaseHolder.LeaseHolder) =>
  Effect.gen(function*() {
    if (yield* Undo.hasOpen(record.tenantId, record.rootExecutionId)) return true
    yield* Undo.closeHandOffs(holder, record)
    return yield* Undo.hasOpen(record.tenantId, record.rootExecutionId)
  }).pipe(Effect.catchTag("LeaseLostError", () => Effect.succeed(true)))

/**
 * Ends a paused (or orphaned) tree as cancelled if its lease is free now:
 * true when it was ended here, false when another holder keeps it or it
 * had ended (its keys are removed then: a cancel request written after its
 * end goes too). Callers write the tree's cancel request first: an instance
 * that dies partway (its children's hand-offs refused already) leaves the
 * tree to end cancelled by the recovery sweep, which finds the request (see
 * `RecoverySweep`), or by whoever takes its lease first.
 *
 * @category internal
 * @since 0.1.0
 */
export const endIfFree = (record: { readonly tenantId: string; readonly rootExecutionId: string }) =>
  tracked(record.tenantId, record.rootExecutionId, (pass) =>
    Effect.scoped(Effect.gen(function*() {
      const holder = yield* acquireFor(pass)
      if (Option.isNone(holder)) return false
      const records = yield* RecordStore
      const current = yield* records.getRecord(record.tenantId, record.rootExecutionId)
      if (Option.isSome(current) && (current.value.status === "Running" || current.value.status === "Paused")) {
        // Its undos run here when this instance has its workflow; else they wait for an instance that does.
        const workflow = yield* workflowFor(current.value)
        if (workflow === undefined && (yield* hasOpenUndos(current.value, holder.value))) return false
        const unwinder = workflow === undefined ? undefined : yield* Undo.unwinderOf({ record: current.value, workflow, holder: holder.value, pass })
        // Lost meanwhile (a frozen instance's lease expired): the holder now has it; it reads the cancel request.
        return yield* Cancel.endTree(current.value, holder.value.lease, Effect.void, unwinder).pipe(
          Effect.as(true),
          Effect.catchTag("LeaseLostError", () => Effect.succeed(false))
        )
      }
      // Ended meanwhile (or gone), not here: its keys went at its end; a cancel request written since goes now.
      yield* (yield* TreeStore).deleteRoot(record.tenantId, record.rootExecutionId)
      return false
    })))

/**
 * A start of a root whose id another call may start too (both carry one
 * request key, see `Requests`): its lease is held by another holder
 * (`Leased`: that call is starting it, or runs it), or its record exists
 * (`Recorded`). Never a failure of the caller: it follows that start.
 *
 * @category internal
 * @since 0.1.0
 */
export class StartTaken extends Data.TaggedError("StartTaken")<{ readonly why: "Leased" | "Recorded" }> {}

/**
 * Records and runs a brand-new tree from its input, born leased: takes the
 * lease of its fresh root id first, keeps the input with the tree, then
 * records the root with `RecordStore.startRoot` — only if its thread has no
 * active root (else `ThreadBusyError`: the kept input is dropped and the
 * lease released as the scope closes, nothing recorded). `recorded` runs
 * once the root is recorded and leased; then the pass runs.
 *
 * @category internal
 * @since 0.1.0
 */
export const start = (
  workflow: AnyWorkflow,
  record: ExecutionRecord,
  input: unknown,
  recorded: Effect.Effect<unknown>,
  options?: {
    readonly shared?: boolean | undefined
    /** Started with a concurrency key: the root runs once its key admits it, else rests waiting (see `Gate`). */
    readonly keyed?: Gate.Marker | undefined
    /** Started with debounce: the root rests until its window fires, and runs with the window's last input (see `Debounce`). */
    readonly debounced?: { readonly key: string } | undefined
  }
) =>
  tracked(record.tenantId, record.rootExecutionId, (pass) =>
    Effect.scoped(Effect.gen(function*() {
      const { rootExecutionId, tenantId, threadId } = record
      const holder = yield* acquireFor(pass)
      // An id shared by a request key: another call of that key starts (or ran) it.
      if (Option.isNone(holder) && options?.shared === true) return yield* new StartTaken({ why: "Leased" })
      // Under the lease, before the input is kept: a shared id recorded meanwhile (and maybe ended) is left as it is.
      if (options?.shared === true && Option.isSome(yield* (yield* RecordStore).getRecord(tenantId, rootExecutionId))) {
        return yield* new StartTaken({ why: "Recorded" })
      }
      if (Option.isNone(holder)) {
        return yield* new StoreError({
          store: "LeaseStore",
          operation: "acquire",
          reason: `the lease of new execution ${rootExecutionId} is held by another holder: the IdGenerator must make unique ids`
        })
      }
      // Over its tenant's quota with onOverQuota "fail": fails here, before anything is recorded.
      yield* QuotaPermit.admitNew(yield* Instance, pass, holder.value)
      const tree = yield* TreeStore
      // The input is kept with the tree until it ends: a holder that dies before LangGraph's first
      // checkpoint leaves a recovery nothing else to start from.
      // A debounced root keeps its input when its window fires: the last start's, not this one's.
      const debounced = options?.debounced
      if (debounced !== undefined) yield* tree.saveReservedIfAbsent(tenantId, rootExecutionId, Gate.debounceName, debounced)
      else yield* tree.saveReservedIfAbsent(tenantId, rootExecutionId, inputKeyName, input ?? null)
      // Its key before its record: whoever takes the tree after a crash finds it, and places the entry.
      const keyed = options?.keyed
      if (keyed !== undefined) yield* tree.saveReservedIfAbsent(tenantId, rootExecutionId, Gate.markerName, keyed)
      const outcome = yield* (yield* RecordStore).startRoot(record)
      if (outcome._tag !== "Started") {
        if (outcome._tag === "IdTaken" && options?.shared === true) return yield* new StartTaken({ why: "Recorded" })
        if (outcome._tag === "IdTaken") {
          return yield* new StoreError({
            store: "RecordStore",
            operation: "startRoot",
            reason: `an execution ${rootExecutionId} exists already: the IdGenerator must make unique ids`
          })
        }
        yield* tree.deleteRoot(tenantId, rootExecutionId)
        const { executionId, status } = outcome.active
        return yield* new ThreadBusyError({ tenantId, threadId, executionId, status })
      }
      yield* recorded
      if (keyed !== undefined && !(yield* Gate.pass(yield* Instance, record, holder.value, keyed))) {
        return yield* currentOutput(workflow, { ...record, status: "Paused" })
      }
      if (debounced !== undefined) {
        const fired = yield* Debounce.pass(yield* Instance, record, holder.value, inputKeyName)
        if (Option.isNone(fired)) return yield* currentOutput(workflow, { ...record, status: "Paused" })
        return yield* runPass({ workflow, record, holder: holder.value, pass, start: { _tag: "Input", input: fired.value } })
      }
      return yield* runPass({ workflow, record, holder: holder.value, pass, start: { _tag: "Input", input } })
    })))

/** Told how a try failed, before its lease is released. */
type OnFailure = (cause: Cause.Cause<unknown>) => Effect.Effect<void, never, Stores | Instance>

/** One try at moving the tree: `None` when another holder keeps its lease. */
const attemptPass = (workflow: AnyWorkflow, pass: TrackedPass, begin: PassStart, onFailure?: OnFailure) =>
  Effect.scoped(Effect.tapCause(Effect.gen(function*() {
    const { rootExecutionId, tenantId } = pass
    const holder = yield* acquireFor(pass)
    if (Option.isNone(holder)) return Option.none<ExecutionOutput>()
    pass.phase = "running"
    const records = yield* RecordStore
    const pauses = yield* PauseStore
    const record = yield* records.getRecord(tenantId, rootExecutionId).pipe(
      Effect.flatMap(Option.match({
        // Its thread was deleted (`Baton.deleteThread`) while this pass waited for the lease.
        onNone: () => Effect.fail(new UnknownExecutionError({ tenantId, executionId: rootExecutionId })),
        onSome: Effect.succeed
      }))
    )
    if (record.status !== "Running" && record.status !== "Paused") return Option.some(yield* currentOutput(workflow, record))
    // Built only for the tree that stops here (a pass that runs builds its own with its step recorder).
    const unwinder = Undo.unwinderOf({ record, workflow, holder: holder.value, pass })
    // What stops the tree, read in one call: its unwinding state and its cancel request (and a fork's reused keys,
    // a keyed start's gate).
    const tree = yield* TreeStore
    const stops = yield* tree.getMany(tenantId, rootExecutionId, [Undo.unwindingKey, Cancel.requestKey, ReusedKeys.reusedKeysKey, ...Gate.keys])
    const left = stops.find((e) => e.key === Undo.unwindingKey)
    // A tree left unwinding comes first: its remaining undos run, it ends with the recorded reason, no step runs.
    const unwinding = record.status === "Running" && left !== undefined ? Option.some(left.value as Undo.Unwinding) : Option.none()
    if (Option.isSome(unwinding)) {
      yield* Effect.logWarning(`execution ${rootExecutionId} was left unwinding (${unwinding.value.reason}): finishing its undos`)
      return yield* Effect.flatMap(Unwind.finish(yield* unwinder, unwinding.value), Effect.fail)
    }
    // A durable cancel request next: the tree's undos run, it ends cancelled, no step runs.
    if (stops.some((e) => e.key === Cancel.requestKey)) {
      return yield* Effect.flatMap(Cancel.endTree(record, holder.value.lease, Effect.void, yield* unwinder), Effect.fail)
    }
    const keyed = Gate.waitingOf(stops)
    const debounced = Gate.debounceWaiting(stops)
    // A keyed tree on an instance without the store it waits on is left to one that has it (not run, not failed).
    if (yield* Gate.cannotMove(yield* Instance, record, { keyed: keyed !== undefined, debounced })) return Option.none<ExecutionOutput>()
    // A root started with a concurrency key and not admitted yet: it runs from its input once admitted, else rests.
    if (keyed !== undefined) {
      if (!(yield* Gate.pass(yield* Instance, record, holder.value, keyed))) return Option.some(yield* currentOutput(workflow, { ...record, status: "Paused" }))
      if (record.status === "Paused") {
        yield* records.setStatusFenced({ tenantId, executionId: rootExecutionId, from: "Paused", to: "Running", now: yield* Clock.currentTimeMillis, lease: holder.value.lease })
      }
      const input = yield* tree.get(tenantId, rootExecutionId, reservedPrefix + inputKeyName)
      const start: PassStart = Option.isSome(input) ? { _tag: "Input", input: input.value } : begin
      return Option.some(yield* runPass({ workflow, record: { ...record, status: "Running" }, holder: holder.value, pass, start, cancelChecked: true }))
    }
    // A debounced root whose window has not fired: it runs from the window's last input once it fires, else rests.
    if (debounced) {
      const fired = yield* Debounce.pass(yield* Instance, record, holder.value, inputKeyName)
      if (Option.isNone(fired)) return Option.some(yield* currentOutput(workflow, { ...record, status: "Paused" }))
      const running = { ...record, status: "Running" as const }
      return Option.some(yield* runPass({ workflow, record: running, holder: holder.value, pass, start: { _tag: "Input", input: fired.value }, cancelChecked: true }))
    }
    if (record.status === "Paused") {
      const resolved = yield* pauses.listByRoot(tenantId, rootExecutionId, ["Resolved"])
      if (resolved.length === 0) return Option.some(yield* currentOutput(workflow, record))
    }
    const reusedKeys = stops.find((e) => e.key === ReusedKeys.reusedKeysKey)?.value as ReusedKeys.ReusedKeys | undefined
    return Option.some(yield* runPass({ workflow, record, holder: holder.value, pass, start: begin, cancelChecked: true, reusedKeys }))
  }), (cause) => onFailure === undefined ? Effect.void : onFailure(cause)))

/**
 * Waits while a tree's lease is held: until a release in this process (or a
 * backend's wake-up), its expiry, or the next poll on the Clock, whichever
 * comes first. A waiter then looks again.
 *
 * @category internal
 * @since 0.1.0
 */
export const untilLeaseFree = (tenantId: string, rootExecutionId: string) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const leases = yield* LeaseStore
    const wakeups = yield* LeaseWakeups
    // Listen before reading the lease: a release between the read and the wait is not missed.
    const released = yield* Effect.forkChild(wakeups.next(tenantId, rootExecutionId), { startImmediately: true })
    const now = yield* Clock.currentTimeMillis
    const current = yield* leases.get(tenantId, rootExecutionId)
    const untilExpiry = Option.match(current, { onNone: () => 0, onSome: (l) => Math.max(0, l.expiresAt - now) })
    yield* Effect.raceFirst(
      Effect.sleep(Duration.millis(Math.min(untilExpiry, instance.config.waitPollMillis))),
      Fiber.join(released)
    ).pipe(Effect.ensuring(Fiber.interrupt(released)))
  })

/** A pass waiting for the held lease (see `untilLeaseFree`), seen as waiting by close and test harnesses. */
const waitForLease = (pass: TrackedPass) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    pass.phase = "waiting"
    instance.passes.progressed()
    yield* untilLeaseFree(pass.tenantId, pass.rootExecutionId)
  })

/**
 * Moves an existing tree. Takes its lease — when `wait` is true, waiting
 * while another holder keeps it (woken by a release in this process, else at
 * its expiry or the next poll); when false, giving up (`None`) if it is
 * held. Then runs a pass, or answers the tree's current output when there is
 * nothing to do (it finished, or rests paused with no decision waiting).
 * `onFailure` sees a failed try while its lease (if taken) is still held.
 *
 * @category internal
 * @since 0.1.0
 */
export const drive = (
  workflow: AnyWorkflow,
  tenantId: string,
  rootExecutionId: string,
  begin: PassStart,
  options: { readonly wait: boolean; readonly onFailure?: OnFailure | undefined }
): Effect.Effect<Option.Option<ExecutionOutput>, ResumeError, Stores | Instance> =>
  tracked(tenantId, rootExecutionId, (pass) => {
    const attempt = attemptPass(workflow, pass, begin, options.onFailure)
    if (!options.wait) return attempt
    const loop: Effect.Effect<Option.Option<ExecutionOutput>, ResumeError, Stores | Instance> = attempt.pipe(
      Effect.flatMap((out) =>
        Option.isSome(out) ? Effect.succeed(out) : Effect.andThen(Effect.raceFirst(waitForLease(pass), stoppedWhileWaiting(pass)), loop)
      )
    )
    return loop
  })

/**
 * Continues a resting root's tree in a fiber of `fibers` (a concurrency
 * key's admission, a debounce window's firing, an answered wait, a launch
 * whose children ended), taking its lease only if it is free: a holder
 * that has it takes the news itself. Answers false, and starts nothing,
 * when the tree's workflow is not registered here (an instance that runs
 * it moves it). A continuation that stops is logged at debug level as
 * "`what` stopped".
 *
 * @category internal
 * @since 0.1.0
 */
export const continueInBackground = Effect.fnUntraced(function*(
  root: ExecutionRecord,
  fibers: FiberSet.FiberSet<unknown, unknown>,
  reason: "Recovered" | "Answered",
  what: string
) {
  const workflow = yield* Effect.option(workflowForRecord(root))
  if (Option.isNone(workflow)) return false
  const { tenantId, rootExecutionId } = root
  yield* FiberSet.run(
    fibers,
    drive(workflow.value, tenantId, rootExecutionId, { _tag: "Continue", reason }, { wait: false }).pipe(
      Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logDebug(`${what} stopped`, cause)),
      Effect.annotateLogs({ executionId: rootExecutionId, tenantId })
    )
  )
  return true
})
