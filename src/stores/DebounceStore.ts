/**
 * Debounce windows: a burst of starts with one (tenant, key) becomes one
 * execution. The first start of a burst opens a window — the execution's
 * ids, what to start, the input, when it fires; each later start in the
 * window replaces the input and moves `fireAt` on. Once due, the window is
 * closed by a compare-and-set on its `version` (a start that came meanwhile
 * wins, and the window stays open), so exactly one instance fires it, with
 * the last input given.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import { InvalidInputError, type StoreError } from "./Errors.ts"
import type { ExecutionId, TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * A kept window.
 *
 * @category models
 * @since 0.1.0
 */
export interface DebounceWindow {
  readonly tenantId: TenantId
  readonly key: string
  /** The execution the burst becomes (the first start's ids). */
  readonly executionId: ExecutionId
  readonly threadId: ThreadId
  /** What to start (JSON; the first start's). */
  readonly definition: unknown
  /** The last start's input (JSON). */
  readonly input: unknown
  /** When the window fires (epoch ms): the last start's `fireAt`. */
  readonly fireAt: number
  /** True until it is closed (fired). */
  readonly open: boolean
  /** 1 when opened, + 1 on every change. */
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * A start offered to its key's window: the window's fields it sets (its
 * ids are those a new window takes; a window already open keeps its own),
 * and the caller's time.
 *
 * @category models
 * @since 0.1.0
 */
export interface DebounceOffer extends Pick<DebounceWindow, "tenantId" | "key" | "executionId" | "threadId" | "definition" | "input" | "fireAt"> {
  readonly now: number
  /**
   * The longest a window waits after it opened: a window already open fires
   * at `min(fireAt, createdAt + maxWaitMillis)`, so a steady stream of
   * offers cannot put it off for ever. Without it, `fireAt` alone.
   */
  readonly maxWaitMillis?: number | undefined
}

/**
 * The errors of a debounce store operation.
 *
 * @category models
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a backend implements. Semantics (the conformance suite checks them):
 * - a window is keyed by (tenantId, executionId); at most one window of a
 *   (tenantId, key) is open; another tenant never sees a window;
 * - `offer`, in one atomic step: with a window of the key open, sets its
 *   `input` and `fireAt` — the earlier of the offer's `fireAt` and
 *   `createdAt + maxWaitMillis` when the offer has one — (+ 1 on `version`,
 *   `updatedAt` = `now`) and answers it (`opened: false`); otherwise opens
 *   a new window with the offer's ids (version 1) and answers it (`opened:
 *   true`), or refuses the offer with {@link executionIdTaken} when a window
 *   with its `executionId` is kept already. Of N concurrent offers of
 *   one key exactly one opens, and every offer answers that window;
 * - `close` closes the window while it is open and its version is
 *   `expected` (+ 1 on `version`) and answers it; `None` when it is gone,
 *   closed, or another offer came first;
 * - `due(now, limit)` answers at most `limit` windows of every tenant: the
 *   open ones with `fireAt ≤ now`, earliest first, then the closed ones
 *   (their firing has not finished: the caller finishes it);
 * - `nextDue` is the earliest `fireAt` of an open window;
 * - `get` answers an execution's window; `delete` removes it (whether it was
 *   there);
 * - times are epoch milliseconds from the caller's Clock; values are JSON.
 */
export interface DebounceStoreShape {
  readonly offer: (offer: DebounceOffer) => Effect.Effect<{ readonly opened: boolean; readonly window: DebounceWindow }, Failure>
  readonly close: (tenantId: TenantId, executionId: ExecutionId, expected: number, now: number) => Effect.Effect<Option.Option<DebounceWindow>, Failure>
  readonly get: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<Option.Option<DebounceWindow>, Failure>
  readonly due: (now: number, limit: number) => Effect.Effect<ReadonlyArray<DebounceWindow>, Failure>
  readonly nextDue: Effect.Effect<Option.Option<number>, Failure>
  readonly delete: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<boolean, Failure>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The refusal of an offer whose `executionId` names a window the store keeps
 * already (a closed one whose firing is under way, say): every backend
 * answers it alike, and the kept window is left as it was.
 *
 * @category errors
 * @since 0.1.0
 */
export const executionIdTaken = (executionId: string): InvalidInputError =>
  new InvalidInputError({
    operation: "DebounceStore.offer",
    field: "executionId",
    reason: `names window ${executionId}, which the store keeps already: a new window takes a new execution id`
  })

/**
 * The store of debounce windows.
 *
 * @category services
 * @since 0.1.0
 */
export class DebounceStore extends Context.Service<DebounceStore, DebounceStoreShape>()("baton/DebounceStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: DebounceStoreShape): DebounceStoreShape => {
  const id = (op: string, tenantId: unknown, executionId: unknown) => [V.nonEmpty(op, "tenantId", tenantId), V.nonEmpty(op, "executionId", executionId)]
  return {
    offer: (o) =>
      V.checked([
        ...id("DebounceStore.offer", o?.tenantId, o?.executionId),
        V.nonEmpty("DebounceStore.offer", "key", o?.key),
        V.nonEmpty("DebounceStore.offer", "threadId", o?.threadId),
        V.json("DebounceStore.offer", "definition", o?.definition),
        V.json("DebounceStore.offer", "input", o?.input),
        V.time("DebounceStore.offer", "fireAt", o?.fireAt),
        V.time("DebounceStore.offer", "now", o?.now),
        ...(o?.maxWaitMillis === undefined ? [] : [V.positiveMillis("DebounceStore.offer", "maxWaitMillis", o.maxWaitMillis)])
      ], () => impl.offer(o)),
    close: (tenantId, executionId, expected, now) =>
      V.checked([
        ...id("DebounceStore.close", tenantId, executionId),
        V.wholeAtLeast("DebounceStore.close", "expected", expected, 1),
        V.time("DebounceStore.close", "now", now)
      ], () => impl.close(tenantId, executionId, expected, now)),
    get: (tenantId, executionId) => V.checked(id("DebounceStore.get", tenantId, executionId), () => impl.get(tenantId, executionId)),
    due: (now, limit) =>
      V.checked([V.time("DebounceStore.due", "now", now), V.wholeAtLeast("DebounceStore.due", "limit", limit, 1)], () => impl.due(now, limit)),
    nextDue: impl.nextDue,
    delete: (tenantId, executionId) => V.checked(id("DebounceStore.delete", tenantId, executionId), () => impl.delete(tenantId, executionId)),
    ping: impl.ping
  }
}
