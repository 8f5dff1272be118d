/**
 * Keys scoped to one execution tree, visible to the whole tree on any instance.
 *
 * @since 0.1.0
 */
import { Context, Effect, Option } from "effect"
import { InvalidInputError, type LeaseLostError, ReservedKeyError, type StoreError } from "./Errors.ts"
import type { ExecutionId, TenantId } from "./Ids.ts"
import * as V from "./internal/validate.ts"
import type { Lease } from "./Lease.ts"
import type { RootCursor } from "./PauseStore.ts"

/**
 * What a `TreeStore` operation fails with.
 *
 * @category errors
 * @since 0.1.0
 */
export type Failure = StoreError | InvalidInputError

/**
 * Keys under this prefix belong to the runtime (cancel requests, undo progress).
 *
 * @category utils
 * @since 0.1.0
 */
export const reservedPrefix = "@baton/"

/**
 * The most keys one `TreeStore.getMany` call reads.
 *
 * @category utils
 * @since 0.1.0
 */
export const maxGetManyKeys = 100

/**
 * The reserved names (`@baton/<name>`) whose trees `findRootsWith` finds
 * across every tree: the cancel request. A backend indexes these keys only
 * (SQL: a partial index), so the rest of the tree's keys cost no index.
 *
 * @category utils
 * @since 0.1.0
 */
export const findableNames: ReadonlyArray<string> = ["cancel-request"]

/**
 * One key of an execution tree's shared key-value state.
 *
 * @category models
 * @since 0.1.0
 */
export interface TreeEntry {
  readonly key: string
  readonly value: unknown
}

/**
 * What a backend implements. Semantics:
 * - keyed by (tenantId, rootExecutionId, key); values are JSON;
 * - `saveIfAbsent` writes only when the key is absent: of N concurrent
 *   callers across instances exactly one gets `true`;
 * - `saveIfAbsentFenced` is `saveIfAbsent` made only while `lease` (of
 *   this tree or another of the tenant: a parent writes into its child's)
 *   is still the current lease of its tree — same holder and epoch,
 *   `expiresAt > now` — checked in the same atomic step as the write, like a
 *   fenced checkpoint write. A key that exists answers `false` (nothing
 *   written); otherwise a stale holder gets `LeaseLostError` and writes
 *   nothing;
 * - `list` returns the keys starting with `prefix`, in key order;
 * - `getMany` returns the entries of those of `keys` that exist, in key
 *   order (at most {@link maxGetManyKeys} keys a call); a backend may leave
 *   it out: `make` then reads the keys one `get` each;
 * - `deleteRoot` removes every key of the tree and returns how many;
 * - `findRootsWithKey` pages over the trees (of every tenant) that hold
 *   `key` — one of the reserved keys named by {@link findableNames}, the
 *   only ones it is asked for — in the stable order (tenantId,
 *   rootExecutionId), each page strictly after `after`, at most `limit`
 *   trees: one query a page. A tree whose key was deleted (with its root) is
 *   not answered; one answered may have lost it since (the caller reads it).
 *
 * @category models
 * @since 0.1.0
 */
