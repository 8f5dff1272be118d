/**
 * Which `node:sqlite` statements are compiled again while they run — a
 * prepared statement that SQLite expires and re-prepares at every call pays
 * the parser and planner each time (see layers/sql/internal/stablePlan.ts).
 * Load it before any program that uses node:sqlite:
 *
 *   npm exec -- node --import ./bench/traceCompiles.ts bench/overhead.ts
 *
 * It sets an authorizer on every connection (SQLite asks it at each compile)
 * and notes the statement running when it is asked; at exit it prints the
 * statements compiled during their own runs, most first, on stderr
 * (`recompiled N× <sql>`). A statement compiled once at `prepare` does not
 * show; setting the authorizer expires each statement once, so a count of
 * 1–2 means nothing.
 */
import { constants, DatabaseSync, StatementSync } from "node:sqlite"

let running: string | undefined
const counts = new Map<string, number>()
const watched = new WeakSet<DatabaseSync>()

const prepare = DatabaseSync.prototype.prepare
DatabaseSync.prototype.prepare = function(this: DatabaseSync, ...args: Parameters<typeof prepare>) {
  if (!watched.has(this)) {
    watched.add(this)
    this.setAuthorizer(() => {
      if (running !== undefined) counts.set(running, (counts.get(running) ?? 0) + 1)
      return constants.SQLITE_OK
    })
  }
  return prepare.apply(this, args)
}

for (const method of ["all", "get", "run", "iterate"] as const) {
  const original = StatementSync.prototype[method] as (...args: Array<unknown>) => unknown
  ;(StatementSync.prototype as any)[method] = function(this: StatementSync, ...args: Array<unknown>) {
    const outer = running
    running = this.sourceSQL
    try {
      return original.apply(this, args)
    } finally {
      running = outer
    }
  }
}

process.on("exit", () => {
  const worst = [...counts].filter(([, n]) => n > 2).sort((a, b) => b[1] - a[1])
  if (worst.length === 0) console.error("traceCompiles: no statement was compiled again while it ran")
  for (const [sql, n] of worst) console.error(`recompiled ${n}× ${sql.replace(/\s+/g, " ").slice(0, 160)}`)
})
