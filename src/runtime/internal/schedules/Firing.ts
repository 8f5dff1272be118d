/**
 * The firing of schedule ticks, once per fleet (over a partitioned bundle,
 * `ShardedStores`, once per partition, each under its own leader lease kept
 * in that partition: `PerPartition`): every instance with a
 * `ScheduleStore` campaigns for the `baton/schedules` leader lease (from
 * the first time it sees a schedule not paused: a fleet without schedules
 * holds no such lease); the
 * leader looks at the due schedules, fires their ticks, and sleeps on the
 * Clock until the earliest next tick (at most `sweepInterval`, so it sees
 * schedules created by other processes; one created or resumed in this
 * process wakes it at once).
 *
 * A tick fires exactly once however many instances run:
 * - only the leader fires, and checks its leadership before each tick;
 * - each tick's start carries the request key `@baton/schedule/<id>/<tick>`,
 *   so a tick fired again (a leader that died between the start and the
 *   row's advance, a frozen leader thawed after its lease) answers the
 *   execution already started — a kept key is looked up first, so the
 *   overlap policy never skips a tick that already started;
 * - the row moves on by a compare-and-set of its version: a change in
 *   between (a pause, a delete, another leader) stops this look of it.
 *
 * A start that failed for a passing reason (a store error, a lost lease, the
 * instance closing) leaves the tick due: the next look tries it again, under
 * the same request key. A start refused for good (an unregistered workflow,
 * the tenant over its quota with `onOverQuota: "fail"`, input the workflow
 * refuses) is recorded as the tick's outcome (`Failed`, with its error) and
 * the schedule moves on.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Option } from "effect"
import { RecordStore } from "../../../stores/RecordStore.ts"
import { RequestStore } from "../../../stores/RequestStore.ts"
import { type ScheduleRow, ScheduleStore, type ScheduleStoreShape } from "../../../stores/ScheduleStore.ts"
import * as Leader from "../../Leader.ts"
import type { AnyWorkflow } from "../../Workflow.ts"
import type { ExecutionHandle } from "../calls/Await.ts"
import type { ExecuteOptions } from "../calls/Execute.ts"
import * as PerPartition from "../background/PerPartition.ts"
import { Instance } from "../Instance.ts"
import * as Changes from "./Changes.ts"
import { type Definition, definitionOf, stateOf, type TickState, tickKey, toFire } from "./Definition.ts"
import * as Timing from "./Timing.ts"

/**
 * The name of the leader lease the firing runs under.
 *
 * @category constants
 * @since 0.1.0
 */
export const leaderName = "baton/schedules"

/**
 * How the firing starts and cancels executions: the instance's own calls.
 *
 * @category models
 * @since 0.1.0
 */
export interface Launcher<R> {
  readonly start: (workflow: AnyWorkflow, input: unknown, options: ExecuteOptions) => Effect.Effect<ExecutionHandle, { readonly _tag: string; readonly message: string }, R>
  readonly cancel: (threadId: string, options: { readonly tenantId: string; readonly ownerId?: string | undefined }) => Effect.Effect<unknown, unknown, R>
}

/** What one tick did. */
type Outcome =
  | { readonly _tag: "Started"; readonly executionId: string; readonly threadId: string }
  | { readonly _tag: "Skipped" }
  | { readonly _tag: "Failed"; readonly error: string }

/**
 * The start failures that refuse the tick for good: recorded as its outcome.
 * Any other (a store failing, the instance stopping, a lease lost) leaves
 * the tick due for the next look.
 */
const refusals = new Set([
  "InvalidInputError",
  "UnknownWorkflowError",
  "TenantQuotaExceededError",
  "RequestConflictError",
  "ThreadBusyError",
  "UnknownThreadError",
  "ThreadOwnerError"
])

/** The rows one look reads at a time. */
const pageSize = 100
/** The most pages one look reads (rows a store keeps refusing stay due; the next look tries them). */
const maxPages = 10

