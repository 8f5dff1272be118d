/**
 * The top of an execution's tree. A child execution is a lease tree of its
 * own (its record's `rootExecutionId` is its own id) that names its parent;
 * what belongs to the whole tree — its declared budgets, its pseudonym key —
 * belongs to the execution at the top of that chain of parents, found by
 * reading the records up the chain (one read per level; none for a root).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { ExecutionRecord } from "../../../stores/ExecutionRecord.ts"
import { RecordStore } from "../../../stores/RecordStore.ts"

/** The most levels followed: more than any tree the runtime launches (a cycle in bad data ends here). */
const maxLevels = 1_000

/**
 * The highest record up `record`'s chain of parents, and whether it is the
 * top (a root): `complete` is false when a record up the chain is gone
 * (deleted with its tree), and `record` is then the highest one found.
 *
 * @category internal
 * @since 0.1.0
 */
export const highestOf = (record: ExecutionRecord) =>
  Effect.gen(function*() {
    if (record.parentExecutionId === null) return { record, complete: true }
    const records = yield* RecordStore
    let at = record
    for (let level = 0; level < maxLevels && at.parentExecutionId !== null; level++) {
      const parent = yield* records.getRecord(at.tenantId, at.parentExecutionId)
      if (Option.isNone(parent)) return { record: at, complete: false }
      at = parent.value
    }
    return { record: at, complete: at.parentExecutionId === null }
  })

/**
 * The record at the top of `record`'s chain of parents: `record` itself for
 * a root; `None` when a record up the chain is gone.
 *
 * @category internal
 * @since 0.1.0
 */
export const topOf = (record: ExecutionRecord) =>
  Effect.map(highestOf(record), (h) => (h.complete ? Option.some(h.record) : Option.none<ExecutionRecord>()))
