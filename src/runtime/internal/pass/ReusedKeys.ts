/**
 * Step idempotency keys, and the keys a fork reuses.
 *
 * A step's key is its tenant, its thread and LangGraph's task id. The task
 * id comes from the checkpoint the step runs from, so the steps a fork runs
 * again get new keys. A fork asked to reuse the first run's keys
 * (`reuseIdempotencyKeys`) reads, before it writes anything, the line of
 * checkpoints the source thread went through after the forked one (up to its
 * newest descendant), and keeps for each of its LangGraph steps the key of
 * every node that ran once in it: `<step>:<node>` → key. The map is kept
 * with the fork's tree (`@baton/reused-keys` in the `TreeStore`, fenced under
 * its lease), so whichever instance moves the fork gives a step of the same
 * step number and node the first run's key; any other step (the fork took
 * another path, or a node ran more than once in that step, as a `Send`
 * fan-out does) gets its own new key.
 *
 * @since 0.1.0
 */
import { reservedPrefix } from "../../../stores/TreeStore.ts"

/**
 * The reserved name of the map in the fork's tree.
 *
 * @category internal
 * @since 0.1.0
 */
export const reusedKeysName = "reused-keys"

/**
 * The map's key in the `TreeStore`.
 *
 * @category internal
 * @since 0.1.0
 */
export const reusedKeysKey = `${reservedPrefix}${reusedKeysName}`

/**
 * `<step>:<node>` → the idempotency key the first run's step had.
 *
 * @category models
 * @since 0.1.0
 */
export type ReusedKeys = Readonly<Record<string, string>>

/**
 * A step's own idempotency key.
 *
 * @category internal
 * @since 0.1.0
 */
export const stepKey = (tenantId: string, threadId: string, taskId: string): string => `${tenantId}/${threadId}/${taskId}`

/**
 * The key a step of LangGraph step `step` and node `node` takes: the first run's, when the fork reuses it.
 *
 * @category internal
 * @since 0.1.0
 */
export const keyFor = (reused: ReusedKeys | undefined, step: number | undefined, node: string, own: string): string =>
  reused === undefined || step === undefined ? own : reused[`${step}:${node}`] ?? own

/**
 * Whether a task of namespace `ns` (LangGraph's `langgraph_checkpoint_ns`)
 * is a step of the root graph: only those reuse keys (a subgraph's task ids
 * hang on its own checkpoints).
 *
 * @category internal
 * @since 0.1.0
 */
export const isRootStep = (ns: string | undefined): boolean => ns === undefined || !ns.includes("|")

/** What the map is made from: a checkpoint of the source thread as LangGraph's state history gives it. */
export interface HistoryEntry {
  readonly checkpointId: string
  readonly parentId: string | undefined
  /** The LangGraph step the checkpoint was written at. */
  readonly step: number
  /** The tasks that ran from it (id and node). */
  readonly tasks: ReadonlyArray<{ readonly id: string; readonly name: string }>
}

/**
 * The map for a fork of checkpoint `from` of a thread whose history is
 * `entries` (any order): along the line from `from` to its newest
 * descendant, each step's once-run nodes with their keys. A task run from
 * the checkpoint of step `s` runs as step `s + 1`; in the fork it runs as
 * step `s + 1 + shift` (`shift` is 1 when a state update was written first).
 *
 * @category internal
 * @since 0.1.0
 */
export const mapOf = (
  tenantId: string,
  threadId: string,
  from: string,
  entries: ReadonlyArray<HistoryEntry>,
  shift: number
): ReusedKeys => {
  const byId = new Map(entries.map((e) => [e.checkpointId, e]))
  const descends = (e: HistoryEntry): boolean => {
    for (let at: HistoryEntry | undefined = e, i = 0; at !== undefined && i <= entries.length; at = at.parentId === undefined ? undefined : byId.get(at.parentId), i++) {
      if (at.checkpointId === from) return true
    }
    return false
  }
  // LangGraph's checkpoint ids sort by time: the newest descendant is the greatest.
  const newest = entries.filter(descends).sort((a, b) => (a.checkpointId < b.checkpointId ? 1 : -1))[0]
  const out: Record<string, string> = {}
  for (let at: HistoryEntry | undefined = newest, i = 0; at !== undefined && i <= entries.length; i++) {
    const counts = new Map<string, number>()
    for (const t of at.tasks) counts.set(t.name, (counts.get(t.name) ?? 0) + 1)
    for (const t of at.tasks) if (counts.get(t.name) === 1) out[`${at.step + 1 + shift}:${t.name}`] = stepKey(tenantId, threadId, t.id)
    if (at.checkpointId === from) break
    at = at.parentId === undefined ? undefined : byId.get(at.parentId)
  }
  return out
}
