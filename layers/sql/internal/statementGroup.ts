/**
 * Group commit on Postgres: fenced writes that are each one statement of
 * CTEs, issued in the same turn of the event loop while other statements are
 * in flight, go out as ONE statement — one round trip, one commit for all of
 * them (see `schedule` for when a batch leaves).
 *
 * Each write builds its CTEs under its own name prefix (its inserts read its
 * own lease CTE), and the statement's main query answers one row per write:
 * `baton_item` (the write's place in the statement) and the write's result
 * columns. So a stale fence refuses its own write alone, as when it runs by
 * itself. Postgres runs every data-modifying CTE of a statement exactly once
 * whatever the main query reads, and all of them commit together or not at all.
 *
 * Two writes with the same key (the same lease row) never share a statement:
 * Postgres applies only one of two updates of one row made by one statement.
 * A later one waits for the next statement of the same flush. When a
 * statement fails (a deadlock with another instance's statement over the same
 * lease rows, a row one write could not store, a lost connection), every
 * write in it runs again in a statement of its own, so each caller gets its
 * own outcome.
 */
import type { Fragment, Statement } from "effect/sql/Statement"
import type { SqlClient } from "effect/sql"

/** One write's part of a group statement. */
export interface Part {
  /** Its CTEs, every name under the prefix it was given. */
  readonly ctes: ReadonlyArray<Fragment>
  /** Its result columns (a select list over its CTEs). */
  readonly result: Fragment
}

/** A write to run in a group statement. */
export interface GroupWrite<A> {
  /** Its name in errors (a write that fails alone). */
  readonly operation: string
  /** Writes with equal keys never share a statement. */
  readonly key: string
  /** The values it binds (a statement binds at most {@link maxParams}). */
  readonly params: number
  /** Its part, its CTE names prefixed with `prefix`. */
  readonly part: (prefix: string) => Part
  /** Its outcome from its result row. */
  readonly answer: (row: any) => Promise<A>
}

/** Bound values per statement, well under Postgres' 65 535. */
export const maxParams = 30_000
/** Writes per statement. */
export const maxWrites = 32

interface Queued {
  readonly write: GroupWrite<unknown>
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/**
 * The group over a client: `submit` queues a write and answers its outcome.
 * `execute` runs one statement and answers its rows; its failure (named by
 * `operation`) is what a write run alone rejects with.
 */
export const make = (
  sql: SqlClient.SqlClient,
  execute: (statement: Statement<any>, operation: string) => Promise<ReadonlyArray<any>>
) => {
  const statementOf = (writes: ReadonlyArray<GroupWrite<unknown>>): Statement<any> => {
    const parts = writes.map((w, i) => w.part(`w${i}_`))
    const results = parts.map((p, i) => sql`SELECT ${sql.literal(String(i))} AS baton_item, ${p.result}`)
    return sql`WITH ${sql.csv(parts.flatMap((p) => p.ctes))} ${sql.join(" UNION ALL ", false)(results)}`
  }

  const runAlone = (q: Queued): Promise<void> =>
    execute(statementOf([q.write]), q.write.operation).then((rows) => q.write.answer(rows[0])).then(q.resolve, q.reject)

  /** Answers once every write of the statement has its outcome. */
  const runTogether = (items: ReadonlyArray<Queued>): Promise<unknown> => {
    if (items.length === 1) return runAlone(items[0]!)
    return execute(statementOf(items.map((q) => q.write)), "groupWrite").then(
      (rows) => {
        const byItem = new Map<number, any>()
        for (const row of rows) byItem.set(Number(row.baton_item), row)
        return Promise.all(items.map((q, i) => q.write.answer(byItem.get(i)).then(q.resolve, q.reject)))
      },
      () => Promise.all(items.map(runAlone))
    )
  }

  /** Splits the queue into statements: distinct keys, bounded size, in key order (lease rows locked in one order). */
  const statements = (items: ReadonlyArray<Queued>): ReadonlyArray<ReadonlyArray<Queued>> => {
    const out: Array<Array<Queued>> = []
    const keys: Array<Set<string>> = []
    const params: Array<number> = []
    const sorted = [...items].sort((a, b) => (a.write.key < b.write.key ? -1 : a.write.key > b.write.key ? 1 : 0))
    for (const q of sorted) {
      let i = out.findIndex((group, j) =>
        !keys[j]!.has(q.write.key) && group.length < maxWrites && params[j]! + q.write.params <= maxParams
      )
      if (i === -1) {
        i = out.push([]) - 1
        keys.push(new Set())
        params.push(0)
      }
      out[i]!.push(q)
      keys[i]!.add(q.write.key)
      params[i]! += q.write.params
    }
    return out
  }

  let queue: Array<Queued> = []
  let scheduled = false
  let inFlight = 0
  const flush = () => {
    scheduled = false
    const items = queue
    queue = []
    for (const group of statements(items)) {
      inFlight++
      const ended = () => void inFlight--
      runTogether(group).then(ended, ended)
    }
  }
  /**
   * With nothing in flight, a write goes out at the end of the current job
   * (with the writes issued in the same job): a lone writer waits for
   * nothing. Otherwise at the end of this turn of the event loop, with every
   * write the turn's callbacks issued (as when the answers of several
   * statements arrive together). Nothing waits for a statement in flight: a
   * slow one delays no other write.
   */
  const schedule = () => {
    scheduled = true
    if (inFlight === 0) queueMicrotask(flush)
    else setImmediate(flush)
  }

  return {
    submit: <A>(write: GroupWrite<A>): Promise<A> =>
      new Promise<A>((resolve, reject) => {
        queue.push({ write: write as GroupWrite<unknown>, resolve: resolve as (value: unknown) => void, reject })
        if (!scheduled) schedule()
      })
  }
}
