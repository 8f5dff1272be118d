/**
 * In-memory `RecordStore`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { type ExecutionRecord, isActiveRoot } from "../../src/stores/ExecutionRecord.ts"
import { holds, refused } from "../../src/stores/internal/fence.ts"
import * as RecordStore from "../../src/stores/RecordStore.ts"
import * as MemoryState from "./MemoryState.ts"
import * as Rows from "./internal/rows.ts"
import * as State from "./internal/state.ts"

const compareCursor = (a: { tenantId: string; executionId: string }, b: { tenantId: string; executionId: string }) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0

/** Newest first: `createdAt`, then `executionId`, both descending. */
const newestFirst = (a: ExecutionRecord, b: ExecutionRecord) =>
  b.createdAt - a.createdAt || (a.executionId < b.executionId ? 1 : a.executionId > b.executionId ? -1 : 0)

const activeRootOf = (rows: Rows.MemoryRows, tenantId: string, threadId: string): ExecutionRecord | undefined => {
  for (const r of rows.records.values()) {
    if (r.tenantId === tenantId && r.threadId === threadId && isActiveRoot(r)) return r
  }
  return undefined
}

/** Inserts the record unless its id exists, or it is an active root and its thread has one (what the SQL unique indexes keep). */
const insert = (rows: Rows.MemoryRows, record: ExecutionRecord): boolean => {
  const k = Rows.key(record.tenantId, record.executionId)
  if (rows.records.has(k)) return false
  if (isActiveRoot(record) && activeRootOf(rows, record.tenantId, record.threadId) !== undefined) return false
  rows.records.set(k, { ...record })
  return true
}

/** The compare-and-set (of a record of the tree `root`, when given). */
const setStatus = (rows: Rows.MemoryRows, input: RecordStore.SetStatusInput, root?: string): boolean => {
  const k = Rows.key(input.tenantId, input.executionId)
  const record = rows.records.get(k)
  if (record === undefined || record.status !== input.from) return false
  if (root !== undefined && record.rootExecutionId !== root) return false
  if (!RecordStore.resetsRecoveryFailures(input.from, input.to)) {
    rows.records.set(k, { ...record, status: input.to, updatedAt: input.now, error: input.error === undefined ? record.error : input.error })
    return true
  }
  // The move ends the stretch of failed recoveries: their count, backoff and last cause go.
  const { recoverAfter: _after, recoveryFailures = 0, ...rest } = record
  const error = input.error !== undefined ? input.error : recoveryFailures > 0 ? null : record.error
  rows.records.set(k, { ...rest, status: input.to, updatedAt: input.now, error })
  return true
}

export const make = Effect.gen(function*() {
  const rows = State.rowsOf(yield* MemoryState.MemoryState)
  return yield* RecordStore.make({
    createThread: (thread) =>
      Effect.sync(() => {
        const k = Rows.key(thread.tenantId, thread.threadId)
        const existing = rows.threads.get(k)
        if (existing !== undefined) return { thread: existing, created: false }
        rows.threads.set(k, { ...thread })
        return { thread: { ...thread }, created: true }
      }),
    getThread: (tenantId, threadId) => Effect.sync(() => Option.fromNullishOr(rows.threads.get(Rows.key(tenantId, threadId)))),
    createRecord: (record) => Effect.sync(() => insert(rows, record)),
    startRoot: (record) =>
      Effect.sync(() => {
        if (rows.records.has(Rows.key(record.tenantId, record.executionId))) return { _tag: "IdTaken" } as const
        const active = activeRootOf(rows, record.tenantId, record.threadId)
        if (active !== undefined) return { _tag: "ThreadBusy", active } as const
        insert(rows, record)
        return { _tag: "Started" } as const
      }),
    findActiveRoot: (tenantId, threadId) => Effect.sync(() => Option.fromNullishOr(activeRootOf(rows, tenantId, threadId))),
    getRecord: (tenantId, executionId) => Effect.sync(() => Option.fromNullishOr(rows.records.get(Rows.key(tenantId, executionId)))),
    setStatus: (input) => Effect.sync(() => setStatus(rows, input)),
    setStatusFenced: (input) =>
      Effect.suspend(() => {
        const { lease, now } = input
        const row = rows.leases.get(Rows.key(lease.tenantId, lease.rootExecutionId))
        if (!holds(row, lease, now)) return Effect.fail(refused("status transition", row, lease, now))
        return Effect.succeed(setStatus(rows, input, lease.rootExecutionId))
      }),
    list: ({ after, limit, status, tenantId, threadId, workflow }) =>
      Effect.sync(() => {
        const out: Array<ExecutionRecord> = []
        for (const r of rows.records.values()) {
          if (r.tenantId !== tenantId) continue
          if (status !== undefined && r.status !== status) continue
          if (workflow !== undefined && r.workflowName !== workflow) continue
          if (threadId !== undefined && r.threadId !== threadId) continue
          if (Option.isSome(after) && newestFirst(r, { ...r, ...after.value }) <= 0) continue
          out.push(r)
        }
        return out.sort(newestFirst).slice(0, limit)
      }),
    noteRecoveryFailure: ({ error, executionId, failures, now, retryAt, tenantId }) =>
      Effect.sync(() => {
        const k = Rows.key(tenantId, executionId)
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
    deleteThread: (tenantId, threadId) =>
      Effect.sync(() => {
        let deleted = 0
        for (const [k, r] of rows.records) {
          if (r.tenantId !== tenantId || r.threadId !== threadId) continue
          for (const [ak, a] of rows.answers) if (a.tenantId === tenantId && a.executionId === r.executionId) rows.answers.delete(ak)
          rows.records.delete(k)
          deleted++
        }
        rows.threads.delete(Rows.key(tenantId, threadId))
        return deleted
      }),
    savePauseAnswer: (answer) =>
      Effect.sync(() => {
        const k = Rows.key(answer.tenantId, answer.executionId, answer.pauseId)
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
export const layer = Layer.effect(RecordStore.RecordStore, make)
