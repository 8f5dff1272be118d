/**
 * `InstanceLiveness` on one SQLite file: each instance holds an exclusive
 * lock on a side database of its own, `<path>.instances/<hash of key>.lock`,
 * with a connection kept in `BEGIN EXCLUSIVE`. The lock is the operating
 * system's (a POSIX record lock SQLite takes on the file): it goes with the
 * process, however it dies. Instances on one file share one machine, so
 * every peer sees it.
 *
 * - `register(key)` creates the side file and locks it; the scope's end
 *   removes the file (a graceful stop is not a death) and releases the lock.
 * - `deadAmong(keys)`: the keys whose side file exists and can be read
 *   (a read needs a shared lock, refused while the owner holds its exclusive
 *   one): one open and one read of a tiny file per key, nothing waits.
 * - `awaitDeath(known)` reads the side files every 25 ms of real time (not
 *   the Clock: it watches the operating system's locks, like a blocking lock
 *   wait would, and moving a test's clock neither speeds nor stalls it).
 *   `node:sqlite` is synchronous, and a probe never waits for a lock.
 *
 * A frozen process (SIGSTOP) keeps its lock: its trees move at lease expiry.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, renameSync, statSync, unlinkSync } from "node:fs"
import { join } from "node:path"
import type { DatabaseSync } from "node:sqlite"
import { StoreError } from "../../src/stores/Errors.ts"
import { InstanceLiveness, type InstanceLivenessShape } from "../../src/stores/InstanceLiveness.ts"
import { SqliteClient } from "./SqliteClient.ts"


/**
 * `node:sqlite`'s `DatabaseSync`, loaded when a side file is first opened
 * rather than imported: on a Node without it, the entry point's one-line
 * Node check speaks first (as `SqliteClient` does).
 */
const openSqlite = (): typeof DatabaseSync => process.getBuiltinModule("node:sqlite").DatabaseSync

/** How often `awaitChange` probes the held locks, in real milliseconds. */
const probeMillis = 25

const failed = (operation: string, reason: string, cause: unknown) =>
  new StoreError({ store: "InstanceLiveness", operation, reason: `${reason}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

/**
 * The liveness signals of the instances over the database file at `path`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (path: string): InstanceLivenessShape => {
  const dir = `${path}.instances`
  const fileOf = (key: string) => join(dir, `${createHash("sha256").update(key).digest("hex").slice(0, 32)}.lock`)

  /** "held" while the owner's lock stands, "free" when it can be read (the owner is gone), "absent" without a file. */
  const probe = (key: string): "held" | "free" | "absent" => probeFile(fileOf(key))
  const probeFile = (file: string): "held" | "free" | "absent" => {
    if (!existsSync(file)) return "absent"
    let db: DatabaseSync
    try {
      db = new (openSqlite())(file, { readOnly: true, timeout: 0 })
    } catch {
      return "absent"
    }
    try {
      db.prepare("SELECT count(*) FROM sqlite_master").get()
      return "free"
    } catch (e) {
      return (e as { errcode?: number }).errcode === 5 || /locked|busy/i.test(String((e as Error).message)) ? "held" : "absent"
    } finally {
      db.close()
    }
  }

  /** Crashed instances' files are kept (so they read as dead) for a day, far past any lease: then removed. */
  const forgetOld = () => {
    try {
      for (const f of readdirSync(dir)) {
        const file = join(dir, f)
        if (!f.endsWith(".lock") || Date.now() - statSync(file).mtimeMs < 86_400_000) continue
        if (probeFile(file) === "free") unlinkSync(file)
      }
    } catch {
      // best effort: another instance may remove the same file
    }
  }

  /** The keys of every side file that can be read (its owner is gone): each file names its key. */
  const deadKeys = (): Array<string> => {
    let files: Array<string>
    try {
      files = readdirSync(dir).filter((f) => f.endsWith(".lock"))
    } catch {
      return []
    }
    const dead: Array<string> = []
    for (const f of files) {
      let db: DatabaseSync
      try {
        db = new (openSqlite())(join(dir, f), { readOnly: true, timeout: 0 })
      } catch {
        continue
      }
      try {
        const row = db.prepare("SELECT key FROM instance LIMIT 1").get() as { key?: unknown } | undefined
        if (typeof row?.key === "string") dead.push(row.key)
      } catch {
        // held (its owner lives), or not written yet
      } finally {
        db.close()
      }
    }
    return dead
  }

  return {
    kind: "SQLite side-file lock",
    register: (key) =>
      path === ":memory:" ? Effect.fail(new StoreError({
        store: "InstanceLiveness",
        operation: "register",
        kind: "Config",
        reason: "a \":memory:\" database belongs to one connection: no other instance shares it, so there is no one to take over from"
      })) : Effect.acquireRelease(
        Effect.try({
          try: () => {
            mkdirSync(dir, { recursive: true })
            const file = fileOf(key)
            // Written and locked under a name no peer reads, then renamed (the lock is the file's, not its
            // name's): a peer never sees the file of a live instance unlocked.
            const pending = `${file}.${process.pid}.new`
            const db = new (openSqlite())(pending, { timeout: 1000 })
            try {
              db.exec("CREATE TABLE IF NOT EXISTS instance (key TEXT NOT NULL)")
              db.prepare("INSERT INTO instance (key) VALUES (?)").run(key)
              db.exec("BEGIN EXCLUSIVE")
              renameSync(pending, file)
            forgetOld()
            } catch (e) {
              db.close()
              throw e
            }
            return { db, file }
          },
          catch: (e) => failed("register", `cannot lock the instance file in ${dir}; check that the directory next to the database is writable`, e)
        }),
        ({ db, file }) =>
          Effect.sync(() => {
            // Removed while still locked: a peer never reads a gracefully stopped instance as dead.
            try {
              unlinkSync(file)
            } catch {
              // already gone
            }
            try {
              db.exec("ROLLBACK")
            } catch {
              // nothing to roll back
            }
            db.close()
          })
      ).pipe(Effect.as({ held: () => true })),
    deadAmong: (keys) => Effect.sync(() => keys.filter((k) => probe(k) === "free")),
    awaitDeath: (known) =>
      Effect.callback<ReadonlyArray<string>>((resume) => {
        const look = () => {
          const dead = deadKeys()
          if (dead.some((k) => !known.includes(k))) {
            clearInterval(timer)
            resume(Effect.succeed(dead))
          }
        }
        const timer = setInterval(look, probeMillis)
        look()
        return Effect.sync(() => clearInterval(timer))
      })
  }
}

/**
 * Provides `InstanceLiveness` next to the database of the `SqliteClient` in context.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<InstanceLiveness, never, SqliteClient> = Layer.effect(
  InstanceLiveness,
  Effect.gen(function*() {
    const client = yield* SqliteClient
    return make(client.path)
  })
)