const afterTick = (state: TickState, tickAt: number, outcome: Outcome): TickState => ({
  ...state,
  lastTickAt: tickAt,
  lastOutcome: outcome._tag,
  lastExecutionId: outcome._tag === "Started" ? outcome.executionId : state.lastExecutionId,
  lastThreadId: outcome._tag === "Started" ? outcome.threadId : state.lastThreadId,
  lastError: outcome._tag === "Failed" ? outcome.error : null,
  started: state.started + (outcome._tag === "Started" ? 1 : 0),
  notStarted: state.notStarted + (outcome._tag === "Started" ? 0 : 1)
})

/** Whether the execution of the previous tick still runs (Running or Paused). */
const previousRuns = (row: ScheduleRow, state: TickState) =>
  state.lastExecutionId === null
    ? Effect.succeed(false)
    : Effect.gen(function*() {
      const record = yield* (yield* RecordStore).getRecord(row.tenantId, state.lastExecutionId!)
      return Option.isSome(record) && (record.value.status === "Running" || record.value.status === "Paused")
    })

/** Fires one tick: its kept execution, or the overlap policy and a start under the tick's request key. */
const fireTick = <R>(launcher: Launcher<R>, row: ScheduleRow, d: Definition, state: TickState, tickAt: number, now: number) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const requests = yield* Effect.serviceOption(RequestStore)
    if (Option.isNone(requests)) return { _tag: "Failed", error: "schedules need a RequestStore given to the Baton Layer (the store bundles provide one)" } as Outcome
    const key = tickKey(row.scheduleId, tickAt)
    // A kept key: the tick was fired before (its start follows that execution, or starts it if its starter died first).
    const fired = Option.isSome(yield* requests.value.get(row.tenantId, key, now))
    const workflow = instance.config.workflows.get(d.workflow)
    if (workflow === undefined) {
      return { _tag: "Failed", error: `workflow "${d.workflow}" is not registered on instance ${instance.instanceId}: register the schedule's workflow on every instance` } as Outcome
    }
    const scope = { tenantId: row.tenantId, ownerId: d.ownerId ?? undefined }
    if (!fired && d.overlap !== "allow" && (yield* previousRuns(row, state))) {
      if (d.overlap === "skip") return { _tag: "Skipped" } as Outcome
      yield* launcher.cancel(state.lastThreadId!, scope).pipe(
        Effect.catch((e) => Effect.logWarning(`schedule ${row.scheduleId}: cancelling the previous run failed; starting anyway`, e))
      )
    }
    return yield* launcher.start(workflow, d.input, { ...scope, requestKey: key }).pipe(
      Effect.map((h): Outcome => ({ _tag: "Started", executionId: h.executionId, threadId: h.threadId })),
      Effect.catch((e) =>
        refusals.has(e._tag)
          ? Effect.succeed<Outcome>({ _tag: "Failed", error: `${e._tag}: ${e.message}` })
          : Effect.fail(e))
    )
  })

/** Fires the due ticks of one row (by its missed-tick policy) and moves the row on, tick by tick. */
const fireRow = <R>(store: ScheduleStoreShape, launcher: Launcher<R>, row: ScheduleRow, now: number) =>
  Effect.gen(function*() {
    const leadership = yield* Leader.Leadership
    const d = definitionOf(row)
    const { ticks, total } = Timing.due(d.timing, row.nextFireAt, now, d.maxCatchUp)
    const firing = toFire(d, ticks, now)
    const finalNext = Timing.nextAfter(d.timing, now)
    let state: TickState = { ...stateOf(row), notStarted: stateOf(row).notStarted + (total - firing.length) }
    if (firing.length === 0) {
      yield* store.update(row.tenantId, row.scheduleId, row.version, { nextFireAt: finalNext, state }, now)
      return
    }
    let current = row
    for (let i = 0; i < firing.length; i++) {
      const tickAt = firing[i]!
      yield* leadership.check
      const outcome = yield* fireTick(launcher, current, d, state, tickAt, now)
      state = afterTick(state, tickAt, outcome)
      const next = i === firing.length - 1 ? finalNext : Timing.nextAfter(d.timing, tickAt)
      const moved = yield* store.update(row.tenantId, row.scheduleId, current.version, { nextFireAt: next, state }, now)
      // Paused, deleted or changed meanwhile: the next look reads it again.
      if (Option.isNone(moved)) return
      current = moved.value
    }
  })

