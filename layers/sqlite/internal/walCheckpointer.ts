/**
 * WAL checkpoints off the event loop.
 *
 * SQLite copies its write-ahead log back into the database file at a
 * checkpoint. By default the commit that grows the log past 1,000 pages runs
 * that checkpoint itself, synchronously: one write in a few hundred pays
 * milliseconds for everyone's pages, and since `node:sqlite` is synchronous
 * the whole process waits with it. Here a second connection, in a worker
 * thread of its own, runs `PRAGMA wal_checkpoint(PASSIVE)` every `interval`
 * on the Clock instead. A PASSIVE checkpoint waits for no reader or writer
 * (SQLite lets writers go on appending to the log meanwhile), so the
 * connection on the event loop never stops for one.
 *
 * The worker is started at the first checkpoint the schedule asks for, once
 * the main connection has opened the file, and terminated when the scope
 * closes. A checkpoint that finds another one under way (another process on
 * the same file) is skipped: that one does the work. Any other failure is
 * logged and tried again at the next interval; the main connection keeps a
 * larger `wal_autocheckpoint` ({@link fallbackPages}) as a bound, so the log
 * never grows without limit when no background checkpoint gets through.
 */
import { Duration, Effect } from "effect"
import type { Worker as NodeWorker } from "node:worker_threads"

/**
 * The `wal_autocheckpoint` the main connection keeps while checkpoints run
 * in the background: about 40 MB of log at SQLite's default 4 KiB pages.
 */
export const fallbackPages = 10_000

/**
 * What one background WAL checkpoint did: `Done` with SQLite's answer (the
 * frames in the log, and how many of them are now in the file), `Busy` when
 * another checkpoint was under way (or the file is not open yet), `Failed`
 * with the reason.
 *
 * @category models
 * @since 0.3.0
 */
export type Outcome =
  | { readonly _tag: "Done"; readonly log: number; readonly checkpointed: number }
  | { readonly _tag: "Busy" }
  | { readonly _tag: "Failed"; readonly message: string }

/** The worker: one connection to the file, one PASSIVE checkpoint per message. */
const workerSource = `
const { parentPort, workerData } = process.getBuiltinModule("node:worker_threads")
const { DatabaseSync } = process.getBuiltinModule("node:sqlite")
let db
let statement
parentPort.on("message", (id) => {
  if (id === "close") {
    if (db !== undefined) db.close()
    parentPort.close()
    return
  }
  try {
    if (statement === undefined) {
      db = new DatabaseSync(workerData.path, { timeout: 0 })
      db.exec("PRAGMA synchronous = " + workerData.synchronous)
      statement = db.prepare("PRAGMA wal_checkpoint(PASSIVE)")
    }
    const row = statement.get()
    parentPort.postMessage({ id, busy: row.busy, log: row.log, checkpointed: row.checkpointed })
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error), code: error && error.errcode })
  }
})
`

/** SQLITE_BUSY and SQLITE_LOCKED: another checkpoint (or a lock) is under way. */
const busyCodes = new Set([5, 6])

export interface Options {
  readonly path: string
  readonly synchronous: "NORMAL" | "FULL"
  readonly interval: Duration.Duration
  /** Whether the main connection has opened the file (and it is still the one at the path). */
  readonly ready: () => boolean
}

/** The checkpointer: `checkpoint` runs one now (tests and shutdown use it); the schedule runs the rest. */
export interface WalCheckpointer {
  readonly checkpoint: Effect.Effect<Outcome>
}

/**
 * Starts the schedule in the current scope (the worker itself only at the
 * first checkpoint) and answers the checkpointer.
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    let worker: NodeWorker | undefined
    let next = 0
    const waiting = new Map<number, (outcome: Outcome) => void>()

    const started = (): NodeWorker => {
      if (worker !== undefined) return worker
      const { Worker } = process.getBuiltinModule("node:worker_threads")
      const w = new Worker(workerSource, { eval: true, workerData: { path: options.path, synchronous: options.synchronous } })
      w.unref()
      w.on("message", (m: { id: number; busy?: number; log?: number; checkpointed?: number; error?: string; code?: number }) => {
        const answer = waiting.get(m.id)
        waiting.delete(m.id)
        answer?.(
          m.error !== undefined
            ? busyCodes.has(m.code ?? -1) ? { _tag: "Busy" } : { _tag: "Failed", message: m.error }
            : m.busy === 1
            ? { _tag: "Busy" }
            : { _tag: "Done", log: m.log ?? 0, checkpointed: m.checkpointed ?? 0 }
        )
      })
      // A worker that dies answers what it was asked with the reason; the next checkpoint starts another.
      const lost = (message: string) => {
        if (worker === w) worker = undefined
        for (const [id, answer] of waiting) {
          waiting.delete(id)
          answer({ _tag: "Failed", message })
        }
      }
      w.on("error", (error) => lost(`the checkpoint worker failed: ${error.message}`))
      w.on("exit", (code) => lost(`the checkpoint worker exited (code ${code})`))
      return worker = w
    }

    const checkpoint: Effect.Effect<Outcome> = Effect.suspend(() => {
      if (!options.ready()) return Effect.succeed<Outcome>({ _tag: "Busy" })
      return Effect.callback<Outcome>((resume) => {
        const id = next++
        waiting.set(id, (outcome) => resume(Effect.succeed(outcome)))
        try {
          started().postMessage(id)
        } catch (error) {
          waiting.delete(id)
          resume(Effect.succeed({ _tag: "Failed", message: error instanceof Error ? error.message : String(error) }))
        }
        return Effect.sync(() => waiting.delete(id))
      })
    })

    const logged = Effect.flatMap(checkpoint, (outcome) =>
      outcome._tag === "Failed"
        ? Effect.logWarning(
          `SQLite "${options.path}": a background WAL checkpoint failed (${outcome.message}); it is tried again in ${Duration.format(options.interval)}, and SQLite checkpoints on its own once the log passes ${fallbackPages} pages`
        )
        : Effect.void)

    // The finalizer first: finalizers run last-in first-out, so the schedule stops before the worker goes.
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        const w = worker
        worker = undefined
        if (w === undefined) return Promise.resolve()
        // The worker closes its connection and ends (so the main connection's close is the last, and removes the log).
        const exited = new Promise<void>((resolve) => w.once("exit", () => resolve()))
        // Referenced while it closes: an unreferenced worker would let the process end before it has.
        w.ref()
        w.postMessage("close")
        return exited
      })
    )
    yield* Effect.forkScoped(Effect.forever(Effect.delay(logged, options.interval)))
    return { checkpoint } satisfies WalCheckpointer
  })
