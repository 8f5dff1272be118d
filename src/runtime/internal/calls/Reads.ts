/**
 * The reads: an execution's status, a tenant's executions page by page, and
 * a thread's pending pauses — from any instance, tenant-scoped (another
 * tenant's ids answer as unknown) and owner-checked like `resume`.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import { UnknownExecutionError } from "../../Errors.ts"
import { type ExecutionRecord, type ExecutionStatus, isRoot } from "../../../stores/ExecutionRecord.ts"
import { defaultTenant, type ExecutionId, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { LeaseStore } from "../../../stores/LeaseStore.ts"
import { instanceOfHolder } from "../../../stores/Lease.ts"
import type { Pause } from "../../../stores/Pause.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as ChildLaunch from "../children/ChildLaunch.ts"
import * as Waits from "../timers/Waits.ts"
import * as ChildWaits from "../children/ChildWaits.ts"
import type { ChildPauseOrigin } from "../../Children.ts"
import { checkThread, rejected } from "./Threads.ts"
import * as Undo from "../undo/Undo.ts"
import * as KeyedView from "../keyed/KeyedView.ts"
import { Instance } from "../Instance.ts"

/**
 * Who asks: the tenant (default `"default"`) and the owner of the thread.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReadOptions {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
}

/**
 * One execution as `list` shows it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionSummary {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  readonly parentExecutionId: ExecutionId | null
  readonly threadId: ThreadId
  readonly workflowName: string
  readonly workflowVersion: string
  readonly status: ExecutionStatus
  readonly createdAt: number
  readonly updatedAt: number
  /** Why it ended, when it failed or was cancelled: the error's tag and message. */
  readonly error: { readonly tag: string; readonly message: string } | null
}

/**
 * A pending pause as the reads show it: answer it with `resume({ pauseId, decision })`.
 *
 * @category models
 * @since 0.1.0
 */
export interface PauseView {
  readonly pauseId: string
  /** What the node's `interrupt()` asked. */
  readonly payload: unknown
  readonly executionId: ExecutionId
  readonly rootExecutionId: ExecutionId
  readonly threadId: ThreadId
  readonly createdAt: number
  /**
   * Present when the pause is one of a child's resting below this
   * execution, forwarded to it (`executionId`, `rootExecutionId` and
   * `threadId` above are then this execution's): which child, its thread
   * and its own pause id (the same as `pauseId`).
   *
   * @since 0.1.0
   */
  readonly child?: ChildPauseOrigin | undefined
}

/**
 * One execution as `status` shows it: its summary, who moves it while it
 * runs, and its pending pauses while it is paused.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionStatusView extends ExecutionSummary {
  /**
   * While Running: the instance holding its tree's lease, with the lease's
   * epoch and expiry; null when no live lease is held (it waits for a
   * recovery) and once it rests.
   */
  readonly holder: {
    readonly instanceId: string
    readonly holder: string
    readonly epoch: number
    readonly expiresAt: number
  } | null
  /** While Paused: its pending pauses (the tree's, for a root) a caller may answer. */
  readonly pendingPauses: ReadonlyArray<PauseView>
  /**
   * While Running and unwinding (its undos running after a failed step or a
   * cancel): why, and how far the undos got; null otherwise.
   */
  readonly unwinding: Undo.UnwindingView | null
  /**
   * While Paused waiting on children it launched (placement `"any"`): one
   * entry per launch still running. The runtime continues it when they end.
   */
  readonly waitingOnChildren: ReadonlyArray<ChildLaunch.ChildrenWait>
  /**
   * While Paused on sleeps or signal waits (`ctx.sleep`, `ctx.waitFor`): each
   * of them. The runtime answers them; none is a pause to `resume`.
   *
   * @since 0.1.0
   */
  readonly waits?: ReadonlyArray<Waits.RestingWait> | undefined
  /**
   * The earliest time a resting wait wakes on its own (a sleep's end, a
   * wait's timeout); null when none will (or nothing rests).
   *
   * @since 0.1.0
   */
  readonly wakesAt?: number | null | undefined
  /**
   * A start with `concurrencyKey` or `debounce` resting before it ran (Paused
   * with no pause): its place in its key's line, or when its window fires;
   * null otherwise.
   *
   * @since 0.1.0
   */
  readonly keyedWait?: KeyedView.KeyedWait | null | undefined
}

