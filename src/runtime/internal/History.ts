/**
 * Execution history in the runtime: when an `ExecutionHistoryStore` is
 * given to the Baton Layer, every step visit is noted in the tree's
 * reserved keys (so the visits of a holder that died stay with the tree),
 * and the holder that ends a root writes its snapshot under its lease —
 * once per execution, whoever ends it (the store saves only if absent).
 * Without the store nothing is noted or written.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { Clock, Context, Effect, Option } from "effect"
import type { ExecutionRecord } from "../../stores/ExecutionRecord.ts"
import {
  type EndStatus,
  ExecutionHistoryStore,
  type ExecutionSnapshot,
  type StepVisit
} from "../../stores/ExecutionHistoryStore.ts"
import type { Lease } from "../../stores/Lease.ts"
import { PauseStore } from "../../stores/PauseStore.ts"
import { reservedPrefix, TreeStore, type TreeStoreShape } from "../../stores/TreeStore.ts"

/** Reserved names (under `@baton/`) of the step visits noted in the tree. */
const visitName = (key: string, holder: string) => `history/visit/${holder}/${key}`
const endName = (key: string, holder: string) => `history/end/${holder}/${key}`
const visitsPrefix = `${reservedPrefix}history/visit/`
const endsPrefix = `${reservedPrefix}history/end/`

interface VisitRow {
  readonly node: string
  readonly key: string
  readonly instanceId: string
  readonly startedAt: number
  /** The holder's lease epoch and its count of visits: the order of visits started at one instant. */
  readonly epoch: number
  readonly seq: number
}
interface EndRow {
  readonly endedAt: number
  readonly outcome: "Succeeded" | "Failed"
}

/**
 * Wraps a step body so its visit is noted (start before the body, end after
 * it). A failed note is logged, never the step's failure.
 *
 * @category models
 * @since 0.1.0
 */
export type StepRecorder = <A>(node: string, key: string, body: () => Promise<A>) => Promise<A>

/**
 * The recorder of one pass, or undefined when no `ExecutionHistoryStore` was given.
 *
 * @category constructors
 * @since 0.1.0
 */
export const stepRecorder = (options: {
  readonly services: Context.Context<any>
  readonly tree: TreeStoreShape
  readonly record: ExecutionRecord
  readonly holder: string
  readonly epoch: number
  readonly instanceId: string
  readonly now: () => number
}): StepRecorder | undefined => {
  if (Option.isNone(Context.getOption(options.services, ExecutionHistoryStore))) return undefined
  const { epoch, holder, instanceId, now, record, tree } = options
  let seq = 0
  const note = (name: string, value: unknown) =>
    Effect.runPromise(
      tree.saveReservedIfAbsent(record.tenantId, record.rootExecutionId, name, value).pipe(
        Effect.catch((e) => Effect.logWarning(`execution history: a step visit was not noted: ${e.message}`))
      )
    )
  return (node, key, body) =>
    note(visitName(key, holder), { node, key, instanceId, startedAt: now(), epoch, seq: ++seq } satisfies VisitRow).then(body).then(
      (value) => note(endName(key, holder), { endedAt: now(), outcome: "Succeeded" } satisfies EndRow).then(() => value),
      (error) => note(endName(key, holder), { endedAt: now(), outcome: "Failed" } satisfies EndRow).then(() => Promise.reject(error))
    )
}

/** The noted visits of a tree, attempts numbered per step in start order. */
const visitsOf = Effect.fnUntraced(function*(tree: TreeStoreShape, record: ExecutionRecord) {
  const visits = yield* tree.list(record.tenantId, record.rootExecutionId, visitsPrefix)
  const ends = new Map((yield* tree.list(record.tenantId, record.rootExecutionId, endsPrefix)).map((e) => [e.key.slice(endsPrefix.length), e.value as EndRow]))
  const rows = visits
    .map((v) => ({ id: v.key.slice(visitsPrefix.length), row: v.value as VisitRow }))
    .sort((a, b) => a.row.startedAt - b.row.startedAt || a.row.epoch - b.row.epoch || a.row.seq - b.row.seq)
  const attempts = new Map<string, number>()
  return rows.map(({ id, row }): StepVisit => {
    const attempt = (attempts.get(row.key) ?? 0) + 1
    attempts.set(row.key, attempt)
    const end = ends.get(id)
    return {
      node: row.node,
      idempotencyKey: row.key,
      attempt,
      instanceId: row.instanceId,
      startedAt: row.startedAt,
      endedAt: end?.endedAt ?? null,
      outcome: end?.outcome ?? "Unfinished"
    }
  })
})

/** sha-256 (hex) of a JSON value. */
const hashOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value ?? null)).digest("hex")

/**
 * Writes the snapshot of a root that ends now with `status`, under `lease`
 * (before its record leaves Running and its tree keys go). Does nothing for
 * a child, or without an `ExecutionHistoryStore`. A refused lease fails with
 * `LeaseLostError`: the new holder ends the tree and writes it.
 *
 * @category internal
 * @since 0.1.0
 */
export const save = Effect.fnUntraced(function*(record: ExecutionRecord, status: EndStatus, error: string | null, lease: Lease) {
  const history = yield* Effect.serviceOption(ExecutionHistoryStore)
  if (Option.isNone(history) || record.executionId !== record.rootExecutionId) return
  const tree = yield* TreeStore
  const pauses = yield* PauseStore
  const now = yield* Clock.currentTimeMillis
  const input = yield* tree.get(record.tenantId, record.rootExecutionId, `${reservedPrefix}input`)
  const snapshot: ExecutionSnapshot = {
    tenantId: record.tenantId,
    executionId: record.executionId,
    threadId: record.threadId,
    workflowName: record.workflowName,
    workflowVersion: record.workflowVersion,
    configHash: record.configHash,
    inputHash: Option.isSome(input) ? hashOf(input.value) : null,
    status,
    error,
    startedAt: record.createdAt,
    endedAt: now,
    steps: yield* visitsOf(tree, record),
    pauses: (yield* pauses.listByRoot(record.tenantId, record.rootExecutionId, ["Pending", "Resolved", "Taken", "Cancelled"])).map((p) => ({
      pauseId: p.pauseId,
      executionId: p.executionId,
      payload: p.payload,
      status: p.status,
      decision: p.decision,
      createdAt: p.createdAt,
      resolvedAt: p.resolvedAt,
      resolvedBy: p.resolvedBy
    })),
    spend: null,
    endedBy: { holder: lease.holder, epoch: lease.epoch }
  }
  yield* history.value.saveIfAbsent(snapshot, lease, now).pipe(Effect.catchTag("InvalidInputError", Effect.die))
})
