/**
 * The rows of every in-memory store, and the helpers the stores share over
 * them. Values are kept as JSON text, as a durable store keeps them, so no
 * caller can mutate a stored value through a reference.
 */
import type { BlobRow, CheckpointRow, WriteRow } from "../../../src/stores/CheckpointRows.ts"
import type { ExecutionRecord, PauseAnswer, ThreadRecord } from "../../../src/stores/ExecutionRecord.ts"
import type { QueuedChild } from "../../../src/stores/ChildQueueStore.ts"
import type { Lease } from "../../../src/stores/Lease.ts"
import type { Pause } from "../../../src/stores/Pause.ts"
import type { RootCursor } from "../../../src/stores/PauseStore.ts"
import type { Signal, Timer } from "../../../src/stores/TimerStore.ts"
import type { KeyEntry } from "../../../src/stores/ConcurrencyKeyStore.ts"
import type { DebounceWindow } from "../../../src/stores/DebounceStore.ts"

/**
 * A lease row: `holder` null once released (the epoch stays).
 *
 * @category models
 * @since 0.1.0
 */
export interface LeaseRow {
  readonly tenantId: string
  readonly rootExecutionId: string
  holder: string | null
  epoch: number
  expiresAt: number
}

/**
 * A rate-limit slot row: who holds it and until when.
 *
 * @category models
 * @since 0.1.0
 */
