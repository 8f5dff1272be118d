/**
 * The baton runtime of one instance: `start` (or `execute`), `await`,
 * `resume` and `cancel` workflow executions, and read their `status`, their
 * `list` and a thread's `pendingPauses`, over the store Layers the app
 * provides. Every read works from any instance, tenant-scoped and
 * owner-checked like `resume`.
 *
 * Three ways to build it, the way Effect's packages build a service from its
 * config: `Baton.layer(options)` (workflows and options in code),
 * `Baton.layerWith({ workflows })` over a `BatonConfig` the app provides
 * (`BatonConfig.layer`, `BatonConfig.layerConfig`, or its own), and
 * `Baton.layerConfig({ workflows })`, whose options come from the `BATON_*`
 * keys of the current `ConfigProvider`.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Effect as EffectNs, Layer } from "effect"
import type { BatonConfigError, InvalidInputError } from "../stores/Errors.ts"
import type { SignalError } from "./Errors.ts"
import type { SentSignal, SignalOptions } from "./internal/timers/SendSignal.ts"
import type { AwaitError, CancelError, DeleteThreadError, ExecuteError, ReadError, ResumeError } from "./Errors.ts"
import type { DeleteThreadOptions } from "./internal/checkpoints/DeleteThread.ts"
import type { CheckpointPage, CheckpointsOptions } from "./internal/checkpoints/StateHistory.ts"
import type { ForkInput } from "./internal/checkpoints/Fork.ts"
import type { CopyThreadOptions } from "./internal/checkpoints/CopyThread.ts"
import type { CopyThreadError, ForkError } from "./Errors.ts"
import type { CheckpointStore } from "../stores/CheckpointStore.ts"
import type { ExecutionId, IdGenerator, InstanceId, ThreadId } from "../stores/Ids.ts"
import type { LeaseStore } from "../stores/LeaseStore.ts"
import type { PauseStore } from "../stores/PauseStore.ts"
import type { RecordStore } from "../stores/RecordStore.ts"
import type { TreeStore } from "../stores/TreeStore.ts"
import * as BatonConfig from "./BatonConfig.ts"
import type * as Health from "./Health.ts"
import type { Stream as StreamNs } from "effect"
import type { StreamEvent } from "../stores/EventStore.ts"
import type { StreamOptions } from "./internal/stream/Follow.ts"
import type { AwaitOptions, ExecutionHandle } from "./internal/calls/Await.ts"
import type { CancelOptions } from "./internal/calls/CancelThread.ts"
import type { CloseOptions } from "./internal/calls/Close.ts"
import type { ExecuteOptions } from "./internal/calls/Execute.ts"
import type { ExecutionOutput } from "./internal/pass/Executor.ts"
import type { ExecutionPage, ExecutionStatusView, ListOptions, PauseView, ReadOptions } from "./internal/calls/Reads.ts"
import type { ReplyInput, ResumeInput } from "./internal/calls/Resume.ts"
import * as Runtime from "./internal/Runtime.ts"
import * as Diagnostics from "./Diagnostics.ts"
import type { StoreError } from "../stores/Errors.ts"
import type { AnyWorkflow, Requirements, Workflow } from "./Workflow.ts"

export type { AwaitOptions, ExecutionHandle } from "./internal/calls/Await.ts"
export type { CancelOptions } from "./internal/calls/CancelThread.ts"
export type { CloseOptions } from "./internal/calls/Close.ts"
export type { ExecuteOptions } from "./internal/calls/Execute.ts"
export type { ConcurrencyKey, Debounce } from "./internal/keyed/KeyedOptions.ts"
export type { KeyedWait } from "./internal/keyed/KeyedView.ts"
export type { ExecutionOutput, PendingPause } from "./internal/pass/Executor.ts"
export type { ExecutionPage, ExecutionStatusView, ExecutionSummary, ListOptions, PauseView, ReadOptions } from "./internal/calls/Reads.ts"
export type { ReplyInput, ResumeInput } from "./internal/calls/Resume.ts"
export type { StreamOptions } from "./internal/stream/Follow.ts"
export type { UnwindingView } from "./internal/undo/Undo.ts"
export type { AwaitError, CancelError, ExecuteError, ReadError, ResumeError } from "./Errors.ts"
export type { SentSignal, SignalOptions } from "./internal/timers/SendSignal.ts"
export type { RestingWait } from "./internal/timers/Waits.ts"
export type { CopyThreadError, DeleteThreadError, ForkError, SignalError } from "./Errors.ts"
export type { DeleteThreadOptions } from "./internal/checkpoints/DeleteThread.ts"
export type { CheckpointPage, CheckpointsOptions, CheckpointView } from "./internal/checkpoints/StateHistory.ts"
export type { ForkInput } from "./internal/checkpoints/Fork.ts"
export type { CopyThreadOptions } from "./internal/checkpoints/CopyThread.ts"

/**
 * The store services the runtime runs over (the app provides them, e.g.
 * `MemoryStores.layer`, `SqliteStores.layer(...)`, `PgStores.layer(...)`).
 * Used when given (the bundles give them all): `RequestStore` (needed by a
 * call with a `requestKey`), `ExecutionHistoryStore` (snapshots) and
 * `LedgerStore` (budgets; spend in snapshots).
 *
 * @category models
 * @since 0.1.0
 */
