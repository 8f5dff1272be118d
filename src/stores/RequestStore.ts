/**
 * Inbound request de-duplication: a caller's request idempotency key,
 * per tenant, maps to the first call's handle (and its answer once
 * recorded), so a retried or duplicated call returns what the first one
 * started instead of starting again.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Option } from "effect"
import type { InvalidInputError, RequestConflictError, StoreError } from "./Errors.ts"
import type { TenantId, ThreadId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * A claim of a request key by a call about to start something.
 *
 * @category models
 * @since 0.1.0
 */
export interface RequestClaim {
  readonly tenantId: TenantId
  readonly requestKey: string
  /** What the request is (e.g. a hash of workflow name and input): the same key with another fingerprint is refused. */
  readonly fingerprint: string
  /** What a repeated call gets back (JSON): e.g. the execution and thread ids the first call starts. */
  readonly handle: unknown
  readonly now: number
  /** How long the key is kept. */
  readonly ttlMillis: number
}

/**
 * A kept request key.
 *
 * @category models
 * @since 0.1.0
 */
export interface RequestEntry {
  readonly tenantId: TenantId
  readonly requestKey: string
  readonly fingerprint: string
  readonly handle: unknown
  /** The first call's answer (JSON) once recorded; null before. */
  readonly answer: unknown
  readonly answered: boolean
  readonly createdAt: number
  readonly expiresAt: number
}

/**
 * What a claim answers: `Claimed` — this call is the first, it starts; or
 * `Existing` — another call claimed the key first: use its handle (and
 * answer, when recorded).
 *
 * @category models
 * @since 0.1.0
 */
export type ClaimResult =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Existing"; readonly entry: RequestEntry }

/**
 * The errors of a request store operation.
 *
 * @category models
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a backend implements. Semantics (the conformance suite checks them):
 * - keyed by (tenantId, requestKey); a key is live while `expiresAt > now`;
 * - `claim` is atomic across instances: of N concurrent claims of a free
 *   (absent or expired) key exactly one answers `Claimed`, and its handle is
 *   kept; the others answer `Existing` with that entry — or fail with
 *   `RequestConflictError` when their fingerprint differs from the kept one;
 * - `recordAnswer` keeps the answer of the live claim whose handle is
 *   `handle` (as JSON); false when the key is gone, expired or claimed anew;
 * - `deleteExpired(now, limit)` deletes at most `limit` expired keys and
 *   answers how many;
 * - times are epoch milliseconds from the caller's Clock; values are JSON.
 */
export interface RequestStoreShape {
  readonly claim: (claim: RequestClaim) => Effect.Effect<ClaimResult, Failure | RequestConflictError>
  readonly recordAnswer: (tenantId: TenantId, requestKey: string, handle: unknown, answer: unknown, now: number) => Effect.Effect<boolean, Failure>
  readonly get: (tenantId: TenantId, requestKey: string, now: number) => Effect.Effect<Option.Option<RequestEntry>, Failure>
  readonly deleteExpired: (now: number, limit: number) => Effect.Effect<number, Failure>
  /**
   * Deletes every key (live or expired) whose handle names the thread
   * (`handle.threadId`), answering how many (`Baton.deleteThread`; idempotent).
   *
   * @since 0.1.0
   */
  readonly deleteThread: (tenantId: TenantId, threadId: ThreadId) => Effect.Effect<number, Failure>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The store of request idempotency keys.
 *
 * @category services
 * @since 0.1.0
 */
export class RequestStore extends Context.Service<RequestStore, RequestStoreShape>()("baton/RequestStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: RequestStoreShape): RequestStoreShape => {
  const key = (op: string, tenantId: unknown, requestKey: unknown) => [
    V.nonEmpty(op, "tenantId", tenantId),
    V.nonEmpty(op, "requestKey", requestKey)
  ]
  return {
    claim: (c) =>
      V.checked([
        ...key("RequestStore.claim", c?.tenantId, c?.requestKey),
        V.nonEmpty("RequestStore.claim", "fingerprint", c?.fingerprint),
        V.json("RequestStore.claim", "handle", c?.handle),
        V.time("RequestStore.claim", "now", c?.now),
        V.positiveMillis("RequestStore.claim", "ttlMillis", c?.ttlMillis)
      ], () => impl.claim(c)),
    recordAnswer: (tenantId, requestKey, handle, answer, now) =>
      V.checked([
        ...key("RequestStore.recordAnswer", tenantId, requestKey),
        V.json("RequestStore.recordAnswer", "handle", handle),
        V.json("RequestStore.recordAnswer", "answer", answer),
        V.time("RequestStore.recordAnswer", "now", now)
      ], () => impl.recordAnswer(tenantId, requestKey, handle, answer, now)),
    get: (tenantId, requestKey, now) =>
      V.checked([...key("RequestStore.get", tenantId, requestKey), V.time("RequestStore.get", "now", now)], () => impl.get(tenantId, requestKey, now)),
    deleteExpired: (now, limit) =>
      V.checked([
        V.time("RequestStore.deleteExpired", "now", now),
        V.wholeAtLeast("RequestStore.deleteExpired", "limit", limit, 1)
      ], () => impl.deleteExpired(now, limit)),
    deleteThread: (tenantId, threadId) =>
      V.checked(V.ids("RequestStore.deleteThread", { tenantId, threadId }), () => impl.deleteThread(tenantId, threadId)),
    ping: impl.ping
  }
}
