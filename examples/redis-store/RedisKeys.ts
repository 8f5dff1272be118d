/**
 * Where the Redis stores keep things, and how a Redis failure becomes baton's
 * `StoreError`.
 *
 * Every key starts with the store's `prefix` (one prefix per app, or per
 * test run). Ids are URI-encoded, so `:` separates parts unambiguously and
 * no id can forge another's key. The part in braces is a Redis Cluster hash
 * tag: everything of one tenant (its leases and its checkpoints) lands on one
 * node, which is what lets a single Lua script check a lease and write a
 * checkpoint atomically there.
 */
import { Effect } from "effect"
import type { Redis } from "effect/persistence"
import { StoreErrors } from "baton"

/** How the Redis stores are configured. */
export interface RedisStoreOptions {
  /** Put before every key, e.g. "myapp:baton:". Default "baton:". */
  readonly prefix?: string | undefined
}

const enc = encodeURIComponent

/** The key builders for one prefix. */
export const makeKeys = (options: RedisStoreOptions = {}) => {
  const prefix = options.prefix ?? "baton:"
  const tenant = (tenantId: string) => `${prefix}{t:${enc(tenantId)}}`
  const thread = (tenantId: string, threadId: string) => `${tenant(tenantId)}:th:${enc(threadId)}`
  const ns = (tenantId: string, threadId: string, checkpointNs: string) => `${thread(tenantId, threadId)}:ns:${enc(checkpointNs)}`
  const limit = (key: string) => `${prefix}{rl:${enc(key)}}`
  return {
    prefix,
    /** Hash {holder, epoch, expiresAt}: the lease of one execution tree. */
    lease: (tenantId: string, rootExecutionId: string) => `${tenant(tenantId)}:lease:${enc(rootExecutionId)}`,
    /** Hash key → JSON value: the tree's keys. */
    tree: (tenantId: string, rootExecutionId: string) => `${tenant(tenantId)}:tree:${enc(rootExecutionId)}`,
    /**
     * Sorted set (all score 0, lexicographic) of `tenantId NUL rootExecutionId`:
     * the trees holding one findable reserved key (a cancel request), of every
     * tenant — outside any tenant's hash slot, so it is written next to the tree's
     * hash, not in one script with it.
     */
    findable: (treeKey: string) => `${prefix}findable:${enc(treeKey)}`,
    /** Set of the tenant's thread ids that have checkpoints. */
    threads: (tenantId: string) => `${tenant(tenantId)}:threads`,
    /** Hash checkpointNs → the namespace's key base (below): the thread's namespaces. */
    namespaces: (tenantId: string, threadId: string) => `${thread(tenantId, threadId)}:namespaces`,
    /**
     * The key base of one (thread, namespace). Its keys are the base plus a
     * suffix from `nsKeys` — the Lua script that deletes a thread appends the
     * same suffixes, so they are defined once, there.
     */
    ns,
    /** Hash [taskId, idx] → encoded write row: the pending writes of one checkpoint. */
    writes: (tenantId: string, threadId: string, checkpointNs: string, checkpointId: string) =>
      `${ns(tenantId, threadId, checkpointNs)}:w:${enc(checkpointId)}`,
    /** Hash: holder:i, epoch:i, expiresAt:i of each concurrency slot of a rate-limit key. */
    slots: (key: string) => `${limit(key)}:slots`,
    /** Hash windowMillis → "start:total": the current counting window of each length. */
    windows: (key: string) => `${limit(key)}:windows`,
    /** String: epoch millis until which the key is paused. */
    pause: (key: string) => `${limit(key)}:pause`
  }
}

export type Keys = ReturnType<typeof makeKeys>

/** The keys of one (thread, namespace), by suffix of its key base. */
export const nsKeys = {
  /** Hash checkpointId → encoded checkpoint row. */
  checkpoints: ":cp",
  /** Sorted set of checkpoint ids, all score 0: lexicographic order, newest last. */
  checkpointIds: ":ids",
  /** Hash [channel, version] → encoded blob row. */
  blobs: ":blobs",
  /** Set of the `writes` keys of this namespace (writes may come before their checkpoint). */
  writeKeys: ":wkeys"
} as const

/**
 * Lua formats a number for Redis with all the digits a double has, so epoch
 * milliseconds round-trip exactly (Redis would truncate a number reply).
 */
export const luaFormat = `local function fmt(n) return string.format('%.17g', n) end\n`

/** A Redis failure, as the contract's retryable `StoreError`. */
export const storeError = (store: string, operation: string) => (error: Redis.RedisError) =>
  new StoreErrors.StoreError({ store, operation, reason: `Redis: ${String(error.cause ?? error.message)}`, cause: error })

/** Runs a Redis call as one store operation (its failures become `StoreError`). */
export const op = <A>(store: string, operation: string, effect: Effect.Effect<A, Redis.RedisError>) =>
  Effect.mapError(effect, storeError(store, operation))
