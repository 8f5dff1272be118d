/**
 * In-memory `TreeStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { holds, refused } from "../../src/stores/internal/fence.ts"
import type { RootCursor } from "../../src/stores/PauseStore.ts"
import * as TreeStore from "../../src/stores/TreeStore.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

/**
 * The in-memory `TreeStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) => {
  const save = (tenantId: string, root: string, k: string, value: unknown) => {
    const treeKey = Rows.key(tenantId, root)
    let entries = rows.tree.get(treeKey)
    if (entries === undefined) rows.tree.set(treeKey, entries = new Map())
    if (entries.has(k)) return false
    entries.set(k, JSON.stringify(value))
    return true
  }
  return TreeStore.make({
    saveIfAbsent: (tenantId, root, k, value) => Effect.sync(() => save(tenantId, root, k, value)),
    // Synchronous: the lease check and the write are one atomic step.
    saveIfAbsentFenced: (tenantId, root, k, value, lease, now) =>
      Effect.suspend(() => {
        if (rows.tree.get(Rows.key(tenantId, root))?.has(k) === true) return Effect.succeed(false)
        const row = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (!holds(row, lease, now)) return Effect.fail(refused("tree write", row, lease, now))
        return Effect.succeed(save(tenantId, root, k, value))
      }),
    get: (tenantId, root, k) =>
      Effect.sync(() => {
        const value = rows.tree.get(Rows.key(tenantId, root))?.get(k)
        return value === undefined ? Option.none() : Option.some(JSON.parse(value) as unknown)
      }),
    getMany: (tenantId, root, keys) =>
      Effect.sync(() => {
        const entries = rows.tree.get(Rows.key(tenantId, root))
        return [...keys]
          .sort()
          .flatMap((k) => {
            const value = entries?.get(k)
            return value === undefined ? [] : [{ key: k, value: JSON.parse(value) as unknown }]
          })
      }),
    list: (tenantId, root, prefix) =>
      Effect.sync(() =>
        [...(rows.tree.get(Rows.key(tenantId, root)) ?? new Map<string, string>())]
          .filter(([k]) => k.startsWith(prefix))
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, v]) => ({ key: k, value: JSON.parse(v) as unknown }))
      ),
    deleteRoot: (tenantId, root) =>
      Effect.sync(() => {
        const treeKey = Rows.key(tenantId, root)
        const n = rows.tree.get(treeKey)?.size ?? 0
        rows.tree.delete(treeKey)
        return n
      }),
    // Every tree is looked at: a test-sized store; the SQL backends read one index range.
    findRootsWithKey: (k, limit, after) =>
      Effect.sync(() => {
        const found: Array<RootCursor> = []
        for (const [treeKey, entries] of rows.tree) {
          if (!entries.has(k)) continue
          const root = Rows.rootOf(treeKey)
          if (Option.isNone(after) || Rows.compareRoot(root, after.value) > 0) found.push(root)
        }
        return found.sort(Rows.compareRoot).slice(0, limit)
      }),
    ping: Effect.void
  })
})

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(TreeStore.TreeStore, make)
