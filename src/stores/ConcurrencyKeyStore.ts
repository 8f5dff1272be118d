/**
 * Concurrency keys: the fleet-wide slots and the waiting line of each
 * (tenant, key). One entry per execution started with `concurrencyKey`:
 * admitted (it holds one of the key's slots) or waiting, in arrival order
 * (`seq`, given by the store). At most the key's `limit` entries are
 * admitted at once, whatever the number of instances: every admission is
 * made inside the store's own atomic step (SQL: a transaction holding the
 * key's row lock), never by a read and a later write.
 *
 * An entry belongs to its execution, not to the instance that started it: a
 * dead instance's running execution keeps its slot while the recovery sweep
 * continues it elsewhere, and frees it when it ends, wherever that is.
 *
 * @since 0.1.0
 */
import { Context, type Effect, Option } from "effect"
import type { InvalidInputError, StoreError } from "./Errors.ts"
import type { ExecutionId, TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"

/**
 * One execution's place under its key.
 *
 * @category models
 * @since 0.1.0
 */
export interface KeyEntry {
  readonly tenantId: TenantId
  readonly key: string
  readonly executionId: ExecutionId
  /** Arrival order under the key: larger for every later `enqueue` of the key. */
  readonly seq: number
  /** True while the entry holds one of the key's slots. */
  readonly admitted: boolean
  readonly enqueuedAt: number
  /** When it was admitted (epoch ms), null while it waits. */
  readonly admittedAt: number | null
}

/**
 * An execution to place under its key.
 *
 * @category models
 * @since 0.1.0
 */
export interface NewKeyEntry {
  readonly tenantId: TenantId
  readonly key: string
  readonly executionId: ExecutionId
  /** The key's limit from now on (a whole number ≥ 1): the last `enqueue` of a key sets it. */
  readonly limit: number
  readonly now: number
}

/**
 * What `enqueue` answers: the entry as it is after the call, and every entry
 * of the key this call admitted (the new one, or waiting ones when the call
 * raised the key's limit).
 *
 * @category models
 * @since 0.1.0
 */
export interface Enqueued {
  readonly entry: KeyEntry
  readonly admitted: ReadonlyArray<KeyEntry>
}

/**
 * What `release` answers: whether an entry was removed, and the waiting
 * entries of its key that were admitted in its place (earliest first).
 *
 * @category models
 * @since 0.1.0
 */
export interface Released {
  readonly released: boolean
  readonly admitted: ReadonlyArray<KeyEntry>
}

/**
 * Where a page of `listAdmitted` continues: strictly after this (tenant, execution).
 *
 * @category models
 * @since 0.1.0
 */
export interface EntryCursor {
  readonly tenantId: TenantId
  readonly executionId: ExecutionId
}

/**
 * The errors of a concurrency key store operation.
 *
 * @category models
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * What a backend implements. Semantics (the conformance suite checks them):
 * - an entry is keyed by (tenantId, executionId); keys of different tenants
 *   never share slots or a line;
 * - `enqueue` of an execution already entered changes nothing and answers
 *   its entry (`admitted` empty). Otherwise, in one atomic step: the key's
 *   limit becomes `limit`; the entry is appended (`seq` larger than every
 *   earlier entry of the key), waiting; then, while fewer than the limit
 *   are admitted, the earliest waiting entry is admitted (`admittedAt` =
 *   `now`). Of N concurrent enqueues, on any connections, no more than the
 *   limit are ever admitted at once;
 * - `release` removes the execution's entry (admitted or waiting) and, in
 *   the same atomic step, admits the earliest waiting entries of its key
 *   while fewer than the key's limit are admitted; an unknown execution
 *   answers `released: false` and admits nothing;
 * - `get` answers an execution's entry; `list` every entry of a key in
 *   `seq` order;
 * - `listAdmitted` pages over the admitted entries of every tenant in the
 *   order (tenantId, executionId), strictly after `after`, at most `limit`;
 * - times are epoch milliseconds from the caller's Clock.
 */
export interface ConcurrencyKeyStoreShape {
  readonly enqueue: (entry: NewKeyEntry) => Effect.Effect<Enqueued, Failure>
  readonly release: (tenantId: TenantId, executionId: ExecutionId, now: number) => Effect.Effect<Released, Failure>
  readonly get: (tenantId: TenantId, executionId: ExecutionId) => Effect.Effect<Option.Option<KeyEntry>, Failure>
  readonly list: (tenantId: TenantId, key: string) => Effect.Effect<ReadonlyArray<KeyEntry>, Failure>
  readonly listAdmitted: (limit: number, after: Option.Option<EntryCursor>) => Effect.Effect<ReadonlyArray<KeyEntry>, Failure>
  /** One cheap round trip to the backend. */
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The store of concurrency keys.
 *
 * @category services
 * @since 0.1.0
 */
export class ConcurrencyKeyStore extends Context.Service<ConcurrencyKeyStore, ConcurrencyKeyStoreShape>()("baton/ConcurrencyKeyStore") {}

/**
 * Wraps a backend with the contract's argument checks: bad input fails with `InvalidInputError` and reaches no backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: ConcurrencyKeyStoreShape): ConcurrencyKeyStoreShape => {
  const entry = (op: string, tenantId: unknown, executionId: unknown) => [V.nonEmpty(op, "tenantId", tenantId), V.nonEmpty(op, "executionId", executionId)]
  return {
    enqueue: (e) =>
      V.checked([
        ...entry("ConcurrencyKeyStore.enqueue", e?.tenantId, e?.executionId),
        V.nonEmpty("ConcurrencyKeyStore.enqueue", "key", e?.key),
        V.wholeAtLeast("ConcurrencyKeyStore.enqueue", "limit", e?.limit, 1),
        V.time("ConcurrencyKeyStore.enqueue", "now", e?.now)
      ], () => impl.enqueue(e)),
    release: (tenantId, executionId, now) =>
      V.checked([...entry("ConcurrencyKeyStore.release", tenantId, executionId), V.time("ConcurrencyKeyStore.release", "now", now)], () =>
        impl.release(tenantId, executionId, now)),
    get: (tenantId, executionId) => V.checked(entry("ConcurrencyKeyStore.get", tenantId, executionId), () => impl.get(tenantId, executionId)),
    list: (tenantId, key) =>
      V.checked([V.nonEmpty("ConcurrencyKeyStore.list", "tenantId", tenantId), V.nonEmpty("ConcurrencyKeyStore.list", "key", key)], () =>
        impl.list(tenantId, key)),
    listAdmitted: (limit, after) =>
      V.checked([
        V.wholeAtLeast("ConcurrencyKeyStore.listAdmitted", "limit", limit, 1),
        ...(Option.isOption(after) && Option.isSome(after)
          ? entry("ConcurrencyKeyStore.listAdmitted", after.value?.tenantId, after.value?.executionId)
          : Option.isOption(after) ? [] : [V.json("ConcurrencyKeyStore.listAdmitted", "after", undefined)])
      ], () => impl.listAdmitted(limit, after)),
    ping: impl.ping
  }
}
