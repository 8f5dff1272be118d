/**
 * `Baton.checkpoints`: a thread's state history — its checkpoints, newest
 * first, a page at a time, each with its step, the nodes whose step wrote
 * it, when it was written, its parent, and the execution that wrote it.
 * Tenant- and owner-checked like every read. Channel values are not read:
 * only each checkpoint's own row (and, for a page's oldest checkpoint, its
 * parent's, to tell its nodes).
 *
 * @since 0.1.0
 */
import type { CheckpointTuple, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint"
import { Effect } from "effect"
import type { CheckpointRow } from "../../../stores/CheckpointRows.ts"
import { CheckpointStore } from "../../../stores/CheckpointStore.ts"
import { InvalidInputError, StoreError } from "../../../stores/Errors.ts"
import { tenantConfigKey } from "../../../stores/Fence.ts"
import { defaultTenant, type TenantId, type ThreadId } from "../../../stores/Ids.ts"
import { checkThread } from "../calls/Threads.ts"

/**
 * One checkpoint of a thread, as `Baton.checkpoints` lists it.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointView {
  readonly checkpointId: string
  /** "" for the graph's own checkpoints; a subgraph's namespace otherwise. */
  readonly checkpointNs: string
  readonly parentCheckpointId: string | null
  /** LangGraph's step number (-1 for the input checkpoint). */
  readonly step: number | null
  /** LangGraph's source: `input`, `loop`, `update` or `fork`. */
  readonly source: string | null
  /** The nodes whose step wrote it (none for an input checkpoint). */
  readonly nodes: ReadonlyArray<string>
  /** When it was written (the writer's Clock, epoch ms); null when not known. */
  readonly createdAt: number | null
  /** The execution whose pass wrote it; null when not known (written outside a pass, or before it was kept). */
  readonly executionId: string | null
}

/**
 * One page of a thread's checkpoints, newest first; `next` is the cursor of the next page.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointPage {
  readonly checkpoints: ReadonlyArray<CheckpointView>
  readonly next: string | null
}

/**
 * Whose thread, which namespace, and which page `Baton.checkpoints` reads.
 *
 * @category models
 * @since 0.1.0
 */
export interface CheckpointsOptions {
  readonly tenantId?: TenantId | undefined
  readonly ownerId?: string | undefined
  /** The namespace to list (default "": the graph's own line). */
  readonly checkpointNs?: string | undefined
  /** A page's `next`, for the page after it. */
  readonly cursor?: string | undefined
  /** Checkpoints per page: 1 to 1,000 (default 100). */
  readonly limit?: number | undefined
}

const invalid = (field: string, reason: string) => new InvalidInputError({ operation: "Baton.checkpoints", field, reason })

const encodeCursor = (id: string) => Buffer.from(JSON.stringify(["cp", id])).toString("base64url")

const decodeCursor = (cursor: string | undefined): Effect.Effect<string | undefined, InvalidInputError> => {
  if (cursor === undefined) return Effect.succeed(undefined)
  const bad = invalid("cursor", "is not a cursor this call returned (pass a page's `next` as it came, or none for the first page)")
  if (typeof cursor !== "string" || cursor.length > 1000) return Effect.fail(bad)
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return Array.isArray(value) && value.length === 2 && value[0] === "cp" && typeof value[1] === "string" ? Effect.succeed(value[1]) : Effect.fail(bad)
  } catch {
    return Effect.fail(bad)
  }
}

const limitOf = (limit: unknown): Effect.Effect<number, InvalidInputError> =>
  limit === undefined
    ? Effect.succeed(100)
    : typeof limit === "number" && Number.isInteger(limit) && limit >= 1 && limit <= 1000
    ? Effect.succeed(limit)
    : Effect.fail(invalid("limit", `is ${String(limit)}: it must be a whole number from 1 to 1000`))

/** The nodes that ran between `parent` and `child`: those whose seen versions changed. */
const nodesBetween = (child: Checkpoint, parent: Checkpoint | undefined): Array<string> => {
  if (parent === undefined) return []
  const out: Array<string> = []
  for (const [node, seen] of Object.entries(child.versions_seen ?? {})) {
    if (node.startsWith("__")) continue
    if (JSON.stringify(seen) !== JSON.stringify(parent.versions_seen?.[node])) out.push(node)
  }
  return out.sort()
}

const storeError = (cause: unknown) =>
  new StoreError({ store: "CheckpointStore", operation: "checkpoints", reason: cause instanceof Error ? cause.message : String(cause), cause })

