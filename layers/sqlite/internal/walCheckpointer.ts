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
 * the main connection has opened the file. Every client of one file in a
 * process (the stores', the wake-ups', the limiters' connections) shares
 * it; the last one whose scope closes ends it. A checkpoint that finds another one under way (another process on
 * the same file) is skipped: that one does the work. Any other failure is
 * logged and tried again at the next interval; the main connection keeps a
 * larger `wal_autocheckpoint` ({@link fallbackPages}) as a bound, so the log
 * never grows without limit when no background checkpoint gets through.
 */
import { Duration, Effect } from "effect"
import * as Path from "node:path"
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
 * @since 0.1.0
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

/** One worker and the checkpoints it was asked for and has not answered. */
interface Shared {
  readonly key: string
  readonly worker: NodeWorker
  readonly waiting: Map<number, (outcome: Outcome) => void>
  next: number
  /** The clients of this process that use it. */
  users: number
  alive: boolean
}

/**
 * The workers of this process, one per database file: every client of a
 * file (the stores', the wake-ups', the limiters' connections) shares it.
 */
const workers = new Map<string, Shared>()

/**
 * How many checkpoint workers this process runs.
 *
 * @internal
 */
export const openWorkers = (): number => workers.size

/** A worker's answer to one checkpoint. */
interface Answer {
  readonly id: number
  readonly busy?: number
  readonly log?: number
  readonly checkpointed?: number
  readonly error?: string
  readonly code?: number
}

const answerOf = (m: Answer): Outcome =>
  m.error !== undefined
    ? busyCodes.has(m.code ?? -1) ? { _tag: "Busy" } : { _tag: "Failed", message: m.error }
    : m.busy === 1
    ? { _tag: "Busy" }
    : { _tag: "Done", log: m.log ?? 0, checkpointed: m.checkpointed ?? 0 }

/** Starts the worker of a file. A worker that dies answers what it was asked with the reason; the next checkpoint starts another. */
const start = (key: string, options: Options): Shared => {
  const { Worker } = process.getBuiltinModule("node:worker_threads")
  const worker = new Worker(workerSource, { eval: true, workerData: { path: options.path, synchronous: options.synchronous } })
  worker.unref()
  const shared: Shared = { key, worker, waiting: new Map(), next: 0, users: 0, alive: true }
  worker.on("message", (m: Answer) => {
    const answer = shared.waiting.get(m.id)
    shared.waiting.delete(m.id)
    answer?.(answerOf(m))
  })
  const lost = (message: string) => {
    shared.alive = false
    if (workers.get(key) === shared) workers.delete(key)
    for (const [id, answer] of shared.waiting) {
      shared.waiting.delete(id)
      answer({ _tag: "Failed", message })
    }
  }
  worker.on("error", (error) => lost(`the checkpoint worker failed: ${error.message}`))
  worker.on("exit", (code) => lost(`the checkpoint worker exited (code ${code})`))
  workers.set(key, shared)
  return shared
}

/** Lets go of a worker; the last client of it closes it (its connection first, so the main connection's close is the last). */
const release = (shared: Shared): Promise<void> => {
  shared.users--
  if (shared.users > 0 || !shared.alive) return Promise.resolve()
  if (workers.get(shared.key) === shared) workers.delete(shared.key)
  const exited = new Promise<void>((resolve) => shared.worker.once("exit", () => resolve()))
  // Referenced while it closes: an unreferenced worker would let the process end before it has.
  shared.worker.ref()
  shared.worker.postMessage("close")
  return exited
}

/**
 * Starts the schedule in the current scope (the file's worker only at the
 * first checkpoint) and answers the checkpointer.
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const key = Path.resolve(options.path)
    let mine: Shared | undefined

    /** This client's worker: the file's, started or joined on first use (and again after one died). */
    const current = (): Shared => {
      if (mine?.alive) return mine
      if (mine !== undefined) mine.users--
      const found = workers.get(key)
      mine = found?.alive ? found : start(key, options)
      mine.users++
      return mine
    }

    const checkpoint: Effect.Effect<Outcome> = Effect.suspend(() => {
      if (!options.ready()) return Effect.succeed<Outcome>({ _tag: "Busy" })
      return Effect.callback<Outcome>((resume) => {
        let shared: Shared
        try {
          shared = current()
        } catch (error) {
          resume(Effect.succeed({ _tag: "Failed", message: error instanceof Error ? error.message : String(error) }))
          return
        }
        const id = shared.next++
        shared.waiting.set(id, (outcome) => resume(Effect.succeed(outcome)))
        shared.worker.postMessage(id)
        return Effect.sync(() => shared.waiting.delete(id))
      })
    })

    const logged = Effect.flatMap(checkpoint, (outcome) =>
      outcome._tag === "Failed"
        ? Effect.logWarning(
          `SQLite "${options.path}": a background WAL checkpoint failed (${outcome.message}); it is tried again in ${Duration.format(options.interval)}, and SQLite checkpoints on its own once the log passes ${fallbackPages} pages`
        )
        : Effect.void)

    // The finalizer first: finalizers run last-in first-out, so the schedule stops before the worker is let go.
    yield* Effect.addFinalizer(() => Effect.promise(() => (mine === undefined ? Promise.resolve() : release(mine))))
    yield* Effect.forkScoped(Effect.forever(Effect.delay(logged, options.interval)))
    return { checkpoint } satisfies WalCheckpointer
  })
