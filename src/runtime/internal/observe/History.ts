/**
 * Execution history in the runtime: when an `ExecutionHistoryStore` is
 * given to the Baton Layer, every step visit is noted in the tree's
 * reserved keys — its start before the body (so the visits of a holder that
 * died stay with the tree), the ends of a pass's visits at once when it ends —
 * and the holder that ends a root writes its snapshot under its lease —
 * once per execution, whoever ends it (the store saves only if absent).
 * Without the store nothing is noted or written.
 *
 * @since 0.1.0
 */
import { isGraphInterrupt } from "@langchain/langgraph"
import { createHash } from "node:crypto"
import { Cause, Clock, Context, Effect, Exit, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import {
  type EndStatus,
  ExecutionHistoryStore,
  type ExecutionSnapshot,
  type ModelAnswer,
  type StepVisit
} from "../../../stores/ExecutionHistoryStore.ts"
import type { Lease } from "../../../stores/Lease.ts"
import * as LedgerStore from "../../../stores/LedgerStore.ts"
import { PauseStore } from "../../../stores/PauseStore.ts"
import { reservedPrefix, type TreeEntry, TreeStore, type TreeStoreShape } from "../../../stores/TreeStore.ts"
import * as ModelCalls from "../evaluation/ModelCalls.ts"

/** Reserved names (under `@baton/`) of the step visits noted in the tree, and of the ends a pass reports. */
const visitName = (key: string, holder: string) => `history/visit/${holder}/${key}`
const endsName = (holder: string, n: number) => `history/end/${holder}/${n}`
const historyPrefix = `${reservedPrefix}history/`
const visitsPrefix = `${historyPrefix}visit/`
const endsPrefix = `${historyPrefix}end/`

interface VisitRow {
  readonly node: string
  readonly key: string
  /** The key its end is reported under, when not `key` (a later visit of the same key by the same holder: an undo's retry). */
  readonly endKey?: string | undefined
  /** The visit ran the step's undo. */
  readonly undo?: true | undefined
  readonly holder: string
  readonly instanceId: string
  readonly startedAt: number
  /** The holder's lease epoch and its count of visits: the order of visits started at one instant. */
  readonly epoch: number
  readonly seq: number
  /** LangGraph's step of the visit (a root's step; absent inside a subgraph): the node's visits, for the model answers. */
  readonly step?: number | undefined
}
interface EndRow {
  readonly endedAt: number
  readonly outcome: "Succeeded" | "Failed" | "Interrupted"
}
/** The ends of one pass's visits, by idempotency key, written once when the pass ends. */
interface EndsRow {
  readonly holder: string
  readonly ends: Readonly<Record<string, EndRow>>
}

/**
 * Notes a pass's step visits: the start of each before its body runs (one
 * tree write: a holder that dies mid-step leaves it), the ends kept here
 * and written at once by `flush` when the pass ends (one tree write per
 * pass, not per step). A failed note is logged, never the step's failure.
 * `undo` notes one try of a step's undo the same way (its key is the
 * undo's idempotency key; each try is a visit).
 *
 * @category models
 * @since 0.1.0
 */
export interface StepRecorder {
  readonly around: <A>(node: string, key: string, body: () => Promise<A>, step?: number) => Promise<A>
  readonly undo: <A, E, R>(node: string, key: string, body: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly flush: Effect.Effect<void>
}

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
  let flushes = 0
  let ends: Record<string, EndRow> = {}
  // Visits per key: a later visit of a key (an undo's retry) is noted, and its end reported, under `key#n`.
  const visits = new Map<string, number>()
  const note = (name: string, value: unknown) =>
    tree.saveReservedIfAbsent(record.tenantId, record.rootExecutionId, name, value).pipe(
      Effect.catch((e) => Effect.logWarning(`execution history: a step visit was not noted: ${e.message}`)),
      Effect.asVoid
    )
  const ended = (key: string, outcome: EndRow["outcome"]) => {
    ends[key] = { endedAt: now(), outcome }
  }
  /** Notes a visit's start; answers the key its end is reported under. */
  const started = (node: string, key: string, undo?: true, step?: number) =>
    Effect.suspend(() => {
      const n = (visits.get(key) ?? 0) + 1
      visits.set(key, n)
      const endKey = n === 1 ? key : `${key}#${n}`
      const row: VisitRow = { node, key, holder, instanceId, startedAt: now(), epoch, seq: ++seq, ...(n === 1 ? {} : { endKey }), ...(undo ? { undo } : {}), ...(step === undefined ? {} : { step }) }
      return Effect.as(note(visitName(endKey, holder), row), endKey)
    })
  /**
   * Notes a step's start now: its end key when the note was written at once
   * (a store that answers synchronously, like SQLite on a free connection:
   * the body starts in the same turn, without a promise hop), else a promise
   * of it.
   */
  const startNow = (node: string, key: string, step: number | undefined): string | Promise<string> => {
    const fiber = Effect.runFork(started(node, key, undefined, step))
    const exit = fiber.pollUnsafe()
    if (exit !== undefined) return Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))
    return new Promise((resolve, reject) => fiber.addObserver((exit) => Exit.isSuccess(exit) ? resolve(exit.value) : reject(Cause.squash(exit.cause))))
  }
  const start = <A>(body: () => Promise<A>): Promise<A> => {
    try {
      return body()
    } catch (error) {
      return Promise.reject(error)
    }
  }
  return {
    around: (node, key, body, step) => {
      const run = (endKey: string) =>
        start(body).then(
          (value) => {
            ended(endKey, "Succeeded")
            return value
          },
          (error) => {
            ended(endKey, isGraphInterrupt(error) ? "Interrupted" : "Failed")
            return Promise.reject(error)
          }
        )
      const noted = startNow(node, key, step)
      return typeof noted === "string" ? run(noted) : noted.then(run)
    },
    // An interrupted try (the holder stopped) reports no end, like a step its holder left: Unfinished.
    undo: (node, key, body) =>
      Effect.flatMap(started(node, key, true), (endKey) =>
        Effect.onExit(body, (exit) =>
          Exit.isSuccess(exit) ? Effect.sync(() => ended(endKey, "Succeeded"))
          : Exit.hasInterrupts(exit) ? Effect.void
          : Effect.sync(() => ended(endKey, "Failed")))),
    flush: Effect.suspend(() => {
      if (Object.keys(ends).length === 0) return Effect.void
      const row: EndsRow = { holder, ends }
      ends = {}
      return note(endsName(holder, ++flushes), row)
    })
  }
}

