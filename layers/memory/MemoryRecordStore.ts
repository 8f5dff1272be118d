/**
 * In-memory `RecordStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import type { ExecutionRecord } from "../../src/stores/ExecutionRecord.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"
import { key, MemoryState } from "./MemoryState.ts"

const compareCursor = (a: { tenantId: string; executionId: string }, b: { tenantId: string; executionId: string }) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0

export const make = Effect.gen(function*() {
  const rows = yield* MemoryState
  return yield* RecordStore.make({
    createThread: (thread) =>
      Effect.sync(() => {
        const k = key(thread.tenantId, thread.threadId)
        const existing = rows.threads.get(k)
        if (existing !== undefined) return { thread: existing, created: false }
        rows.threads.set(k, { ...thread })
        return { thread: { ...thread }, created: true }
      }),
    getThread: (tenantId, threadId) => Effect.sync(() => Option.fromNullishOr(rows.threads.get(key(tenantId, threadId)))),
    createRecord: (record) =>
      Effect.sync(() => {
        const k = key(record.tenantId, record.executionId)
        if (rows.records.has(k)) return false
        rows.records.set(k, { ...record })
        return true
      }),
    getRecord: (tenantId, executionId) => Effect.sync(() => Option.fromNullishOr(rows.records.get(key(tenantId, executionId)))),
    setStatus: ({ error, executionId, from, now, tenantId, to }) =>
      Effect.sync(() => {
        const k = key(tenantId, executionId)
        const record = rows.records.get(k)
        if (record === undefined || record.status !== from) return false
        rows.records.set(k, { ...record, status: to, updatedAt: now, error: error === undefined ? record.error : error })
        return true
      }),
    noteRecoveryFailure: ({ error, executionId, failures, now, retryAt, tenantId }) =>
      Effect.sync(() => {
        const k = key(tenantId, executionId)
        const record = rows.records.get(k)
        if (record === undefined || record.status !== "Running" || (record.recoveryFailures ?? 0) !== failures) return false
        rows.records.set(k, { ...record, recoveryFailures: failures + 1, recoverAfter: retryAt, error, updatedAt: now })
        return true
      }),
    findByStatus: (status, limit, after) =>
      Effect.sync(() => {
        const out: Array<ExecutionRecord> = []
        for (const r of rows.records.values()) {
          if (r.status === status && (Option.isNone(after) || compareCursor(r, after.value) > 0)) out.push(r)
        }
        return out.sort(compareCursor).slice(0, limit)
      }),
    listByThread: (tenantId, threadId) =>
      Effect.sync(() =>
        [...rows.records.values()]
          .filter((r) => r.tenantId === tenantId && r.threadId === threadId)
          .sort((a, b) => a.createdAt - b.createdAt || compareCursor(a, b))
      ),
    savePauseAnswer: (answer) =>
      Effect.sync(() => {
        const k = key(answer.tenantId, answer.executionId, answer.pauseId)
        if (!rows.answers.has(k)) rows.answers.set(k, { ...answer })
      }),
    listPauseAnswers: (tenantId, executionId) =>
      Effect.sync(() =>
        [...rows.answers.values()]
          .filter((a) => a.tenantId === tenantId && a.executionId === executionId)
          .sort((a, b) => a.answeredAt - b.answeredAt || (a.pauseId < b.pauseId ? -1 : 1))
      ),
    ping: Effect.void
  })
})

/** Requires `MemoryState` (shared rows) and `IdGenerator`; `MemoryStores.layer` provides both. */
export const layer = Layer.effect(RecordStore, make)
