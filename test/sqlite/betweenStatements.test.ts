/**
 * A store call that runs two statements outside a transaction (an insert that
 * finds a kept row, then the read of that row) while another instance deletes
 * the row between them, on a real SQLite file with a second connection. The
 * second connection's delete is run just before the store's read statement.
 * Once: the call tries again and succeeds. Every time: the call ends with a
 * retryable `StoreError` (Busy), never a defect.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { DatabaseSync, StatementSync } from "node:sqlite"
import { afterEach } from "vitest"
import { SqliteStores } from "../../layers/sqlite/index.ts"
import { RequestStore } from "../../src/stores/RequestStore.ts"
import { ScheduleStore } from "../../src/stores/ScheduleStore.ts"
import { tempDb } from "./tmp.ts"

const now = 1_000_000

/** Wraps the statements of every connection in the process; undone after each test. */
const beforeStatements = (hook: (text: string) => void) => {
  const original = StatementSync.prototype.all
  StatementSync.prototype.all = function(this: StatementSync, ...args: Array<any>) {
    hook(this.sourceSQL.replace(/\s+/g, " ").trimStart())
    return original.apply(this, args as any)
  } as typeof original
  restore.push(() => {
    StatementSync.prototype.all = original
  })
}
const restore: Array<() => void> = []
afterEach(() => {
  for (const undo of restore.splice(0)) undo()
})

/**
 * Another instance (a second connection to the file) that deletes the row
 * `where` of `table` just before the store reads it (a statement starting
 * with `read`): `times` times. With `flip`, it also puts the row back just
 * before each of the store's inserts (a statement starting with `insert`),
 * so that every insert finds it kept and every read finds it gone.
 */
const otherInstance = (path: string, table: string, where: string, read: string, options: { times?: number; insert?: string } = {}) => {
  const other = new DatabaseSync(path)
  restore.push(() => other.close())
  const saved = other.prepare(`SELECT * FROM ${table} WHERE ${where}`).all()[0]!
  const columns = Object.keys(saved)
  const putBack = other.prepare(`INSERT OR IGNORE INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`)
  let left = options.times ?? Infinity
  const seen = { inserts: 0 }
  beforeStatements((text) => {
    if (options.insert !== undefined && text.startsWith(options.insert)) {
      seen.inserts++
      putBack.run(...columns.map((c) => saved[c] as any))
    }
    if (left > 0 && text.startsWith(read)) {
      left--
      other.exec(`DELETE FROM ${table} WHERE ${where}`)
    }
  })
  return seen
}

const busyOf = <A, E>(exit: Exit.Exit<A, E>) => {
  assert.isTrue(Exit.isFailure(exit), "the call failed")
  if (!Exit.isFailure(exit)) return
  assert.isFalse(Cause.hasDies(exit.cause), `no defect: ${Cause.pretty(exit.cause)}`)
  const error = Cause.findErrorOption(exit.cause)
  assert.isTrue(error._tag === "Some", "a typed failure")
  const e = (error as any).value
  assert.strictEqual(e._tag, "StoreError")
  assert.strictEqual(e.kind, "Busy")
  assert.isTrue(e.isRetryable)
  assert.match(e.message, /nothing was (written|claimed)/)
}

describe("a kept row deleted by another connection between a store's two statements", () => {
  const schedule = { tenantId: "t", scheduleId: "s1", definition: { workflow: "report" }, paused: false, nextFireAt: now + 60_000, now }
  const readSchedule = "SELECT tenant_id, schedule_id"

  it.effect("ScheduleStore.create: once, it inserts again and creates the schedule", () => {
    const path = tempDb("between-schedule-once")
    return Effect.gen(function*() {
      const store = yield* ScheduleStore
      assert.isTrue((yield* store.create(schedule)).created)
      otherInstance(path, "baton_schedules", "schedule_id = 's1'", readSchedule, { times: 1 })
      const again = yield* store.create({ ...schedule, nextFireAt: now + 120_000 })
      assert.isTrue(again.created, "the id was free once the kept schedule went")
      assert.strictEqual(again.schedule.nextFireAt, now + 120_000)
    }).pipe(Effect.provide(SqliteStores.layerScheduleStore({ path })))
  })

  it.effect("ScheduleStore.create: every time, a retryable Busy StoreError, not a defect", () => {
    const path = tempDb("between-schedule-always")
    return Effect.gen(function*() {
      const store = yield* ScheduleStore
      assert.isTrue((yield* store.create(schedule)).created)
      const seen = otherInstance(path, "baton_schedules", "schedule_id = 's1'", readSchedule, { insert: "INSERT INTO \"baton_schedules\"" })
      busyOf(yield* Effect.exit(store.create({ ...schedule, nextFireAt: now + 120_000 })))
      assert.strictEqual(seen.inserts, 5, "it tried five times")
      restore.splice(0).forEach((undo) => undo())
      const kept = yield* store.get("t", "s1")
      // The other instance's last move was a delete: no row of this call's is left.
      assert.strictEqual(kept._tag, "None", "nothing of this call was written")
    }).pipe(Effect.provide(SqliteStores.layerScheduleStore({ path })))
  })

  const claim = { tenantId: "t", requestKey: "k1", fingerprint: "f", handle: { executionId: "e1" }, now, ttlMillis: 60_000 }
  const readRequest = "SELECT tenant_id, request_key"

  it.effect("RequestStore.claim: once, it claims the freed key", () => {
    const path = tempDb("between-request-once")
    return Effect.gen(function*() {
      const store = yield* RequestStore
      assert.strictEqual((yield* store.claim(claim))._tag, "Claimed")
      otherInstance(path, "baton_requests", "request_key = 'k1'", readRequest, { times: 1 })
      assert.strictEqual((yield* store.claim(claim))._tag, "Claimed")
    }).pipe(Effect.provide(SqliteStores.layerRequestStore({ path })))
  })

  it.effect("RequestStore.claim: every time, a retryable Busy StoreError, not a defect", () => {
    const path = tempDb("between-request-always")
    return Effect.gen(function*() {
      const store = yield* RequestStore
      assert.strictEqual((yield* store.claim(claim))._tag, "Claimed")
      const seen = otherInstance(path, "baton_requests", "request_key = 'k1'", readRequest, { insert: "INSERT INTO \"baton_requests\"" })
      busyOf(yield* Effect.exit(store.claim({ ...claim, fingerprint: "g", handle: { executionId: "e2" } })))
      assert.strictEqual(seen.inserts, 5, "it tried five times")
      restore.splice(0).forEach((undo) => undo())
      const kept = yield* store.get("t", "k1", now)
      assert.strictEqual(kept._tag, "None", "nothing was claimed by this call")
    }).pipe(Effect.provide(SqliteStores.layerRequestStore({ path })))
  })
})