/** The views of rows (newest first) over their checkpoints as the saver's serde reads them; `older`: the oldest row's parent. */
const viewsOf = (rows: ReadonlyArray<CheckpointRow>, older: CheckpointRow | undefined) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    const all = older === undefined ? rows : [...rows, older]
    const [checkpoints, metadatas] = yield* Effect.tryPromise({
      try: () =>
        Promise.all([
          Promise.all(all.map((r) => saver.serde.loadsTyped(r.type, r.checkpoint) as Promise<Checkpoint>)),
          Promise.all(rows.map((r) => saver.serde.loadsTyped(r.metadataType, r.metadata) as Promise<CheckpointMetadata>))
        ]),
      catch: storeError
    })
    const byId = new Map(all.map((r, i) => [r.checkpointId, checkpoints[i]!]))
    return rows.map((row, i): CheckpointView => {
      const metadata = metadatas[i] as { step?: unknown; source?: unknown } | undefined
      return {
        checkpointId: row.checkpointId,
        checkpointNs: row.checkpointNs,
        parentCheckpointId: row.parentCheckpointId,
        step: typeof metadata?.step === "number" ? metadata.step : null,
        source: typeof metadata?.source === "string" ? metadata.source : null,
        nodes: nodesBetween(checkpoints[i]!, row.parentCheckpointId === null ? undefined : byId.get(row.parentCheckpointId)),
        createdAt: row.createdAt ?? (Number.isFinite(Date.parse(checkpoints[i]!.ts)) ? Date.parse(checkpoints[i]!.ts) : null),
        executionId: row.executionId ?? null
      }
    })
  })

/** A page read from the saver itself (a store over a foreign saver): its tuples carry the values too. */
const fromSaver = (tenantId: string, threadId: string, ns: string, before: string | undefined, limit: number) =>
  Effect.gen(function*() {
    const { saver } = yield* CheckpointStore
    const tuples = yield* Effect.tryPromise({
      try: async () => {
        const out: Array<CheckpointTuple> = []
        const config = { configurable: { thread_id: threadId, checkpoint_ns: ns, [tenantConfigKey]: tenantId } }
        const options = { limit: limit + 2, ...(before === undefined ? {} : { before: { configurable: { checkpoint_id: before } } }) }
        for await (const t of saver.list(config, options)) out.push(t)
        return out
      },
      catch: storeError
    })
    return tuples.slice(0, limit + 1).map((t, i): CheckpointView => ({
      checkpointId: t.checkpoint.id,
      checkpointNs: ns,
      parentCheckpointId: t.parentConfig?.configurable?.checkpoint_id ?? null,
      step: typeof t.metadata?.step === "number" ? t.metadata.step : null,
      source: typeof t.metadata?.source === "string" ? t.metadata.source : null,
      nodes: nodesBetween(t.checkpoint, tuples[i + 1]?.checkpoint.id === t.parentConfig?.configurable?.checkpoint_id ? tuples[i + 1]?.checkpoint : undefined),
      createdAt: Number.isFinite(Date.parse(t.checkpoint.ts)) ? Date.parse(t.checkpoint.ts) : null,
      executionId: null
    }))
  })

/** A page of at most `limit` of `views` (one more read tells there is a next page). */
const pageOf = (views: ReadonlyArray<CheckpointView>, limit: number): CheckpointPage => {
  const shown = views.slice(0, limit)
  return { checkpoints: shown, next: views.length > limit ? encodeCursor(shown[shown.length - 1]!.checkpointId) : null }
}

/**
 * One page of a thread's checkpoints (see `Baton.checkpoints`).
 *
 * @category internal
 * @since 0.1.0
 */
export const checkpoints = (threadId: ThreadId, options?: CheckpointsOptions) =>
  Effect.gen(function*() {
    const tenantId = options?.tenantId ?? defaultTenant
    const limit = yield* limitOf(options?.limit)
    const before = yield* decodeCursor(options?.cursor)
    const ns = options?.checkpointNs ?? ""
    if (typeof ns !== "string") return yield* invalid("checkpointNs", "must be a text (\"\" for the graph's own checkpoints)")
    yield* checkThread(tenantId, threadId, options?.ownerId)
    const store = yield* CheckpointStore
    if (store.lifecycle === undefined) return pageOf(yield* fromSaver(tenantId, threadId, ns, before, limit), limit)
    const rows = yield* store.lifecycle.listCheckpoints(tenantId, threadId, { checkpointNs: ns, before, limit: limit + 1 })
    const shown = rows.slice(0, limit)
    const parentId = shown[shown.length - 1]?.parentCheckpointId ?? null
    // The oldest shown checkpoint's parent tells its nodes: the next row when it is, else one more read.
    const older = parentId === null
      ? undefined
      : rows[limit]?.checkpointId === parentId
      ? rows[limit]
      : (yield* store.lifecycle.listCheckpoints(tenantId, threadId, { checkpointNs: ns, checkpointId: parentId, limit: 1 }))[0]
    const views = yield* viewsOf(shown, older)
    return { checkpoints: views, next: rows.length > limit ? encodeCursor(views[views.length - 1]!.checkpointId) : null } satisfies CheckpointPage as CheckpointPage
  }).pipe(Effect.withSpan("Baton.checkpoints"))