export type BatonStores = LeaseStore | RecordStore | PauseStore | TreeStore | CheckpointStore | IdGenerator

/**
 * What one instance's runtime offers.
 *
 * @category models
 * @since 0.1.0
 */
export interface BatonShape {
  readonly instanceId: InstanceId
  /**
   * Starts an execution of `workflow` on a thread (new, or an idle existing
   * one) and answers its handle once the root is durably recorded and
   * leased; the run goes on in the instance (the caller may go away; `close`
   * treats it like any pass). The input is decoded by the workflow's input
   * schema and checked as JSON before anything is written (bad input:
   * `InvalidInputError` naming the path). A thread with a Running or Paused
   * root fails with `ThreadBusyError`: of concurrent starts on one idle
   * thread, on any instances, exactly one starts. With `requestKey`, every
   * call of the key (retried, racing, on any instance, after the first caller
   * died) answers the handle of one execution, started once; the same key
   * for another request is `RequestConflictError`.
   */
  readonly start: <I, O>(workflow: Workflow<I, O, any, any>, input: I, options?: ExecuteOptions) => EffectNs.Effect<ExecutionHandle<O>, ExecuteError>
  /**
   * `start`, then the run's output: it finishes (its final state) or pauses
   * (its pending pauses). Fails with `LeaseLostError` if this instance lost
   * the tree meanwhile — the execution goes on elsewhere (`await` it). A
   * `StoreError` or `InvalidInputError` after the root was recorded carries
   * `recorded` (its ids): await it, do not retry. With `requestKey`, a
   * repeated call answers the first call's output (or awaits the execution).
   */
  readonly execute: <I, O>(workflow: Workflow<I, O, any, any>, input: I, options?: ExecuteOptions) => EffectNs.Effect<ExecutionOutput<O>, ExecuteError>
  /**
   * The output of an execution once it rests, as `execute` answers it —
   * `Finished` or `Paused` — or its end (`ExecutionFailedError`,
   * `ExecutionCancelledError`), on any instance: one that is not moving it
   * waits for its record to settle (woken by a release of its tree, in this
   * process or by Postgres NOTIFY, else polling on the Clock). With
   * `timeout`, gives up with `AwaitTimeoutError` (the execution goes on).
   */
  readonly await: <O = unknown>(target: ExecutionHandle<O> | ExecutionId, options?: AwaitOptions) => EffectNs.Effect<ExecutionOutput<O>, AwaitError>
  /**
   * An execution as it stands: workflow, status, times, its holder while it
   * runs, its error when it failed, its pending pauses when paused. Another
   * tenant's id is `UnknownExecutionError`; another owner's thread
   * `ThreadOwnerError`.
   */
  readonly status: (executionId: ExecutionId, options?: ReadOptions) => EffectNs.Effect<ExecutionStatusView, ReadError>
  /** One page of a tenant's executions, newest first; pass a page's `next` as `cursor` for the next one. */
  readonly list: (options?: ListOptions) => EffectNs.Effect<ExecutionPage, ReadError>
  /** The pauses of the thread's active execution waiting for a decision, with their ids and payloads. */
  readonly pendingPauses: (options: ReadOptions & { readonly threadId: ThreadId }) => EffectNs.Effect<ReadonlyArray<PauseView>, ReadError>
  /**
   * Records a decision for a pending pause (exactly once: a second answer
   * fails with `NotPausedError`), then takes the tree's lease — waiting while
   * another call or instance holds it — and continues the tree with every
   * decision recorded for it. Answers the tree's output once it rests. A
   * `StoreError` or `InvalidInputError` after the decision was written
   * carries `recorded`: await the execution, do not resume again. With
   * `requestKey`, a repeated call continues or awaits the same tree instead
   * of failing with `NotPausedError`.
   */
  readonly resume: (input: ResumeInput | ReplyInput) => EffectNs.Effect<ExecutionOutput, ResumeError>
  /**
   * Cancels the thread's running or paused execution, wherever it runs:
   * aborted at once here, ended under its lease when paused, or asked to stop
   * through a durable request its holder reads within one renewal.
   * `cancelled` is false when nothing was left to cancel.
   */
  readonly cancel: (threadId: ThreadId, options?: CancelOptions) => EffectNs.Effect<{ readonly cancelled: boolean }, CancelError>
  /**
   * Graceful stop: stops the sweep, waits for running passes, and a grace
   * before `timeout` (min(5 s, 20 %)) interrupts what is left — each pass
   * releases its lease once its step bodies returned and stays Running, so
   * another instance takes it at once. Ends within `timeout` (default 25 s;
   * 0 stops at once). New calls fail with `InstanceStoppingError`. A
   * `timeout` that is not a duration ≥ 0 is `InvalidInputError` (nothing stops).
   */
  readonly close: (options?: CloseOptions) => EffectNs.Effect<void, InvalidInputError>
  /**
   * Sends signal `name` with `payload` to the thread's running or paused
   * execution, from any instance: checked like `resume` (tenant, owner), the
   * name against the workflow's `signals` (`UnknownSignalError`) and the
   * payload against its schema (`InvalidInputError`), before anything is
   * written. Kept durably in send order until a `ctx.waitFor(name)` takes it
   * — exactly one wait takes each — and a wait resting on it is woken by any
   * instance. A thread with no running or paused execution is
   * `ThreadNotRunningError` (nothing written; also when a cancel ended the
   * tree before any wait took the signal).
   *
   * @since 0.1.0
   */
  readonly signal: (threadId: ThreadId, name: string, payload: unknown, options?: SignalOptions) => EffectNs.Effect<SentSignal, SignalError>
  /** No I/O: Unhealthy while stopping or when the recovery sweep is stuck. */
  readonly checkLiveness: EffectNs.Effect<Health.HealthReport>
  /**
   * Deletes every row of the thread — checkpoints, records, pauses,
   * history, request keys, tree keys — on any instance, tenant- and
   * owner-checked. A Paused tree is ended first (its undos run); a tree a
   * pass holds fails the call with `ThreadHeldError` (nothing deleted)
   * unless `cancelFirst`. Of a delete and a start or resume racing on
   * another instance exactly one goes on; the other gets a typed error. A
   * delete that died halfway is finished by calling it again or by the
   * recovery sweep; meanwhile nothing starts on the thread.
   *
   * @since 0.1.0
   */
  readonly deleteThread: (threadId: ThreadId, options?: DeleteThreadOptions) => EffectNs.Effect<void, DeleteThreadError>
  /**
   * A thread's state history: one page of its checkpoints (of one
   * namespace, the graph's own by default), newest first — id, step,
   * source, the nodes whose step wrote it, when, its parent and the
   * execution that wrote it. Pass a page's `next` as `cursor`.
   *
   * @since 0.1.0
   */
  readonly checkpoints: (threadId: ThreadId, options?: CheckpointsOptions) => EffectNs.Effect<CheckpointPage, ReadError>
  /**
   * A new execution from a past checkpoint of a thread, on a new thread
   * (`toThreadId`) or the same idle one, after an optional state update
   * (LangGraph's `updateState`); recorded and written fenced like any
   * start, then moved until it rests (answers its output, as `execute`).
   * Only the steps after the checkpoint run; forked to a new thread, a
   * subgraph caught mid-way goes on from its own checkpoint. A checkpoint
   * the thread does not hold is `UnknownCheckpointError`.
   *
   * @since 0.1.0
   */
  readonly fork: (input: ForkInput) => EffectNs.Effect<ExecutionOutput, ForkError>
  /**
   * Copies every checkpoint of thread `from` to the new thread `to` of the
   * same tenant (owned like `from`); no execution is copied. Refused with
   * `ThreadHeldError` while a pass moves a tree of `from`; a `to` that exists
   * is `InvalidInputError`. Answers how many checkpoints were copied.
   *
   * @since 0.1.0
   */
  readonly copyThread: (from: ThreadId, to: ThreadId, options?: CopyThreadOptions) => EffectNs.Effect<{ readonly checkpoints: number }, CopyThreadError>
  /** Liveness plus every store's ping under 2 s, the step slots, and the breakers of the configured `providers` (Degraded while open). */
  readonly checkReadiness: EffectNs.Effect<Health.HealthReport>
  /**
   * The live output of a thread, from any instance: the events its
   * executions streamed (LangGraph's `values`, `updates`, `custom` and
   * `messages` modes, and `status` changes), after `lastEventId` first, then
   * each as the holder — on this instance or another — appends it, across
   * takeovers, each once and in order. Tenant-scoped and owner-checked like
   * `pendingPauses`; endless unless `until` says where to stop.
   *
   * @since 0.1.0
   */
  readonly stream: (threadId: ThreadId, options?: StreamOptions) => StreamNs.Stream<StreamEvent, ReadError>
}