export interface TreeStoreBackend {
  readonly saveIfAbsent: (tenantId: TenantId, rootExecutionId: ExecutionId, key: string, value: unknown) => Effect.Effect<boolean, Failure>
  readonly saveIfAbsentFenced: (
    tenantId: TenantId,
    rootExecutionId: ExecutionId,
    key: string,
    value: unknown,
    lease: Lease,
    now: number
  ) => Effect.Effect<boolean, Failure | LeaseLostError>
  readonly get: (tenantId: TenantId, rootExecutionId: ExecutionId, key: string) => Effect.Effect<Option.Option<unknown>, Failure>
  readonly getMany?: ((tenantId: TenantId, rootExecutionId: ExecutionId, keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<TreeEntry>, Failure>) | undefined
  readonly list: (tenantId: TenantId, rootExecutionId: ExecutionId, prefix: string) => Effect.Effect<ReadonlyArray<TreeEntry>, Failure>
  readonly deleteRoot: (tenantId: TenantId, rootExecutionId: ExecutionId) => Effect.Effect<number, Failure>
  readonly findRootsWithKey: (key: string, limit: number, after: Option.Option<RootCursor>) => Effect.Effect<ReadonlyArray<RootCursor>, Failure>
  readonly ping: Effect.Effect<void, StoreError>
}

/**
 * The service: the backend plus the reserved-key rule.
 *
 * @category models
 * @since 0.1.0
 */
export interface TreeStoreShape extends Omit<TreeStoreBackend, "saveIfAbsent" | "saveIfAbsentFenced" | "getMany" | "findRootsWithKey"> {
  /** The entries of those of `keys` that exist, in key order: one store call (the runtime reads a tree's reserved keys together). */
  readonly getMany: (tenantId: TenantId, rootExecutionId: ExecutionId, keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<TreeEntry>, Failure>
  /** For user code: a key under `@baton/` fails with `ReservedKeyError`. */
  readonly saveIfAbsent: (
    tenantId: TenantId,
    rootExecutionId: ExecutionId,
    key: string,
    value: unknown
  ) => Effect.Effect<boolean, Failure | ReservedKeyError>
  /** For the runtime only: writes `@baton/<name>`. */
  readonly saveReservedIfAbsent: (
    tenantId: TenantId,
    rootExecutionId: ExecutionId,
    name: string,
    value: unknown
  ) => Effect.Effect<boolean, Failure>
  /**
   * For the runtime only: writes `@baton/<name>` under the holder's `lease`,
   * fenced in the store (a stale holder gets `LeaseLostError`; see `TreeStoreBackend`).
   */
  readonly saveReservedFenced: (
    tenantId: TenantId,
    rootExecutionId: ExecutionId,
    name: string,
    value: unknown,
    lease: Lease,
    now: number
  ) => Effect.Effect<boolean, Failure | LeaseLostError>
  /**
   * For the runtime only: the trees (of every tenant) holding `@baton/<name>`,
   * `name` one of {@link findableNames}, a page of at most `limit` strictly
   * after `after` (see `TreeStoreBackend`). The recovery sweep finds the
   * cancel requests nobody acts on with it.
   */
  readonly findRootsWith: (name: string, limit: number, after: Option.Option<RootCursor>) => Effect.Effect<ReadonlyArray<RootCursor>, Failure>
}

/**
 * The service of an execution tree's shared key-value state; see `TreeStoreShape` for what every implementation keeps.
 *
 * @category services
 * @since 0.1.0
 */
export class TreeStore extends Context.Service<TreeStore, TreeStoreShape>()("baton/TreeStore") {}

/**
 * Adds argument checks and the reserved-key rule to a backend.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (impl: TreeStoreBackend): TreeStoreShape => {
  const scope = (op: string, tenantId: string, root: string) => [
    V.nonEmpty(op, "tenantId", tenantId),
    V.nonEmpty(op, "rootExecutionId", root)
  ]
  const getMany = impl.getMany ?? ((tenantId: TenantId, root: ExecutionId, keys: ReadonlyArray<string>) =>
    Effect.map(
      Effect.forEach(keys, (key) => Effect.map(impl.get(tenantId, root, key), Option.map((value): TreeEntry => ({ key, value })))),
      (found) => found.flatMap((e) => Option.isSome(e) ? [e.value] : []).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    ))
  return {
    saveIfAbsent: (tenantId, root, key, value) =>
      V.checked([
        ...scope("TreeStore.saveIfAbsent", tenantId, root),
        V.nonEmpty("TreeStore.saveIfAbsent", "key", key),
        V.json("TreeStore.saveIfAbsent", "value", value)
      ], () => typeof key === "string" && key.startsWith(reservedPrefix)
        ? Effect.fail<Failure | ReservedKeyError>(new ReservedKeyError({ key }))
        : impl.saveIfAbsent(tenantId, root, key, value)),
    saveReservedIfAbsent: (tenantId, root, name, value) =>
      V.checked([
        ...scope("TreeStore.saveReservedIfAbsent", tenantId, root),
        V.nonEmpty("TreeStore.saveReservedIfAbsent", "name", name),
        V.json("TreeStore.saveReservedIfAbsent", "value", value)
      ], () => impl.saveIfAbsent(tenantId, root, reservedPrefix + name, value)),
    saveReservedFenced: (tenantId, root, name, value, lease, now) =>
      V.checked([
        ...scope("TreeStore.saveReservedFenced", tenantId, root),
        V.nonEmpty("TreeStore.saveReservedFenced", "name", name),
        V.json("TreeStore.saveReservedFenced", "value", value),
        ...V.lease("TreeStore.saveReservedFenced", lease),
        lease?.tenantId === tenantId ? Effect.void : Effect.fail(
          new InvalidInputError({ operation: "TreeStore.saveReservedFenced", field: "lease.tenantId", reason: "must be the tree's tenant" })
        ),
        V.time("TreeStore.saveReservedFenced", "now", now)
      ], () => impl.saveIfAbsentFenced(tenantId, root, reservedPrefix + name, value, lease, now)),
    get: (tenantId, root, key) =>
      V.checked([...scope("TreeStore.get", tenantId, root), V.nonEmpty("TreeStore.get", "key", key)], () => impl.get(tenantId, root, key)),
    getMany: (tenantId, root, keys) =>
      V.checked([
        ...scope("TreeStore.getMany", tenantId, root),
        V.keys("TreeStore.getMany", "keys", keys, maxGetManyKeys)
      ], () => keys.length === 0 ? Effect.succeed([]) : getMany(tenantId, root, [...new Set(keys)])),
    list: (tenantId, root, prefix) =>
      V.checked([
        ...scope("TreeStore.list", tenantId, root),
        V.text("TreeStore.list", "prefix", prefix)
      ], () => impl.list(tenantId, root, prefix)),
    deleteRoot: (tenantId, root) => V.checked(scope("TreeStore.deleteRoot", tenantId, root), () => impl.deleteRoot(tenantId, root)),
    findRootsWith: (name, limit, after) =>
      V.checked([
        V.oneOf("TreeStore.findRootsWith", "name", name, findableNames),
        V.wholeAtLeast("TreeStore.findRootsWith", "limit", limit, 1),
        ...(Option.isSome(after)
          ? [
            V.nonEmpty("TreeStore.findRootsWith", "after.tenantId", after.value.tenantId),
            V.nonEmpty("TreeStore.findRootsWith", "after.rootExecutionId", after.value.rootExecutionId)
          ]
          : [])
      ], () => impl.findRootsWithKey(reservedPrefix + name, limit, after)),
    ping: impl.ping
  }
}
