/**
 * Durable timers and signals: one row per resting sleep or signal wait,
 * found by its due time across every tree, and the signals sent to a tree,
 * kept in send order until a wait takes them.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { ExecutionId, InstanceId, PauseId, TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * What a `TimerStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a timer wakes: a sleep, or a wait for a signal (with or without a timeout).
 *
 * @category models
 * @since 0.1.0
 */
export type TimerKind = "Sleep" | "Signal"

/**
 * The timer of one resting wait, keyed by (tenantId, pauseId): the pause the
 * runtime answers when it wakes.
 *
 * @category models
 * @since 0.1.0
 */
export interface Timer {
  readonly tenantId: TenantId
  readonly pauseId: PauseId
  readonly rootExecutionId: ExecutionId
  readonly threadId: ThreadId
  readonly kind: TimerKind
  /** A signal wait's signal name; null for a sleep. */
  readonly name: string | null
  /** When the sleep ends or the wait times out; null for a wait without a timeout. */
  readonly dueAt: number | null
  /**
   * When a sweep next takes it (the indexed column): `dueAt` when armed, the
   * send time once a signal of its name is sent, a claim's expiry while
   * claimed; null while only a signal can wake it.
   */
  readonly wakesAt: number | null
  /** The instance that claimed it last (null until claimed, and again after a signal). */
  readonly claimedBy: InstanceId | null
  readonly createdAt: number
}

/**
 * A signal sent to a tree: `seq` orders the tree's signals in send order.
 *
 * @category models
 * @since 0.1.0
 */
export interface Signal {
  readonly tenantId: TenantId
  readonly threadId: ThreadId
  readonly rootExecutionId: ExecutionId
  readonly seq: number
  readonly name: string
  /** JSON. */
  readonly payload: unknown
  readonly sentAt: number
  /** The pause (a signal wait) that took it; null while it waits for one. */
  readonly consumedBy: PauseId | null
}

/**
 * What `consume` takes: the wait's pause, tree, thread and signal name;
 * `timeUp` when its timeout has passed (at `now`).
 *
 * @category models
 * @since 0.1.0
 */
export interface ConsumeInput {
  readonly tenantId: TenantId
  readonly rootExecutionId: ExecutionId
  readonly threadId: ThreadId
  readonly name: string
  readonly pauseId: PauseId
  readonly timeUp: boolean
  readonly now: number
}

/**
 * What `send` takes: a signal without its `seq` (the store gives it).
 *
 * @category models
 * @since 0.1.0
 */
export type SignalInput = Omit<Signal, "seq" | "consumedBy">

/**
 * What a signal wait took, as `consume` answers it: a signal, its timeout
 * (sealed: no signal goes to the pause after it), or nothing yet.
 *
 * @category models
 * @since 0.1.0
 */
export type Taken =
  | { readonly _tag: "Signal"; readonly signal: Signal }
  | { readonly _tag: "TimedOut" }
  | { readonly _tag: "Waiting" }

/**
 * Semantics every implementation keeps:
 * - `arm` writes a timer once (false when the pause has one);
 * - `claimDue(now, limit, claimant, claimMillis)` takes at most `limit`
 *   timers with `wakesAt ≤ now`, earliest first, and in the same atomic step
 *   moves each one's `wakesAt` to `now + claimMillis` and its `claimedBy` to
 *   the claimant: two claimers never take one timer at once, and a timer
 *   whose claimer died is due again when the claim runs out. One indexed
 *   query a page, whatever the number of timers not due;
 * - `nextWake` is the earliest `wakesAt` of any timer (none: no timer has one);
 * - `release` sets a claimed timer's `wakesAt` back (its wait is not over),
 *   only while `claimant` still holds the claim (a signal sent meanwhile
 *   cleared it: the timer stays due);
 * - `send` gives the signal the next `seq` and, in the same atomic step,
 *   makes every signal wait of that tree and name due at `sentAt` and
 *   unclaimed;
 * - `consume(…, pauseId)` answers what the pause took already (a signal, or
 *   its timeout), else marks the tree's earliest untaken signal of `name`
 *   taken by the pause and answers it, else — with `timeUp` — seals the
 *   pause as timed out (`TimedOut`), else `Waiting`; atomically with `send`
 *   of that tree: a signal is taken by exactly one pause, a pause takes at
 *   most one signal or its timeout and keeps it, and a wait that looked
 *   after a `send` returned sees its signal;
 * - `discard` deletes a signal no wait took and answers true (also when it
 *   was gone already, deleted with its tree); a taken one stays (false);
 * - `deleteRoot` deletes a tree's timers and signals.
 *
 * @category models
 * @since 0.1.0
 */
