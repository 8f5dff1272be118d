/**
 * Lease-release wake-ups between processes over one SQLite file.
 *
 * In process, on a TestClock: each "process" has a hub of its own (as two
 * processes would), so only a row written to the file and read by the other's
 * watcher can wake the other's waiters.
 *
 * With two real processes: a graceful close on one hands its tree to the
 * other at once — the other's sweep is due only after a minute and the lease
 * would expire after 30 s, so the wake-up is the only thing that can move it
 * within the test's bound (with `wakeups: off` the same test times out).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { SqliteStores, SqliteWakeups } from "../../layers/sqlite/index.ts"
import { LeaseWakeups, type LeaseWakeupsShape, makeHub } from "../../src/stores/LeaseWakeups.ts"
import { tempDb } from "../sqlite/tmp.ts"
import { killAll, start } from "./processes.ts"
import { afterAll } from "vitest"

afterAll(killAll)

const path = tempDb("wakeups")

/** One "process": its own hub, wrapped by the SQLite wake-ups on the shared file. */
const buildProcess = (hub: LeaseWakeupsShape, options: SqliteWakeups.SqliteWakeupsOptions = {}) =>
  Effect.map(
    Layer.build(SqliteWakeups.layer({ path, busyTimeout: 0, ...options }).pipe(Layer.provide(Layer.succeed(LeaseWakeups, hub)))),
    (context) => Context.get(context, LeaseWakeups)
  )

/** Reads the shared file on a connection of the test's own. */
const tables = (sql: string) => {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return db.prepare(sql).all() as Array<Record<string, unknown>>
  } finally {
    db.close()
  }
}

const waiting = (hub: LeaseWakeupsShape, tenant: string, root: string) => Effect.forkChild(hub.next(tenant, root), { startImmediately: true })

/** Advances the TestClock a poll at a time until the fiber is done (at most `polls` polls). */
const pollUntilDone = (fiber: Fiber.Fiber<void>, polls: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < polls && fiber.pollUnsafe() === undefined; i++) {
      yield* TestClock.adjust("25 millis")
      yield* Effect.yieldNow
    }
    return fiber.pollUnsafe() !== undefined
  })

describe("SqliteWakeups", () => {
  it.effect("a release on one process wakes the other's waiter of that tree within a poll; its own row is skipped", () =>
    Effect.gen(function*() {
      const hubA = makeHub()
      const hubB = makeHub()
      const a = yield* buildProcess(hubA)
      const b = yield* buildProcess(hubB)
      const localA = yield* waiting(hubA, "t", "r1")
      const remoteB = yield* waiting(hubB, "t", "r1")
      const otherB = yield* waiting(hubB, "t", "r2")
      a.released("t", "r1")
      assert.isDefined(localA.pollUnsafe(), "A's own waiter is woken at once, in process")
      assert.isTrue(yield* pollUntilDone(remoteB, 20), "B's waiter of r1 is woken through the file")
      assert.isUndefined(otherB.pollUnsafe(), "B's waiter of another tree is not")

      // A's own row of r1 must not wake A again; B's release of r2 wakes A's waiter of r2.
      const againA = yield* waiting(hubA, "t", "r1")
      const otherA = yield* waiting(hubA, "t", "r2")
      b.released("t", "r2")
      assert.isTrue(yield* pollUntilDone(otherA, 20), "A's waiter of r2 is woken through the file")
      assert.isUndefined(againA.pollUnsafe(), "A skipped the row it wrote itself")
      yield* Fiber.interrupt(againA)
    }).pipe(Effect.scoped))

  it.effect("the table keeps only its last `keep` rows", () =>
    Effect.gen(function*() {
      const a = yield* buildProcess(makeHub(), { keep: 3, tablePrefix: "keep_" })
      const hubB = makeHub()
      yield* buildProcess(hubB, { keep: 3, tablePrefix: "keep_" })
      for (let i = 0; i < 10; i++) a.released("t", `k${i}`)
      const last = yield* waiting(hubB, "t", "k9")
      assert.isTrue(yield* pollUntilDone(last, 20))
      assert.isAtMost(Number(tables(`SELECT count(*) AS n FROM "keep_wakeups"`)[0]!["n"]), 3)
    }).pipe(Effect.scoped))

  it.effect("config that cannot work is refused at build, naming the field", () =>
    Effect.gen(function*() {
      const zero = yield* Effect.flip(buildProcess(makeHub(), { pollInterval: 0 }))
      assert.strictEqual(zero._tag, "BatonConfigError")
      assert.strictEqual((zero as { field?: string }).field, "pollInterval")
      const keep = yield* Effect.flip(buildProcess(makeHub(), { keep: 0 }))
      assert.strictEqual((keep as { field?: string }).field, "keep")
    }).pipe(Effect.scoped))

  it.effect("SqliteStores.layer includes the wake-ups with `wakeups: true` (and not by default)", () =>
    Effect.gen(function*() {
      const hub = makeHub()
      const withWakeups = yield* Layer.build(SqliteStores.layer({ path, busyTimeout: 0, wakeups: true }).pipe(Layer.provide(Layer.succeed(LeaseWakeups, hub))))
      assert.notStrictEqual(Context.get(withWakeups, LeaseWakeups), hub, "the hub is wrapped")
      yield* Layer.build(SqliteStores.layer({ path, busyTimeout: 0, tablePrefix: "off_" }))
      assert.deepStrictEqual(tables(`SELECT name FROM sqlite_master WHERE name = 'off_wakeups'`), [], "no release table without wake-ups")
    }).pipe(Effect.scoped))
})

const handoverWorker = fileURLToPath(new URL("./handoverWorker.ts", import.meta.url))

describe("SQLite handover between real processes", () => {
  it("a graceful close on one process hands its tree to the other within a poll, not at the next sweep", async () => {
    const file = tempDb("handover")
    // Lease 30 s, sweep every minute: neither an expiry nor a sweep can move the tree within the test's bound.
    const args = (id: string) => ["sqlite", file, id, "30000", "60000"]
    const a = start(handoverWorker, args("proc-a"), "proc-a")
    await a.until((l) => l.endsWith(" ready"))
    const b = start(handoverWorker, args("proc-b"), "proc-b")
    await b.until((l) => l.endsWith(" ready"))
    a.send("execute h-1")
    await a.until((l) => l.startsWith("proc-a step long h-1 "))
    a.send("close 300")
    await a.until((l) => l.startsWith("proc-a closed "))
    const taken = await b.until((l) => l.startsWith("proc-b step long h-1 "))
    assert.match(taken, /^proc-b step long h-1 /, "the other process continued the tree")
    a.send("exit")
    assert.strictEqual(await a.exited, 0)
    b.send("close 300")
    b.send("exit")
    assert.strictEqual(await b.exited, 0)
  }, 60_000)
})