export interface SlotRow {
  holder: string | null
  epoch: number
  expiresAt: number
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * A pause row: payload and decision as JSON text.
 *
 * @category models
 * @since 0.1.0
 */
export type PauseRow = Mutable<Omit<Pause, "payload" | "decision">> & { payload: string; decision: string | null }
/**
 * A queue row: input and result as JSON text.
 *
 * @category models
 * @since 0.1.0
 */
export type ChildRow = Mutable<Omit<QueuedChild, "input" | "result">> & { input: string; result: string | null }

/**
 * Every table of the in-memory stores, as maps keyed by `key(...)`.
 *
 * @category models
 * @since 0.1.0
 */
export interface MemoryRows {
  readonly leases: Map<string, LeaseRow>
  readonly threads: Map<string, ThreadRecord>
  readonly records: Map<string, ExecutionRecord>
  readonly answers: Map<string, PauseAnswer>
  readonly pauses: Map<string, PauseRow>
  readonly tree: Map<string, Map<string, string>>
  readonly ledger: Map<string, number>
  readonly slots: Map<string, Array<SlotRow>>
  readonly windows: Map<string, { readonly start: number; total: number }>
  readonly pausedUntil: Map<string, number>
  readonly children: Map<string, ChildRow>
  readonly checkpoints: Map<string, Map<string, CheckpointRow>>
  readonly writes: Map<string, Map<string, WriteRow>>
  readonly blobs: Map<string, BlobRow>
  /** Execution snapshots as JSON text, by key(tenantId, executionId). */
  readonly history: Map<string, { readonly endedAt: number; readonly json: string }>
  /** Inbound requests by key(tenantId, requestKey). */
  readonly requests: Map<string, RequestRow>
  /** Timers by key(tenantId, pauseId) (`TimerStore`). */
  readonly timers: Map<string, Timer>
  /** Signals by key(tenantId, rootExecutionId), in send order, payloads as JSON text (`TimerStore`). */
  readonly signals: Map<string, Array<SignalRow>>
  /** The last signal `seq` given. */
  readonly signalSeq: { value: number }
  /** Schedules by key(tenantId, scheduleId): definition and state as JSON text. */
  readonly schedules: Map<string, ScheduleMemoryRow>
  /** Concurrency keys by key(tenantId, key): the key's limit and the next `seq` (`ConcurrencyKeyStore`). */
  readonly concurrencyKeys: Map<string, { limit: number; nextSeq: number }>
  /** Concurrency key entries by key(tenantId, executionId) (`ConcurrencyKeyStore`). */
  readonly concurrencyEntries: Map<string, KeyEntry>
  /** Debounce windows by key(tenantId, executionId), definition and input as JSON text (`DebounceStore`). */
  readonly debounces: Map<string, DebounceMemoryRow>
  /** Streamed events by key(tenantId, threadId): the thread's events in id order (data as JSON text), its top id and keys. */
  readonly events: Map<string, EventRows>
}

/** One thread's streamed events. */
export interface EventRows {
  readonly list: Array<{ readonly id: number; readonly key: string; readonly executionId: string; readonly mode: string; readonly data: string; readonly at: number; readonly instanceId: string }>
  readonly keys: Set<string>
  top: number
}

/** A debounce window: its definition and input as JSON text. */
export type DebounceMemoryRow = Omit<DebounceWindow, "definition" | "input"> & { readonly definition: string; readonly input: string }

/** A schedule row: its definition and state as JSON text. */
export interface ScheduleMemoryRow {
  readonly tenantId: string
  readonly scheduleId: string
  readonly definition: string
  readonly paused: boolean
  readonly nextFireAt: number
  readonly state: string
  readonly version: number
  readonly createdAt: number
  readonly updatedAt: number
}

/**
 * A signal row: the payload as JSON text.
 *
 * @category models
 * @since 0.1.0
 */
export type SignalRow = Mutable<Omit<Signal, "payload">> & { payload: string; timedOut?: boolean }

/** An inbound request row: the handle as JSON text, the answer as JSON text once recorded (null before). */
export interface RequestRow {
  readonly tenantId: string
  readonly requestKey: string
  readonly fingerprint: string
  readonly handle: string
  answer: string | null
  readonly createdAt: number
  readonly expiresAt: number
}

/**
 * A fresh, empty set of rows.
 *
 * @category utils
 * @since 0.1.0
 */
export const emptyRows = (): MemoryRows => ({
  leases: new Map(),
  threads: new Map(),
  records: new Map(),
  answers: new Map(),
  pauses: new Map(),
  tree: new Map(),
  ledger: new Map(),
  slots: new Map(),
  windows: new Map(),
  pausedUntil: new Map(),
  children: new Map(),
  checkpoints: new Map(),
  writes: new Map(),
  blobs: new Map(),
  history: new Map(),
  requests: new Map(),
  timers: new Map(),
  signals: new Map(),
  signalSeq: { value: 0 },
  schedules: new Map(),
  concurrencyKeys: new Map(),
  concurrencyEntries: new Map(),
  debounces: new Map(),
  events: new Map()
})

/**
 * A composite map key (a JSON array: unambiguous for any parts).
 *
 * @category utils
 * @since 0.1.0
 */
export const key = (...parts: ReadonlyArray<string>): string => JSON.stringify(parts)

/**
 * Deletes the rows of `table` that `doomed` picks, at most `limit` of them
 * (in the table's order), and answers how many it deleted.
 *
 * @category utils
 * @since 0.1.0
 */
export const deleteWhere = <K, V>(table: Map<K, V>, doomed: (row: V) => boolean, limit = Infinity): number => {
  let n = 0
  for (const [k, row] of table) {
    if (n >= limit) break
    if (doomed(row)) {
      table.delete(k)
      n++
    }
  }
  return n
}

/**
 * The stable order of trees (tenantId, then rootExecutionId) the cross-tree pages follow.
 *
 * @category utils
 * @since 0.1.0
 */
export const compareRoot = (a: RootCursor, b: RootCursor): number =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.rootExecutionId < b.rootExecutionId ? -1 : a.rootExecutionId > b.rootExecutionId ? 1 : 0

/**
 * The tree a `key(tenantId, rootExecutionId)` names.
 *
 * @category utils
 * @since 0.1.0
 */
export const rootOf = (treeKey: string): RootCursor => {
  const [tenantId, rootExecutionId] = JSON.parse(treeKey) as [string, string]
  return { tenantId, rootExecutionId }
}

/**
 * A lease row as the contract's `Lease`.
 *
 * @category utils
 * @since 0.1.0
 */
export const toLease = (row: LeaseRow): Lease => ({
  tenantId: row.tenantId,
  rootExecutionId: row.rootExecutionId,
  holder: row.holder!,
  epoch: row.epoch,
  expiresAt: row.expiresAt
})
