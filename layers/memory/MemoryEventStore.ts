/**
 * In-memory `EventStore`: each thread's events in the shared `MemoryState`,
 * the append fenced by the lease rows of the same state.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as EventStore from "../../src/stores/EventStore.ts"
import { holds, refused } from "../../src/stores/internal/fence.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

/**
 * The in-memory `EventStore` over the `MemoryState` in context.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = State.use((rows) =>
  EventStore.make({
    append: (lease, threadId, events, now) =>
      Effect.suspend(() => {
        const current = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (!holds(current, lease, now)) return Effect.fail(refused("event append", current, lease, now))
        const k = Rows.key(lease.tenantId, threadId)
        let thread = rows.events.get(k)
        if (thread === undefined) rows.events.set(k, thread = { list: [], keys: new Set(), top: 0 })
        const ids: Array<number> = []
        for (const e of events) {
          if (thread.keys.has(e.key)) continue
          const id = ++thread.top
          thread.keys.add(e.key)
          thread.list.push({ id, key: e.key, executionId: e.executionId, mode: e.mode, data: JSON.stringify(e.data ?? null), at: e.at, instanceId: e.instanceId })
          ids.push(id)
        }
        return Effect.succeed(ids)
      }),
    read: (tenantId, threadId, after, limit) =>
      Effect.sync(() => {
        const thread = rows.events.get(Rows.key(tenantId, threadId))
        if (thread === undefined) return []
        const out: Array<EventStore.StreamEvent> = []
        for (const e of thread.list) {
          if (e.id <= after) continue
          if (out.length >= limit) break
          out.push({ id: e.id, tenantId, threadId, executionId: e.executionId, mode: e.mode as EventStore.EventMode, data: JSON.parse(e.data), at: e.at, instanceId: e.instanceId })
        }
        return out
      }),
    deleteBefore: (cutoff, limit) =>
      Effect.sync(() => {
        let n = 0
        for (const thread of rows.events.values()) {
          // The newest event stays: the thread's ids never start again.
          const newest = thread.list[thread.list.length - 1]
          const kept = thread.list.filter((e) => {
            if (n >= limit || e === newest || e.at >= cutoff) return true
            n++
            thread.keys.delete(e.key)
            return false
          })
          thread.list.splice(0, thread.list.length, ...kept)
          if (n >= limit) break
        }
        return n
      }),
    ping: Effect.void
  })
)

/**
 * Requires `MemoryState`; `MemoryStores.layer` provides it.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = Layer.effect(EventStore.EventStore, make)
