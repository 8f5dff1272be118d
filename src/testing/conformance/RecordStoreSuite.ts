/**
 * Conformance suite for {@link RecordStore}.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import type { ExecutionRecord, ExecutionStatus, RecordCursor } from "../../stores/ExecutionRecord.ts"
import { RecordStore, type RecordStoreShape } from "../../stores/RecordStore.ts"
import {
  expectInvalid,
  instancesKey,
  instancesLayer,
  makeIds,
  none,
  now,
  race,
  racersOf,
  some,
  successes,
  type SuiteOptions
} from "./Suite.ts"

const compare = (a: RecordCursor, b: RecordCursor) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0

const keyOf = (r: RecordCursor) => JSON.stringify([r.tenantId, r.executionId])

/**
 * Registers the RecordStore conformance tests (call it at the top level of a
 * vitest file). The Layer must also provide what `RecordStore.make` needs
 * (an `IdGenerator`) to build its service.
 *
 * @category conformance
 * @since 0.1.0
 */
export const recordStoreSuite = (options: SuiteOptions<RecordStore>): void => {
  const Stores = instancesKey<RecordStoreShape>("RecordStore")
  const ids = makeIds()
  const racers = racersOf(options)

  const record = (
    tenantId: string,
    threadId: string,
    at: number,
    over: Partial<ExecutionRecord> = {}
  ): ExecutionRecord => {
    const executionId = over.executionId ?? ids("exec")
    return {
      tenantId,
      executionId,
      threadId,
      rootExecutionId: executionId,
      parentExecutionId: null,
      depth: 1,
      workflowName: "conformance",
      workflowVersion: "1",
      configHash: "hash",
      status: "Running",
      error: null,
      createdAt: at,
      updatedAt: at,
      ...over
    }
  }

  layer(instancesLayer(Stores, options, (ctx) => Context.get(ctx, RecordStore)), { timeout: options.timeout })(
    `RecordStore conformance (${options.name})`,
    (it) => {
      it.effect("ping succeeds on every instance", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          yield* stores.first.ping
          yield* stores.second.ping
        }))

      it.effect("createThread with a given id creates it once; later calls return it unchanged with created: false", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const tenantId = ids("tenant")
          const threadId = ids("thread")
          const t = yield* now
          const made = yield* stores.first.createThread({ tenantId, threadId, ownerId: "alice", now: t })
          assert.isTrue(made.created)
          assert.deepStrictEqual(made.thread, { tenantId, threadId, ownerId: "alice", createdAt: t })
          yield* TestClock.adjust(1_000)
          const again = yield* stores.second.createThread({ tenantId, threadId, ownerId: "bob", now: yield* now })
          assert.isFalse(again.created)
          assert.deepStrictEqual(again.thread, made.thread, "the existing thread, not the second call's values")
          assert.deepStrictEqual(some(yield* stores.second.getThread(tenantId, threadId), "getThread"), made.thread)
        }))

      it.effect(`of ${racers} racers creating the same thread exactly one gets created: true`, () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const tenantId = ids("tenant")
          const threadId = ids("thread")
          const t = yield* now
          const exits = yield* race(racers, (i) => stores.at(i).createThread({ tenantId, threadId, ownerId: `owner${i}`, now: t }))
          const results = successes(exits)
          assert.strictEqual(results.length, racers)
          const created = results.filter((r) => r.created)
          assert.strictEqual(created.length, 1)
          for (const r of results) assert.deepStrictEqual(r.thread, created[0]!.thread, "everyone sees the one thread")
        }))

      it.effect("createThread without an id takes a new one from the IdGenerator; ownerId defaults to null", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const tenantId = ids("tenant")
          const t = yield* now
          const a = yield* stores.first.createThread({ tenantId, now: t })
          const b = yield* stores.second.createThread({ tenantId, now: t })
          assert.isTrue(a.created)
          assert.isTrue(b.created)
          assert.isString(a.thread.threadId)
          assert.isAbove(a.thread.threadId.length, 0)
          assert.notStrictEqual(a.thread.threadId, b.thread.threadId)
          assert.strictEqual(a.thread.ownerId, null)
          assert.strictEqual(a.thread.createdAt, t)
          assert.deepStrictEqual(some(yield* stores.second.getThread(tenantId, a.thread.threadId), "getThread"), a.thread)
        }))

      it.effect("createRecord writes a record once; a second write of the id is refused and changes nothing", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const tenantId = ids("tenant")
          const r = record(tenantId, ids("thread"), yield* now, { configHash: "first", workflowVersion: "7" })
          assert.isTrue(yield* stores.first.createRecord(r))
          assert.isFalse(yield* stores.second.createRecord({ ...r, configHash: "second", status: "Paused" }))
          assert.deepStrictEqual(some(yield* stores.second.getRecord(tenantId, r.executionId), "getRecord"), r)
          none(yield* stores.first.getRecord(tenantId, ids("exec")), "an unknown record")
        }))

      it.effect("setStatus is a compare-and-set: a wrong `from` changes nothing", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const tenantId = ids("tenant")
          const r = record(tenantId, ids("thread"), yield* now)
          assert.isTrue(yield* stores.first.createRecord(r))
          yield* TestClock.adjust(1_000)
          const t = yield* now
          assert.isFalse(yield* stores.second.setStatus({ tenantId, executionId: r.executionId, from: "Paused", to: "Finished", now: t }))
          assert.deepStrictEqual(some(yield* stores.first.getRecord(tenantId, r.executionId), "unchanged"), r)
          assert.isFalse(
            yield* stores.second.setStatus({ tenantId, executionId: ids("exec"), from: "Running", to: "Finished", now: t }),
            "an unknown record"
          )
          assert.isTrue(yield* stores.second.setStatus({ tenantId, executionId: r.executionId, from: "Running", to: "Paused", now: t }))
          assert.deepStrictEqual(some(yield* stores.first.getRecord(tenantId, r.executionId), "paused"), {
            ...r,
            status: "Paused",
            updatedAt: t
          })
          assert.isTrue(
            yield* stores.first.setStatus({ tenantId, executionId: r.executionId, from: "Paused", to: "Failed", now: t, error: "boom" })
          )
          const failed = some(yield* stores.second.getRecord(tenantId, r.executionId), "failed")
          assert.strictEqual(failed.status, "Failed")
          assert.strictEqual(failed.error, "boom")
        }))

      it.effect(`of ${racers} racers moving a record from Running exactly one wins`, () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const tenantId = ids("tenant")
          const r = record(tenantId, ids("thread"), yield* now)
          assert.isTrue(yield* stores.first.createRecord(r))
          yield* TestClock.adjust(1_000)
          const t = yield* now
          const to = (i: number): ExecutionStatus => (i % 3 === 0 ? "Finished" : i % 3 === 1 ? "Failed" : "Cancelled")
          const exits = yield* race(racers, (i) =>
            stores.at(i).setStatus({ tenantId, executionId: r.executionId, from: "Running", to: to(i), now: t, error: `racer ${i}` }))
          const answers = successes(exits)
          assert.strictEqual(answers.length, racers)
          const winners = answers.flatMap((won, i) => (won ? [i] : []))
          assert.strictEqual(winners.length, 1, "exactly one compare-and-set succeeds")
          const winner = winners[0]!
          assert.deepStrictEqual(some(yield* stores.first.getRecord(tenantId, r.executionId), "after the race"), {
            ...r,
            status: to(winner),
            error: `racer ${winner}`,
            updatedAt: t
          })
        }))

      it.effect("findByStatus pages completely, in (tenantId, executionId) order, while rows are added between pages", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const t = yield* now
          const mine = (tenantId: string) => ids.isOurs("tenant", tenantId)
          const tenants = [ids("tenant"), ids("tenant")]
          // present for the whole paging: 7 Running in each of two tenants, plus rows it must not return
          const present: Array<ExecutionRecord> = []
          for (const tenantId of tenants) {
            for (let i = 0; i < 7; i++) {
              const r = record(tenantId, ids("thread"), t + i)
              assert.isTrue(yield* stores.at(i).createRecord(r))
              present.push(r)
            }
            assert.isTrue(yield* stores.first.createRecord(record(tenantId, ids("thread"), t, { status: "Paused" })))
            assert.isTrue(yield* stores.first.createRecord(record(tenantId, ids("thread"), t, { status: "Finished" })))
          }
          const limit = 3
          const seen = new Map<string, number>()
          const ours: Array<ExecutionRecord> = []
          let after: Option.Option<RecordCursor> = Option.none()
          for (let page = 0; ; page++) {
            assert.isBelow(page, 100_000, "paging does not end")
            const rows = yield* stores.at(page).findByStatus("Running", limit, after)
            assert.isAtMost(rows.length, limit, "a page holds at most `limit` records")
            if (rows.length === 0) break
            for (const r of rows) {
              assert.strictEqual(r.status, "Running")
              seen.set(keyOf(r), (seen.get(keyOf(r)) ?? 0) + 1)
              if (mine(r.tenantId)) {
                if (Option.isSome(after) && mine(after.value.tenantId)) {
                  assert.isAbove(compare(r, after.value), 0, "a page starts strictly after its cursor")
                }
                const last = ours[ours.length - 1]
                if (last !== undefined) assert.isAbove(compare(r, last), 0, "records come in (tenantId, executionId) order")
                ours.push(r)
              }
            }
            const last = rows[rows.length - 1]!
            after = Option.some({ tenantId: last.tenantId, executionId: last.executionId })
            if (page < 12) {
              // rows added meanwhile: before the cursor, after it, in a new tenant, and one that is not Running
              const other = stores.at(page + 1)
              yield* other.createRecord(record(tenants[0]!, ids("thread"), t, { executionId: ids("a") }))
              yield* other.createRecord(record(tenants[1]!, ids("thread"), t, { executionId: ids("z") }))
              yield* other.createRecord(record(ids("tenant"), ids("thread"), t))
              yield* other.createRecord(record(tenants[1]!, ids("thread"), t, { executionId: ids("y"), status: "Paused" }))
            }
          }
          for (const r of present) {
            assert.strictEqual(seen.get(keyOf(r)), 1, `record ${r.executionId} present throughout is seen exactly once`)
          }
          for (const [k, n] of seen) assert.strictEqual(n, 1, `record ${k} seen ${n} times`)
        }))

      it.effect("findByStatus answers the first records strictly after the cursor, at most `limit`", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const t = yield* now
          const tenantId = ids("tenant")
          const made: Array<ExecutionRecord> = []
          for (let i = 0; i < 4; i++) {
            const r = record(tenantId, ids("thread"), t, { status: "Paused" })
            assert.isTrue(yield* stores.first.createRecord(r))
            made.push(r)
          }
          const page = yield* stores.second.findByStatus("Paused", 2, Option.some({ tenantId, executionId: "" }))
          assert.deepStrictEqual(page, made.slice(0, 2))
          const next = yield* stores.second.findByStatus("Paused", 2, Option.some(made[1]!))
          assert.deepStrictEqual(next, made.slice(2, 4))
          const fromThird = yield* stores.first.findByStatus("Paused", 1, Option.some(made[2]!))
          assert.deepStrictEqual(fromThird, [made[3]!])
        }))

      it.effect("listByThread answers the thread's records oldest first, and only them", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const t = yield* now
          const tenantId = ids("tenant")
          const threadId = ids("thread")
          const newest = record(tenantId, threadId, t + 2_000)
          const oldest = record(tenantId, threadId, t)
          const middle = record(tenantId, threadId, t + 1_000, { status: "Finished" })
          for (const r of [newest, oldest, middle]) assert.isTrue(yield* stores.first.createRecord(r))
          assert.isTrue(yield* stores.first.createRecord(record(tenantId, ids("thread"), t)))
          assert.isTrue(yield* stores.first.createRecord(record(ids("tenant"), threadId, t)))
          assert.deepStrictEqual(yield* stores.second.listByThread(tenantId, threadId), [oldest, middle, newest])
          assert.deepStrictEqual(yield* stores.second.listByThread(tenantId, ids("thread")), [])
        }))

      it.effect("savePauseAnswer keeps the first answer of a pause; listPauseAnswers answers the execution's", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const t = yield* now
          const tenantId = ids("tenant")
          const executionId = ids("exec")
          const [p1, p2] = [ids("pause"), ids("pause")]
          yield* stores.first.savePauseAnswer({ tenantId, executionId, pauseId: p1, answeredBy: "instanceA", answeredAt: t })
          yield* stores.second.savePauseAnswer({ tenantId, executionId, pauseId: p1, answeredBy: "instanceB", answeredAt: t + 1 })
          yield* stores.second.savePauseAnswer({ tenantId, executionId, pauseId: p2, answeredBy: "instanceB", answeredAt: t + 5 })
          yield* stores.second.savePauseAnswer({ tenantId, executionId: ids("exec"), pauseId: p1, answeredBy: "instanceC", answeredAt: t })
          const answers = [...(yield* stores.first.listPauseAnswers(tenantId, executionId))]
            .sort((a, b) => (a.pauseId < b.pauseId ? -1 : 1))
          assert.deepStrictEqual(answers, [
            { tenantId, executionId, pauseId: p1, answeredBy: "instanceA", answeredAt: t },
            { tenantId, executionId, pauseId: p2, answeredBy: "instanceB", answeredAt: t + 5 }
          ])
        }))

      it.effect("every read is isolated by tenant: another tenant sees nothing and changes nothing", () =>
        Effect.gen(function*() {
          const stores = yield* Stores
          const t = yield* now
          const tenantId = ids("tenant")
          const other = ids("tenant")
          const threadId = ids("thread")
          yield* stores.first.createThread({ tenantId, threadId, now: t })
          const r = record(tenantId, threadId, t)
          assert.isTrue(yield* stores.first.createRecord(r))
          const pauseId = ids("pause")
          yield* stores.first.savePauseAnswer({ tenantId, executionId: r.executionId, pauseId, answeredBy: "a", answeredAt: t })
          const s = stores.second
          none(yield* s.getThread(other, threadId), "getThread, another tenant")
          none(yield* s.getRecord(other, r.executionId), "getRecord, another tenant")
          assert.deepStrictEqual(yield* s.listByThread(other, threadId), [])
          assert.deepStrictEqual(yield* s.listPauseAnswers(other, r.executionId), [])
          assert.isFalse(yield* s.setStatus({ tenantId: other, executionId: r.executionId, from: "Running", to: "Failed", now: t }))
          // the same ids under another tenant are other rows
          const theirs = yield* s.createThread({ tenantId: other, threadId, ownerId: "eve", now: t })
          assert.isTrue(theirs.created, "the same thread id is free under another tenant")
          assert.isTrue(yield* s.createRecord({ ...r, tenantId: other }), "the same execution id is free under another tenant")
          assert.deepStrictEqual(some(yield* s.getRecord(tenantId, r.executionId), "the first tenant's record"), r)
          assert.strictEqual(some(yield* s.getThread(tenantId, threadId), "the first tenant's thread").ownerId, null)
          assert.strictEqual((yield* s.listPauseAnswers(tenantId, r.executionId)).length, 1)
        }))

      it.effect("bad input fails with InvalidInputError naming the argument, and writes nothing", () =>
        Effect.gen(function*() {
          const s = (yield* Stores).first
          const t = yield* now
          const tenantId = ids("tenant")
          const threadId = ids("thread")
          yield* expectInvalid(s.createThread({ tenantId: "", threadId, now: t }), "tenantId", "createThread, empty tenant")
          yield* expectInvalid(s.createThread({ tenantId, threadId: "", now: t }), "threadId", "createThread, empty thread id")
          yield* expectInvalid(s.createThread({ tenantId, threadId, ownerId: "", now: t }), "ownerId", "createThread, empty owner")
          yield* expectInvalid(s.createThread({ tenantId, threadId, now: Number.NaN }), "now", "createThread, now NaN")
          none(yield* s.getThread(tenantId, threadId), "no bad createThread wrote the thread")

          const r = record(tenantId, threadId, t)
          const bad: Array<[Partial<Record<keyof ExecutionRecord, unknown>>, string]> = [
            [{ tenantId: "" }, "tenantId"],
            [{ executionId: "" }, "executionId"],
            [{ threadId: "" }, "threadId"],
            [{ rootExecutionId: "" }, "rootExecutionId"],
            [{ workflowName: "" }, "workflowName"],
            [{ depth: 0 }, "depth"],
            [{ depth: 1.5 }, "depth"],
            [{ status: "Sleeping" }, "status"],
            [{ createdAt: Number.NaN }, "createdAt"],
            [{ updatedAt: -1 }, "updatedAt"]
          ]
          for (const [over, field] of bad) {
            yield* expectInvalid(s.createRecord({ ...r, ...over } as ExecutionRecord), field, `createRecord, ${JSON.stringify(over)}`)
          }
          none(yield* s.getRecord(tenantId, r.executionId), "no bad createRecord wrote the record")

          assert.isTrue(yield* s.createRecord(r))
          const set = { tenantId, executionId: r.executionId, from: "Running" as const, to: "Finished" as const, now: t }
          yield* expectInvalid(s.setStatus({ ...set, tenantId: "" }), "tenantId", "setStatus, empty tenant")
          yield* expectInvalid(s.setStatus({ ...set, executionId: "" }), "executionId", "setStatus, empty id")
          yield* expectInvalid(s.setStatus({ ...set, from: "Nope" as ExecutionStatus }), "from", "setStatus, bad from")
          yield* expectInvalid(s.setStatus({ ...set, to: "Nope" as ExecutionStatus }), "to", "setStatus, bad to")
          yield* expectInvalid(s.setStatus({ ...set, now: Number.NaN }), "now", "setStatus, now NaN")
          assert.deepStrictEqual(some(yield* s.getRecord(tenantId, r.executionId), "record"), r, "no bad setStatus changed it")

          yield* expectInvalid(s.findByStatus("Nope" as ExecutionStatus, 10, Option.none()), "status", "findByStatus, bad status")
          for (const limit of [0, -1, 2.5, Number.NaN]) {
            yield* expectInvalid(s.findByStatus("Running", limit, Option.none()), "limit", `findByStatus, limit ${limit}`)
          }
          yield* expectInvalid(s.getThread("", threadId), "tenantId", "getThread, empty tenant")
          yield* expectInvalid(s.getThread(tenantId, ""), "threadId", "getThread, empty thread")
          yield* expectInvalid(s.getRecord(tenantId, ""), "executionId", "getRecord, empty id")
          yield* expectInvalid(s.listByThread("", threadId), "tenantId", "listByThread, empty tenant")
          yield* expectInvalid(s.listByThread(tenantId, ""), "threadId", "listByThread, empty thread")

          const answer = { tenantId, executionId: r.executionId, pauseId: ids("pause"), answeredBy: "a", answeredAt: t }
          yield* expectInvalid(s.savePauseAnswer({ ...answer, pauseId: "" }), "pauseId", "savePauseAnswer, empty pause")
          yield* expectInvalid(s.savePauseAnswer({ ...answer, answeredBy: "" }), "answeredBy", "savePauseAnswer, empty answeredBy")
          yield* expectInvalid(s.savePauseAnswer({ ...answer, answeredAt: Number.NaN }), "answeredAt", "savePauseAnswer, NaN time")
          yield* expectInvalid(s.savePauseAnswer({ ...answer, tenantId: "" }), "tenantId", "savePauseAnswer, empty tenant")
          yield* expectInvalid(s.listPauseAnswers(tenantId, ""), "executionId", "listPauseAnswers, empty id")
          assert.deepStrictEqual(yield* s.listPauseAnswers(tenantId, r.executionId), [], "no bad savePauseAnswer wrote an answer")
        }))
    }
  )
}