/**
 * The runtime of one instance, as a service.
 *
 * @category services
 * @since 0.1.0
 */
export class Baton extends Context.Service<Baton, BatonShape>()("baton/Baton") {}

/** The workflows-only options of `layerWith` / `layerConfig`: anything else is refused, naming it. */
const workflowsOnly = (options: { readonly workflows: ReadonlyArray<AnyWorkflow> }) =>
  BatonConfig.refuseUnknown(options ?? {}, ["workflows"])

/**
 * The runtime with its workflows and options in code; unset options take `BatonConfig.defaults`. A bad value, or an option that does not exist, fails with `BatonConfigError` naming the field.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = <const W extends ReadonlyArray<AnyWorkflow>>(
  options: BatonConfig.BatonOptions & { readonly workflows: W }
): Layer.Layer<Baton, BatonConfigError, BatonStores | Requirements<W[number]>> => {
  const { workflows, ...rest } = options ?? ({} as BatonConfig.BatonOptions & { readonly workflows: W })
  return layerWith({ workflows }).pipe(Layer.provide(BatonConfig.layer(rest)))
}

/**
 * The runtime over the stores in context and the `BatonConfig` the app provides; only the workflows are given here. Values of the provided config that cannot work fail with `BatonConfigError`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = <const W extends ReadonlyArray<AnyWorkflow>>(
  options: { readonly workflows: W }
): Layer.Layer<Baton, BatonConfigError, BatonStores | BatonConfig.BatonConfig | Requirements<W[number]>> =>
  Layer.effect(Baton)(
    // The services the workflows' Effect steps need are read from the context the runtime is built in.
    Effect.andThen(Effect.andThen(Effect.context<Requirements<W[number]>>(), workflowsOnly(options)), Runtime.make(options?.workflows)).pipe(
      Effect.map(({ instance: _, ...baton }): BatonShape => baton)
    )
  )

/**
 * The runtime with its workflows in code and its options from `Config`: the `BATON_*` keys of the current `ConfigProvider` (see `BatonConfig.configKeys`), the environment unless one is provided.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerConfig = <const W extends ReadonlyArray<AnyWorkflow>>(
  options: { readonly workflows: W }
): Layer.Layer<Baton, BatonConfigError, BatonStores | Requirements<W[number]>> =>
  layerWith(options).pipe(Layer.provide(BatonConfig.layerConfig()))

/**
 * The configuration an instance runs with when its options are `code` over the `BATON_*` keys of the current `ConfigProvider`, each value with its source (code, environment, default): `Diagnostics.describe` itself, here beside the Layers it describes.
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const describe: (code?: BatonConfig.BatonConfigOptions) => EffectNs.Effect<Diagnostics.Description, BatonConfigError> = Diagnostics.describe

/**
 * Warnings with stable ids for a configuration and stores that run but not as intended: `Diagnostics.check` itself, here beside the Layers it checks.
 *
 * @category diagnostics
 * @since 0.1.0
 */
export const check: (options?: Diagnostics.CheckOptions) => EffectNs.Effect<Diagnostics.CheckReport, StoreError | BatonConfigError> = Diagnostics.check
