/**
 * What `status` shows of a keyed start that rests before it ran: its place in
 * its concurrency key's line, or when its debounce window fires.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { reservedPrefix, TreeStore } from "../../../stores/TreeStore.ts"
import type { InstanceShape } from "../Instance.ts"
import * as Debounce from "./Debounce.ts"
import * as Gate from "./Gate.ts"

/**
 * A keyed start resting before it ran: waiting for a slot of its concurrency
 * key (`position` 1 is next; 0 once admitted, until an instance moves it), or
 * for its debounce window to fire (`firesAt`, epoch ms; null once closed,
 * until the firing finishes).
 *
 * @category models
 * @since 0.1.0
 */
export type KeyedWait =
  | { readonly _tag: "ConcurrencyKey"; readonly key: string; readonly limit: number; readonly position: number }
  | { readonly _tag: "Debounce"; readonly key: string; readonly firesAt: number | null }

/**
 * The keyed wait the record rests on, if any.
 *
 * @category internal
 * @since 0.1.0
 */
export const of = (instance: InstanceShape, record: ExecutionRecord) =>
  Effect.gen(function*() {
    const concurrency = Gate.storeOf(instance)
    const debounce = Debounce.storeOf(instance)
    if (record.status !== "Paused" || record.parentExecutionId !== null || (concurrency === undefined && debounce === undefined)) return null
    const entries = yield* (yield* TreeStore).getMany(record.tenantId, record.rootExecutionId, Gate.keys)
    const marker = Gate.waitingOf(entries)
    if (marker !== undefined && concurrency !== undefined) {
      const line = yield* concurrency.list(record.tenantId, marker.key)
      const mine = line.find((e) => e.executionId === record.executionId)
      const position = mine === undefined || mine.admitted ? 0 : line.filter((e) => !e.admitted && e.seq <= mine.seq).length
      return { _tag: "ConcurrencyKey", key: marker.key, limit: marker.limit, position } satisfies KeyedWait as KeyedWait
    }
    if (Gate.debounceWaiting(entries) && debounce !== undefined) {
      const key = (entries.find((e) => e.key === reservedPrefix + Gate.debounceName)?.value as { key: string } | undefined)?.key ?? ""
      const window = yield* debounce.get(record.tenantId, record.executionId)
      const firesAt = Option.match(window, { onNone: () => null, onSome: (w) => (w.open ? w.fireAt : null) })
      return { _tag: "Debounce", key, firesAt } satisfies KeyedWait as KeyedWait
    }
    return null
  })