export interface TimerStoreShape {
  readonly arm: (timer: Timer) => Effect.Effect<boolean, Failure>
  readonly get: (tenantId: TenantId, pauseId: PauseId) => Effect.Effect<Option.Option<Timer>, Failure>
  readonly claimDue: (now: number, limit: number, claimant: InstanceId, claimMillis: number) => Effect.Effect<ReadonlyArray<Timer>, Failure>
  readonly nextWake: Effect.Effect<Option.Option<number>, Failure>
  readonly release: (tenantId: TenantId, pauseId: PauseId, claimant: InstanceId, wakesAt: number | null) => Effect.Effect<boolean, Failure>
  readonly disarm: (tenantId: TenantId, pauseId: PauseId) => Effect.Effect<boolean, Failure>
  /** The tree's timers, by pause id. */
  readonly listByRoot: (tenantId: TenantId, rootExecutionId: ExecutionId) => Effect.Effect<ReadonlyArray<Timer>, Failure>
  readonly send: (signal: SignalInput) => Effect.Effect<Signal, Failure>
  readonly consume: (input: ConsumeInput) => Effect.Effect<Taken, Failure>
  readonly discard: (tenantId: TenantId, rootExecutionId: ExecutionId, seq: number) => Effect.Effect<boolean, Failure>
  /** The tree's signals in send order, taken ones included (timeout seals are not signals: left out). */
  readonly listSignals: (tenantId: TenantId, rootExecutionId: ExecutionId) => Effect.Effect<ReadonlyArray<Signal>, Failure>
  /** Answers how many timers and signals were deleted. */
  readonly deleteRoot: (tenantId: TenantId, rootExecutionId: ExecutionId) => Effect.Effect<number, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

const kinds: ReadonlyArray<TimerKind> = ["Sleep", "Signal"]

const optionalTime = (op: string, field: string, value: unknown) => value === null ? Effect.void : V.time(op, field, value)

const timerChecks = (op: string, t: Timer) => [
  ...V.ids(op, { tenantId: t?.tenantId, pauseId: t?.pauseId, rootExecutionId: t?.rootExecutionId, threadId: t?.threadId }),
  V.oneOf(op, "kind", t?.kind, kinds),
  t?.kind === "Signal" ? V.nonEmpty(op, "name", t.name) : V.oneOf(op, "name", String(t?.name), ["null"]),
  t?.kind === "Sleep" ? V.time(op, "dueAt", t.dueAt) : optionalTime(op, "dueAt", t?.dueAt),
  optionalTime(op, "wakesAt", t?.wakesAt),
  V.oneOf(op, "claimedBy", String(t?.claimedBy), ["null"]),
  V.time(op, "createdAt", t?.createdAt)
]

const signalChecks = (op: string, s: SignalInput) => [
  ...V.ids(op, { tenantId: s?.tenantId, threadId: s?.threadId, rootExecutionId: s?.rootExecutionId, name: s?.name }),
  V.json(op, "payload", s?.payload),
  V.time(op, "sentAt", s?.sentAt)
]

/**
 * The service of timers and signals; see `TimerStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class TimerStore extends Context.Service<TimerStore, TimerStoreShape>()("baton/TimerStore") {}

/**
 * Wraps a backend with the contract's argument checks.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: TimerStoreShape): TimerStoreShape => ({
  arm: (t) => V.checked(timerChecks("TimerStore.arm", t), () => impl.arm(t)),
  get: (tenantId, pauseId) => V.checked(V.ids("TimerStore.get", { tenantId, pauseId }), () => impl.get(tenantId, pauseId)),
  claimDue: (now, limit, claimant, claimMillis) =>
    V.checked([
      V.time("TimerStore.claimDue", "now", now),
      V.wholeAtLeast("TimerStore.claimDue", "limit", limit, 1),
      V.nonEmpty("TimerStore.claimDue", "claimant", claimant),
      V.positiveMillis("TimerStore.claimDue", "claimMillis", claimMillis)
    ], () => impl.claimDue(now, limit, claimant, claimMillis)),
  nextWake: impl.nextWake,
  release: (tenantId, pauseId, claimant, wakesAt) =>
    V.checked([
      ...V.ids("TimerStore.release", { tenantId, pauseId, claimant }),
      optionalTime("TimerStore.release", "wakesAt", wakesAt)
    ], () => impl.release(tenantId, pauseId, claimant, wakesAt)),
  disarm: (tenantId, pauseId) => V.checked(V.ids("TimerStore.disarm", { tenantId, pauseId }), () => impl.disarm(tenantId, pauseId)),
  listByRoot: (tenantId, root) =>
    V.checked(V.ids("TimerStore.listByRoot", { tenantId, rootExecutionId: root }), () => impl.listByRoot(tenantId, root)),
  send: (s) => V.checked(signalChecks("TimerStore.send", s), () => impl.send(s)),
  consume: (input) =>
    V.checked([
      ...V.ids("TimerStore.consume", {
        tenantId: input?.tenantId,
        rootExecutionId: input?.rootExecutionId,
        threadId: input?.threadId,
        name: input?.name,
        pauseId: input?.pauseId
      }),
      V.oneOf("TimerStore.consume", "timeUp", String(input?.timeUp), ["true", "false"]),
      V.time("TimerStore.consume", "now", input?.now)
    ], () => impl.consume(input)),
  discard: (tenantId, root, seq) =>
    V.checked([
      ...V.ids("TimerStore.discard", { tenantId, rootExecutionId: root }),
      V.wholeAtLeast("TimerStore.discard", "seq", seq, 0)
    ], () => impl.discard(tenantId, root, seq)),
  listSignals: (tenantId, root) =>
    V.checked(V.ids("TimerStore.listSignals", { tenantId, rootExecutionId: root }), () => impl.listSignals(tenantId, root)),
  deleteRoot: (tenantId, root) =>
    V.checked(V.ids("TimerStore.deleteRoot", { tenantId, rootExecutionId: root }), () => impl.deleteRoot(tenantId, root)),
  ping: impl.ping
})
