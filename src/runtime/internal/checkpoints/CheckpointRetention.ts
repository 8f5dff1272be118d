/**
 * Checkpoint retention, one round: walks the threads that hold checkpoints
 * (a page of `sweepPageSize` at a time) and prunes each by its policy (its
 * workflow's, else the instance's; see `RetentionPolicy`), in transactions
 * of at most `sweepPageSize` checkpoints, the leadership checked before
 * each. Runs inside the retention leader's round (`background/Retention.ts`),
 * so once per fleet.
 *
 * What it never deletes: the newest checkpoint of each namespace of a
 * thread, with its pending writes and every blob a remaining checkpoint
 * names. That is what a pending pause resumes from, what a resting tree
 * (paused, or waiting for its children) continues from, and what the next
 * execution of the thread starts from; a pass that is running writes its
 * next checkpoint as a child of that newest one. A prune is one store
 * transaction: a kill before its commit deletes nothing, after it deletes
 * the batch; the next leader's round picks up from there.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { CheckpointStore, type CheckpointLifecycle } from "../../../stores/CheckpointStore.ts"
import type { ThreadKey } from "../../../stores/CheckpointRows.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"
import * as Leader from "../../Leader.ts"
import * as Metrics from "../../Metrics.ts"
import { Instance, type InstanceShape } from "../Instance.ts"
import * as Metering from "../observe/Metering.ts"
import * as RetentionPolicy from "./RetentionPolicy.ts"

/** The policy every thread falls under, and whether some workflow has its own (then a thread's workflow is looked up). */
const policies = (instance: InstanceShape) => {
  const { config } = instance
  const global: RetentionPolicy.Policy | undefined = config.checkpointKeepLast === undefined && config.checkpointKeepForMillis === undefined
    ? undefined
    : { keepLast: config.checkpointKeepLast, keepForMillis: config.checkpointKeepForMillis }
  const own = new Map<string, RetentionPolicy.Policy>()
  for (const [name, w] of config.workflows) {
    if (w.checkpointKeepLast === undefined && w.checkpointKeepFor === undefined) continue
    own.set(name, {
      keepLast: w.checkpointKeepLast,
      // Checked at build (`RetentionPolicy.validateWorkflows`).
      keepForMillis: w.checkpointKeepFor === undefined ? undefined : RetentionPolicy.keepForCheck(w.checkpointKeepFor) as number
    })
  }
  return { global, own }
}

/** The policy of one thread: that of the workflow of its newest root execution when it has one, else the global one. */
const policyOf = (thread: ThreadKey, p: ReturnType<typeof policies>) =>
  Effect.gen(function*() {
    if (p.own.size === 0) return p.global
    const records = yield* (yield* RecordStore).listByThread(thread.tenantId, thread.threadId)
    let newest: (typeof records)[number] | undefined
    for (const r of records) if (r.executionId === r.rootExecutionId && (newest === undefined || r.createdAt >= newest.createdAt)) newest = r
    return newest === undefined ? p.global : p.own.get(newest.workflowName) ?? p.global
  })

/** Prunes one thread batch by batch until its rule deletes nothing more; counts what went. */
const pruneThread = (lifecycle: CheckpointLifecycle, thread: ThreadKey, policy: RetentionPolicy.Policy, now: number) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const leadership = yield* Leader.Leadership
    const rule = RetentionPolicy.ruleAt(policy, now)
    while (true) {
      yield* leadership.check
      const pruned = yield* lifecycle.pruneThread(thread.tenantId, thread.threadId, rule, instance.config.sweepPageSize)
      yield* Metering.add(Metrics.checkpointRowsPruned, instance.instanceId, { kind: "checkpoint" }, pruned.checkpoints)
      yield* Metering.add(Metrics.checkpointRowsPruned, instance.instanceId, { kind: "write" }, pruned.writes)
      yield* Metering.add(Metrics.checkpointRowsPruned, instance.instanceId, { kind: "blob" }, pruned.blobs)
      if (!pruned.more) return pruned.checkpoints
      // Writers go between batches.
      yield* Effect.yieldNow
    }
  })

/**
 * One round of checkpoint retention at `now` (a no-op without a policy, or
 * over a checkpoint store that offers no retention). A thread whose prune
 * failed is logged and left to the next round.
 *
 * @category internal
 * @since 0.1.0
 */
export const prune = (now: number) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const store = yield* CheckpointStore
    const p = policies(instance)
    if (store.lifecycle === undefined || (p.global === undefined && p.own.size === 0)) return
    const lifecycle = store.lifecycle
    const leadership = yield* Leader.Leadership
    const page = instance.config.sweepPageSize
    let after: ThreadKey | undefined
    while (true) {
      yield* leadership.check
      const threads = yield* lifecycle.listThreads(after, page)
      for (const thread of threads) {
        const policy = yield* policyOf(thread, p)
        if (policy === undefined) continue
        yield* pruneThread(lifecycle, thread, policy, now).pipe(
          Effect.catchTag(["StoreError", "InvalidInputError"], (e) =>
            Effect.logWarning(`retention: pruning the checkpoints of thread ${thread.threadId} (tenant ${thread.tenantId}) failed: ${e.message}`))
        )
      }
      if (threads.length < page) return
      after = threads[threads.length - 1]
    }
  }).pipe(
    Effect.catchTag(["StoreError", "InvalidInputError"], (e) => Effect.logWarning(`retention: listing the threads with checkpoints failed: ${e.message}`))
  )

