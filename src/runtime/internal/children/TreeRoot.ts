/**
 * The top of an execution's tree. A child execution is a lease tree of its
 * own (its record's `rootExecutionId` is its own id) that names its parent;
 * what belongs to the whole tree — its declared budgets, its pseudonym key —
 * belongs to the execution at the top of that chain of parents, found by
 * reading the records up the chain (one read per level; none for a root).
 *
 * @since 0.2.0
 */
import { Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"

/** The most levels followed: more than any tree the runtime launches (a cycle in bad data ends here). */
const maxLevels = 1_000

/**
 * The record at the top of `record`'s chain of parents: `record` itself for
 * a root; `None` when a record up the chain is gone (deleted with its tree).
 *
 * @category internal
 * @since 0.2.0
 */
export const topOf = (record: ExecutionRecord) =>
  Effect.gen(function*() {
    if (record.parentExecutionId === null) return Option.some(record)
    const records = yield* RecordStore
    let at = record
    for (let level = 0; level < maxLevels && at.parentExecutionId !== null; level++) {
      const parent = yield* records.getRecord(at.tenantId, at.parentExecutionId)
      if (Option.isNone(parent)) return Option.none<ExecutionRecord>()
      at = parent.value
    }
    return at.parentExecutionId === null ? Option.some(at) : Option.none<ExecutionRecord>()
  })