/** The noted visits of a tree, attempts numbered per step in start order. */
const visitRowsOf = (noted: ReadonlyArray<TreeEntry>) =>
  noted.filter((v) => v.key.startsWith(visitsPrefix))
    .map((v) => v.value as VisitRow)
    .sort((a, b) => a.startedAt - b.startedAt || a.epoch - b.epoch || a.seq - b.seq)

const visitsOf = (noted: ReadonlyArray<TreeEntry>, status: EndStatus) => {
  const visits = visitRowsOf(noted)
  const ends = new Map<string, EndRow>()
  for (const e of noted.filter((v) => v.key.startsWith(endsPrefix))) {
    const row = e.value as EndsRow
    for (const [key, end] of Object.entries(row.ends)) ends.set(JSON.stringify([row.holder, key]), end)
  }
  const lastOf = new Map(visits.map((v) => [v.key, v]))
  const attempts = new Map<string, number>()
  return visits.map((row): StepVisit => {
    const attempt = (attempts.get(row.key) ?? 0) + 1
    attempts.set(row.key, attempt)
    const end = ends.get(JSON.stringify([row.holder, row.endKey ?? row.key]))
    // No reported end: the holder stopped before its pass ended. The step ran again later (this visit was
    // cut short), or it was not: then it completed (LangGraph runs a finished task once), its end unknown.
    const outcome = end?.outcome ?? (lastOf.get(row.key) === row && status === "Finished" ? "Succeeded" : "Unfinished")
    return {
      node: row.node,
      idempotencyKey: row.key,
      attempt,
      instanceId: row.instanceId,
      startedAt: row.startedAt,
      endedAt: end?.endedAt ?? null,
      outcome,
      ...(row.undo ? { undo: true } : {})
    }
  })
}

/**
 * The model answers noted for the tree (see `ModelCalls`), as a snapshot
 * keeps them: of each visit (node, LangGraph step) the answers of its last
 * try (the latest epoch, then the latest try on it), the visits of a node
 * numbered in step order — every visit noted counts, with calls or not.
 */
const answersOf = (noted: ReadonlyArray<TreeEntry>): ReadonlyArray<ModelAnswer> => {
  const rows = noted.filter((v) => v.key.startsWith(ModelCalls.answersPrefix, reservedPrefix.length)).map((v) => v.value as ModelCalls.AnswerRow)
  if (rows.length === 0) return []
  const stepsOf = new Map<string, Set<number>>()
  const stepOfNode = (node: string, step: number) => {
    const steps = stepsOf.get(node) ?? new Set()
    stepsOf.set(node, steps.add(step))
  }
  for (const v of visitRowsOf(noted)) if (v.step !== undefined && v.undo === undefined) stepOfNode(v.node, v.step)
  for (const r of rows) stepOfNode(r.node, r.step)
  const lastTry = new Map<string, { epoch: number; attempt: number }>()
  for (const r of rows) {
    const visit = JSON.stringify([r.node, r.step])
    const last = lastTry.get(visit)
    if (last === undefined || r.epoch > last.epoch || (r.epoch === last.epoch && r.attempt > last.attempt)) lastTry.set(visit, { epoch: r.epoch, attempt: r.attempt })
  }
  return rows
    .filter((r) => {
      const last = lastTry.get(JSON.stringify([r.node, r.step]))!
      return r.epoch === last.epoch && r.attempt === last.attempt
    })
    // In the order they were asked: by LangGraph step, then node, then ordinal.
    .sort((a, b) => a.step - b.step || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0) || a.ordinal - b.ordinal)
    .map((r): ModelAnswer => ({
      node: r.node,
      visit: [...stepsOf.get(r.node)!].sort((a, b) => a - b).indexOf(r.step) + 1,
      ordinal: r.ordinal,
      provider: r.provider,
      model: r.model,
      ...(r.unrecordable === undefined ? { answer: r.answer } : { unrecordable: r.unrecordable })
    }))
}