/** One look: the due rows, page by page, each fired; a row that fails is logged and left due. */
const look = <R>(store: ScheduleStoreShape, launcher: Launcher<R>) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (let page = 0; page < maxPages; page++) {
      const rows = yield* store.due(now, pageSize)
      let moved = 0
      for (const row of rows) {
        const before = row.version
        yield* fireRow(store, launcher, row, now).pipe(
          Effect.catchIf((e) => (e as { _tag?: string })._tag !== "LeaseLostError", (e) =>
            Effect.logWarning(`schedule ${row.scheduleId} (tenant ${row.tenantId}): its due tick is left for the next look`, e))
        )
        const after = yield* store.get(row.tenantId, row.scheduleId)
        if (Option.isNone(after) || after.value.version !== before) moved++
      }
      if (rows.length < pageSize || moved === 0) return
    }
  })

/** Sleeps until the earliest next tick, at most `sweepMillis` (1 s while a tick stays due), or a change in this process. */
const rest = (store: ScheduleStoreShape, sweepMillis: number) =>
  Effect.gen(function*() {
    const changed = yield* Changes.listen
    const next = yield* store.nextDue
    const now = yield* Clock.currentTimeMillis
    const wait = Option.match(next, {
      onNone: () => sweepMillis,
      onSome: (at) => (at <= now ? Math.min(1_000, sweepMillis) : Math.min(at - now, sweepMillis))
    })
    yield* Effect.raceFirst(Effect.sleep(Duration.millis(wait)), changed)
  })

/** Waits until some schedule is not paused: looked at every `sweepMillis`, and at once on a change in this process. */
const untilAnySchedule = (store: ScheduleStoreShape, sweepMillis: number) =>
  Effect.gen(function*() {
    while (true) {
      const changed = yield* Changes.listen
      const next = yield* store.nextDue.pipe(
        Effect.catch((e) => Effect.as(Effect.logWarning("schedules: looking for a schedule failed", e), Option.none<number>()))
      )
      if (Option.isSome(next)) return
      yield* Effect.raceFirst(Effect.sleep(Duration.millis(sweepMillis)), changed)
    }
  })

/**
 * Campaigns for the schedules leader and, while leading, fires due ticks
 * (see the module); runs until interrupted. Without a `ScheduleStore` in
 * context it does nothing.
 *
 * @category internal
 * @since 0.1.0
 */
export const run = <R>(launcher: Launcher<R>) =>
  Effect.gen(function*() {
    const store = yield* Effect.serviceOption(ScheduleStore)
    if (Option.isNone(store)) return
    const instance = yield* Instance
    const { leaseMillis, renewMillis, sweepMillis } = instance.config
    // A failed check (leadership ending) stops the look; the campaign's own watch of the lease ends the term.
    const round = look(store.value, launcher).pipe(
      Effect.catch((e) =>
        (e as { _tag?: string })._tag === "LeaseLostError"
          ? Effect.logDebug("schedules: leadership ended during a look")
          : Effect.logWarning("schedules: a look failed; trying again", e)),
      Effect.andThen(rest(store.value, sweepMillis).pipe(Effect.catch((e) => Effect.andThen(Effect.logWarning("schedules: reading the next tick failed", e), Effect.sleep(Duration.millis(Math.min(1_000, sweepMillis)))))))
    )
    // Per partition (one per shard), confined to it: no campaign (no leader lease to renew) until it has a schedule to fire.
    return yield* PerPartition.each((partition) =>
      Effect.andThen(
        untilAnySchedule(store.value, sweepMillis),
        Leader.run(leaderName, Effect.forever(round), {
          holder: PerPartition.holderIn(`${instance.instanceId}/schedules#${instance.incarnation}`, partition),
          lease: Duration.millis(leaseMillis),
          renewEvery: Duration.millis(renewMillis)
        })
      )
    )
  }).pipe(Effect.catch((e) => Effect.logError("schedules cannot campaign", e)))