/**
 * What `list` takes: the tenant's executions newest first, narrowed by
 * status, workflow name or thread, `limit` (default 50, at most 1000) per
 * page, continuing from a page's `next`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ListOptions extends ReadOptions {
  readonly status?: ExecutionStatus | undefined
  readonly workflow?: string | undefined
  readonly threadId?: ThreadId | undefined
  readonly cursor?: string | undefined
  readonly limit?: number | undefined
}

/**
 * One page of `list`; `next` is null on the last page.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionPage {
  readonly executions: ReadonlyArray<ExecutionSummary>
  readonly next: string | null
}

const errorOf = (record: ExecutionRecord): ExecutionSummary["error"] =>
  record.status === "Failed"
    ? { tag: "ExecutionFailedError", message: record.error ?? "failed" }
    : record.status === "Cancelled"
    ? { tag: "ExecutionCancelledError", message: record.error ?? "cancelled" }
    : null

/**
 * The summary of a record.
 *
 * @category internal
 * @since 0.1.0
 */
export const summary = (record: ExecutionRecord): ExecutionSummary => ({
  tenantId: record.tenantId,
  executionId: record.executionId,
  rootExecutionId: record.rootExecutionId,
  parentExecutionId: record.parentExecutionId,
  threadId: record.threadId,
  workflowName: record.workflowName,
  workflowVersion: record.workflowVersion,
  status: record.status,
  createdAt: record.createdAt,
  updatedAt: record.updatedAt,
  error: errorOf(record)
})

const pauseView = (p: Pause): PauseView => ({
  pauseId: p.pauseId,
  payload: p.payload,
  executionId: p.executionId,
  rootExecutionId: p.rootExecutionId,
  threadId: p.threadId,
  createdAt: p.createdAt
})


/**
 * The record of `executionId` when the caller may read it: another tenant's
 * (or no) record is `UnknownExecutionError`, another owner's thread
 * `ThreadOwnerError`.
 *
 * @category internal
 * @since 0.1.0
 */
export const readableRecord = Effect.fnUntraced(function*(executionId: ExecutionId, options: ReadOptions | undefined) {
  const tenantId = options?.tenantId ?? defaultTenant
  const records = yield* RecordStore
  const record = yield* records.getRecord(tenantId, executionId)
  if (Option.isNone(record)) {
    yield* rejected({ reason: "NotInTenant", tenantId, ownerId: options?.ownerId, executionId })
    return yield* new UnknownExecutionError({ tenantId, executionId })
  }
  yield* checkThread(tenantId, record.value.threadId, options?.ownerId)
  return record.value
})

/** The pauses of the record's resting children, as the record's own (each marked with its child). */
const forwardedViews = (record: ExecutionRecord) =>
  Effect.map(ChildWaits.forwardedOf(record), (leaves) =>
    leaves.map((leaf): PauseView => ({
      pauseId: leaf.pause.pauseId,
      payload: leaf.pause.payload,
      executionId: record.executionId,
      rootExecutionId: record.rootExecutionId,
      threadId: record.threadId,
      createdAt: leaf.pause.createdAt,
      child: ChildWaits.originOf(leaf)
    })))

/** The sleeps and signal waits of the record's resting children, each marked with its child. */
const childWaits = (record: ExecutionRecord) =>
  Effect.map(ChildWaits.timerWaitsBelow(record), (leaves) =>
    leaves.flatMap((leaf) => Waits.restingWaits([leaf.pause]).map((wait): Waits.RestingWait => ({ ...wait, child: ChildWaits.originOf(leaf) }))))