/**
 * The spend of an execution as a snapshot keeps it (see `Budget`): the
 * `LedgerStore` counters of scope `execution` and the execution's id — its
 * lifetime counter and one per UTC day it lasted (read in one call) —
 * and their total. Null without a `LedgerStore`, or when nothing was spent.
 *
 * @category models
 * @since 0.1.0
 */
export interface ExecutionSpend {
  readonly total: number
  readonly lifetime: number
  /** Spend by UTC day (`YYYY-MM-DD`), days with none left out. */
  readonly days: Readonly<Record<string, number>>
}

const dayMillis = 24 * 60 * 60 * 1000

/** The execution's spend from `startedAt` to `endedAt` (see `ExecutionSpend`): its counters read in one call. */
const spendOf = Effect.fnUntraced(function*(record: ExecutionRecord, endedAt: number) {
  const ledger = yield* Effect.serviceOption(LedgerStore.LedgerStore)
  if (Option.isNone(ledger)) return null
  const lastDay = LedgerStore.dayOf(endedAt)
  const lasted: Array<string> = []
  for (let t = record.createdAt; lasted.at(-1) !== lastDay; t += dayMillis) lasted.push(LedgerStore.dayOf(Math.min(t, endedAt)))
  const key = { tenantId: record.tenantId, scope: "execution", scopeId: record.executionId } as const
  const [lifetime, ...amounts] = yield* ledger.value.totals(key, ["0000-01-01", ...lasted])
  const days: Record<string, number> = {}
  lasted.forEach((day, i) => {
    if (amounts[i]! > 0) days[day] = amounts[i]!
  })
  const total = amounts.reduce((a, b) => a + b, lifetime!)
  return total > 0 ? ({ total, lifetime: lifetime!, days } satisfies ExecutionSpend) : null
})

/** sha-256 (hex) of a JSON value. */
const hashOf = (value: unknown) => createHash("sha256").update(JSON.stringify(value ?? null)).digest("hex")

/**
 * Writes the snapshot of a root that ends now with `status`, under `lease`
 * (before its record leaves Running and its tree keys go). Does nothing for
 * a child, or without an `ExecutionHistoryStore`. A refused lease fails with
 * `LeaseLostError`: the new holder ends the tree and writes it. `input` is
 * the root's kept input when the caller has it in hand (none: it is read).
 *
 * @category internal
 * @since 0.1.0
 */
export const save = Effect.fnUntraced(function*(
  record: ExecutionRecord,
  status: EndStatus,
  error: string | null,
  lease: Lease,
  recorder?: StepRecorder | undefined,
  input: Option.Option<Option.Option<unknown>> = Option.none(),
  output: Option.Option<unknown> = Option.none()
) {
  const history = yield* Effect.serviceOption(ExecutionHistoryStore)
  if (Option.isNone(history) || record.executionId !== record.rootExecutionId) return
  if (recorder !== undefined) yield* recorder.flush
  const tree = yield* TreeStore
  const pauses = yield* PauseStore
  const now = yield* Clock.currentTimeMillis
  const kept = Option.isSome(input) ? input.value : yield* tree.get(record.tenantId, record.rootExecutionId, `${reservedPrefix}input`)
  // One read of the tree's history keys: the visits, the ends reported and the model answers.
  const noted = yield* tree.list(record.tenantId, record.rootExecutionId, historyPrefix)
  const keptOutput = Option.isSome(output) ? ModelCalls.jsonForm(output.value) : undefined
  const answers = answersOf(noted)
  const snapshot: ExecutionSnapshot = {
    tenantId: record.tenantId,
    executionId: record.executionId,
    threadId: record.threadId,
    workflowName: record.workflowName,
    workflowVersion: record.workflowVersion,
    configHash: record.configHash,
    inputHash: Option.isSome(kept) ? hashOf(kept.value) : null,
    status,
    error,
    startedAt: record.createdAt,
    endedAt: now,
    steps: visitsOf(noted, status),
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
    spend: yield* spendOf(record, now),
    endedBy: { holder: lease.holder, epoch: lease.epoch },
    ...(Option.isSome(kept) ? { input: kept.value } : {}),
    ...(keptOutput?._tag === "Json" ? { output: keptOutput.value } : {}),
    ...(answers.length > 0 ? { answers } : {})
  }
  yield* history.value.saveIfAbsent(snapshot, lease, now).pipe(Effect.catchTag("InvalidInputError", Effect.die))
})