const pendingOfRecord = (record: ExecutionRecord) =>
  Effect.map(
    PauseStore.use((pauses) => pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending"])),
    (pending) => pending.filter((p) => isRoot(record) || p.executionId === record.executionId)
  )

/**
 * `Baton.status`: the execution as it stands.
 *
 * @category internal
 * @since 0.1.0
 */
export const status = (executionId: ExecutionId, options?: ReadOptions) =>
  Effect.gen(function*() {
    const record = yield* readableRecord(executionId, options)
    const lease = record.status === "Running"
      ? yield* LeaseStore.use((leases) => leases.get(record.tenantId, record.rootExecutionId))
      : Option.none()
    const pending = record.status === "Paused" ? yield* pendingOfRecord(record) : []
    const pendingPauses = [...ChildLaunch.answerable(pending).map(pauseView), ...(record.status === "Paused" ? yield* forwardedViews(record) : [])]
    const unwinding = record.status === "Running" ? Option.getOrNull(yield* Undo.view(record.tenantId, record.rootExecutionId)) : null
    const waits = [...Waits.restingWaits(pending), ...(record.status === "Paused" ? yield* childWaits(record) : [])]
    return {
      ...summary(record),
      waitingOnChildren: pending.flatMap((p) => {
        const wait = ChildLaunch.waitOf(p.payload)
        return wait === undefined ? [] : [wait]
      }),
      holder: Option.match(lease, {
        onNone: () => null,
        onSome: (l) => ({ instanceId: instanceOfHolder(l.holder), holder: l.holder, epoch: l.epoch, expiresAt: l.expiresAt })
      }),
      pendingPauses,
      unwinding,
      waits,
      wakesAt: Waits.earliestWake(waits),
      keyedWait: yield* KeyedView.of(yield* Instance, record)
    } satisfies ExecutionStatusView as ExecutionStatusView
  }).pipe(Effect.withSpan("Baton.status"))

/**
 * `Baton.list`: one page of the tenant's executions, newest first. With a
 * `threadId` the thread is owner-checked; without one, executions on threads
 * of another owner are left out of the page (a page may then hold fewer than
 * `limit`; `next` still goes on).
 *
 * @category internal
 * @since 0.1.0
 */
export const list = (options: ListOptions = {}) =>
  Effect.gen(function*() {
    const tenantId = options.tenantId ?? defaultTenant
    const records = yield* RecordStore
    if (options.threadId !== undefined) yield* checkThread(tenantId, options.threadId, options.ownerId)
    const page = yield* records.list({
      tenantId,
      status: options.status,
      workflow: options.workflow,
      threadId: options.threadId,
      cursor: options.cursor,
      limit: options.limit ?? 50
    })
    const owners = new Map<string, string | null>()
    const visible: Array<ExecutionSummary> = []
    for (const record of page.records) {
      if (options.threadId === undefined) {
        if (!owners.has(record.threadId)) {
          const thread = yield* records.getThread(tenantId, record.threadId)
          owners.set(record.threadId, Option.match(thread, { onNone: () => null, onSome: (t) => t.ownerId }))
        }
        const owner = owners.get(record.threadId)
        if (owner != null && owner !== options.ownerId) continue
      }
      visible.push(summary(record))
    }
    return { executions: visible, next: page.next } satisfies ExecutionPage as ExecutionPage
  }).pipe(Effect.withSpan("Baton.list"))

/**
 * `Baton.pendingPauses`: the pauses of the thread's active root waiting for
 * a decision, oldest first (none when the thread has no active root).
 *
 * @category internal
 * @since 0.1.0
 */
export const pendingPauses = (options: ReadOptions & { readonly threadId: ThreadId }) =>
  Effect.gen(function*() {
    const tenantId = options.tenantId ?? defaultTenant
    yield* checkThread(tenantId, options.threadId, options.ownerId)
    const active = yield* RecordStore.use((records) => records.findActiveRoot(tenantId, options.threadId))
    if (Option.isNone(active)) return [] as ReadonlyArray<PauseView>
    const own = ChildLaunch.answerable(yield* pendingOfRecord(active.value)).map(pauseView)
    return active.value.status === "Paused" ? [...own, ...(yield* forwardedViews(active.value))] : own
  }).pipe(Effect.withSpan("Baton.pendingPauses"))
