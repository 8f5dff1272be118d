/**
 * Conformance suite for {@link RecordStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { type ExecutionRecord, type ExecutionStatus, newRunning, type RecordCursor, type StartRootResult } from "../../stores/ExecutionRecord.ts"
import type { Lease } from "../../stores/Lease.ts"
import type { LeaseStore } from "../../stores/LeaseStore.ts"
import { maxErrorTextLength } from "../../stores/internal/storable.ts"
import { RecordStore, type RecordStoreShape } from "../../stores/RecordStore.ts"
import {
  badIds,
  expectInvalid,
  expectTag,
  failures,
  longestId,
  none,
  now,
  race,
  some,
  successes,
  type SuiteOptions,
  unicodeTwins
} from "./Suite.ts"
import { defineLeasedSuite, type WithLeases } from "./SuiteDefinition.ts"

const compare = (a: RecordCursor, b: RecordCursor) =>
  a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0

const keyOf = (r: RecordCursor) => JSON.stringify([r.tenantId, r.executionId])

const ttl = 30_000

/** Newest first, as `list` answers. */
const newestFirst = (a: ExecutionRecord, b: ExecutionRecord) =>
  b.createdAt - a.createdAt || (a.executionId < b.executionId ? 1 : a.executionId > b.executionId ? -1 : 0)

/** A record store, with the lease store whose leases its fenced transitions check. */
type Both = WithLeases<RecordStoreShape>

/**
 * Registers the RecordStore conformance tests (call it at the top level of a
 * vitest file). The Layer must also provide what `RecordStore.make` needs
 * (an `IdGenerator`) to build its service, and the `LeaseStore` over the
 * same database — the leases `setStatusFenced` checks.
 *
 * @category conformance
 * @since 0.1.0
 */
export const recordStoreSuite = (options: SuiteOptions<RecordStore | LeaseStore>): void => {
  const { Stores, ids, racers, register } = defineLeasedSuite(options, "RecordStore", RecordStore)

  const record = (
    tenantId: string,
    threadId: string,
    at: number,
    over: Partial<ExecutionRecord> = {}
  ): ExecutionRecord => {
    const executionId = over.executionId ?? ids("exec")
    return { ...newRunning({ tenantId, executionId, threadId, workflow: { name: "conformance", version: "1", configHash: "hash" }, now: at }), ...over }
  }

  const started: StartRootResult = { _tag: "Started" }

  /** A root of a fresh thread of `tenantId`, started, under a lease `holder` acquired first (as the runtime does). */
  const leasedRoot = Effect.fnUntraced(function*(s: Both, tenantId: string, holder: string) {
    const t = yield* now
    const r = record(tenantId, ids("thread"), t)
    const lease = some(yield* s.leases.acquire(tenantId, r.executionId, holder, ttl, t), "acquire the new root's lease")
    assert.deepStrictEqual(yield* s.startRoot(r), started)
    return { r, lease }
  })

  /** A Running record of a fresh tenant and thread, written by the first store; then the Clock moves `after` ms on (`t`). */
  const recorded = Effect.fnUntraced(function*(after: number) {
    const stores = yield* Stores
    const tenantId = ids("tenant")
    const r = record(tenantId, ids("thread"), yield* now)
    assert.isTrue(yield* stores.first.createRecord(r))
    if (after > 0) yield* TestClock.adjust(after)
    return { r, stores, t: yield* now, tenantId }
  })

  register((test, it) => {
    test("createThread with a given id creates it once; later calls return it unchanged with created: false", function*(stores) {
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
    })

    test(`of ${racers} racers creating the same thread exactly one gets created: true`, function*(stores) {
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const t = yield* now
      const exits = yield* race(racers, (i) => stores.at(i).createThread({ tenantId, threadId, ownerId: `owner${i}`, now: t }))
      const results = successes(exits)
      assert.strictEqual(results.length, racers)
      const created = results.filter((r) => r.created)
      assert.strictEqual(created.length, 1)
      for (const r of results) assert.deepStrictEqual(r.thread, created[0]!.thread, "everyone sees the one thread")
    })

    test("createThread without an id takes a new one from the IdGenerator; ownerId defaults to null", function*(stores) {
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
    })

    test("createRecord writes a record once; a second write of the id is refused and changes nothing", function*(stores) {
      const tenantId = ids("tenant")
      const r = record(tenantId, ids("thread"), yield* now, { configHash: "first", workflowVersion: "7" })
      assert.isTrue(yield* stores.first.createRecord(r))
      assert.isFalse(yield* stores.second.createRecord({ ...r, configHash: "second", status: "Paused" }))
      assert.deepStrictEqual(some(yield* stores.second.getRecord(tenantId, r.executionId), "getRecord"), r)
      none(yield* stores.first.getRecord(tenantId, ids("exec")), "an unknown record")
    })

    it.effect("setStatus is a compare-and-set: a wrong `from` changes nothing", () =>
      Effect.gen(function*() {
        const { r, stores, t, tenantId } = yield* recorded(1_000)
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

    test("error text is kept storable: NUL and lone surrogates escaped, a long text cut to a bound", function*(stores) {
      const tenantId = ids("tenant")
      const t = yield* now
      const written = ["nul\u0000byte", "lone \ud800 high", "lone \udc00 low", "x".repeat(100_000)]
      const kept = ["nul\\u0000byte", "lone \\ud800 high", "lone \\udc00 low"]
      for (const [i, error] of written.entries()) {
        const r = record(tenantId, ids("thread"), t)
        assert.isTrue(yield* stores.first.createRecord(r))
        assert.isTrue(yield* stores.first.setStatus({ tenantId, executionId: r.executionId, from: "Running", to: "Failed", now: t, error }))
        const stored = some(yield* stores.second.getRecord(tenantId, r.executionId), "failed").error ?? ""
        if (i < kept.length) assert.strictEqual(stored, kept[i])
        else {
          assert.isAtMost(stored.length, maxErrorTextLength)
          assert.match(stored, /^x+… \[\d+ more characters cut\]$/)
        }
      }
    })

    it.effect("noteRecoveryFailure counts a failed recovery of a Running record once per count; the record keeps it", () =>
      Effect.gen(function*() {
        const { r, stores, t, tenantId } = yield* recorded(1_000)
        const note = (i: number, failures: number, error: string) =>
          stores.at(i).noteRecoveryFailure({ tenantId, executionId: r.executionId, failures, retryAt: t + 2_000, error, now: t })
        const exits = yield* race(racers, (i) => note(i, 0, `racer ${i}`))
        const winners = successes(exits).flatMap((won, i) => (won ? [i] : []))
        assert.strictEqual(winners.length, 1, "one racer counts the failure")
        assert.deepStrictEqual(some(yield* stores.second.getRecord(tenantId, r.executionId), "counted"), {
          ...r,
          error: `racer ${winners[0]}`,
          updatedAt: t,
          recoveryFailures: 1,
          recoverAfter: t + 2_000
        })
        assert.isFalse(yield* note(0, 0, "stale count"), "a stale count changes nothing")
        assert.isTrue(yield* note(1, 1, "nul\u0000"))
        const twice = some(yield* stores.first.getRecord(tenantId, r.executionId), "counted twice")
        assert.strictEqual(twice.recoveryFailures, 2)
        assert.strictEqual(twice.error, "nul\\u0000", "the cause is kept storable")
        assert.isTrue(yield* stores.first.setStatus({ tenantId, executionId: r.executionId, from: "Running", to: "Failed", now: t, error: "gave up" }))
        assert.isFalse(yield* note(0, 2, "not running"), "only a Running record counts")
        yield* expectInvalid(stores.first.noteRecoveryFailure({ tenantId, executionId: r.executionId, failures: -1, retryAt: t, error: "", now: t }), "failures", "a negative count")
      }))

    it.effect("a move on (not to Failed, not Running to Running) clears the count of failed recoveries and their cause", () =>
      Effect.gen(function*() {
        const { r, stores, t, tenantId } = yield* recorded(0)
        const get = Effect.map(stores.second.getRecord(tenantId, r.executionId), (o) => some(o, "the record"))
        const move = (from: ExecutionStatus, to: ExecutionStatus, error?: string) =>
          stores.first.setStatus({ tenantId, executionId: r.executionId, from, to, now: t, error })
        const note = (failures: number) =>
          stores.first.noteRecoveryFailure({ tenantId, executionId: r.executionId, failures, retryAt: t + 2_000, error: `cause ${failures}`, now: t })
        assert.isTrue(yield* note(0))
        assert.isTrue(yield* move("Running", "Running"), "a pass taking the tree up again")
        assert.strictEqual((yield* get).recoveryFailures, 1, "Running to Running keeps the count")
        assert.isTrue(yield* move("Running", "Paused"))
        const paused = yield* get
        assert.deepStrictEqual([paused.recoveryFailures, paused.recoverAfter, paused.error], [undefined, undefined, null], "cleared")
        assert.isTrue(yield* move("Paused", "Running"))
        assert.isTrue(yield* note(0), "counting starts again from 0")
        assert.isTrue(yield* note(1))
        assert.isTrue(yield* move("Running", "Failed", "gave up"))
        const failed = yield* get
        assert.deepStrictEqual([failed.recoveryFailures, failed.error], [2, "gave up"], "a move to Failed keeps the count")
      }))

    it.effect(`of ${racers} racers moving a record from Running exactly one wins`, () =>
      Effect.gen(function*() {
        const { r, stores, t, tenantId } = yield* recorded(1_000)
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

    test("startRoot records a root on an idle thread; another start answers ThreadBusy with the active root until it settles", function*(stores) {
      const t = yield* now
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const first = record(tenantId, threadId, t)
      assert.deepStrictEqual(yield* stores.first.startRoot(first), started)
      assert.deepStrictEqual(some(yield* stores.second.getRecord(tenantId, first.executionId), "the started root"), first)
      assert.deepStrictEqual(some(yield* stores.second.findActiveRoot(tenantId, threadId), "the active root"), first)

      const second = record(tenantId, threadId, t)
      assert.deepStrictEqual(yield* stores.second.startRoot(second), { _tag: "ThreadBusy", active: first })
      none(yield* stores.first.getRecord(tenantId, second.executionId), "a refused start writes nothing")
      assert.deepStrictEqual(yield* stores.first.startRoot(first), { _tag: "IdTaken" }, "the same id again")

      // Paused is active too
      assert.isTrue(yield* stores.first.setStatus({ tenantId, executionId: first.executionId, from: "Running", to: "Paused", now: t }))
      const paused = some(yield* stores.first.getRecord(tenantId, first.executionId), "paused")
      assert.deepStrictEqual(yield* stores.second.startRoot(record(tenantId, threadId, t)), { _tag: "ThreadBusy", active: paused })

      // a child running on the thread, a settled root and another tenant's thread of the same id do not count
      const child = record(tenantId, threadId, t, { rootExecutionId: first.executionId, parentExecutionId: first.executionId, depth: 2 })
      assert.isTrue(yield* stores.first.createRecord(child))
      const theirs = record(ids("tenant"), threadId, t)
      assert.deepStrictEqual(yield* stores.second.startRoot(theirs), started, "another tenant's thread is another thread")
      assert.isTrue(yield* stores.first.setStatus({ tenantId, executionId: first.executionId, from: "Paused", to: "Finished", now: t }))
      none(yield* stores.second.findActiveRoot(tenantId, threadId), "no active root once it finished")
      const next = record(tenantId, threadId, t + 1)
      assert.deepStrictEqual(yield* stores.second.startRoot(next), started, "the thread is idle again")
      assert.deepStrictEqual(some(yield* stores.first.findActiveRoot(tenantId, threadId), "the new active root"), next)
    })

    test(`of ${racers} racers starting a root on one idle thread exactly one starts; the others answer ThreadBusy naming it`, function*(stores) {
      const t = yield* now
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      yield* stores.first.createThread({ tenantId, threadId, now: t })
      const roots = Array.from({ length: racers }, () => record(tenantId, threadId, t))
      const exits = yield* race(racers, (i) => stores.at(i).startRoot(roots[i]!))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers, "every start answers")
      const winners = answers.flatMap((a, i) => (a._tag === "Started" ? [roots[i]!] : []))
      assert.strictEqual(winners.length, 1, "exactly one root starts")
      const winner = winners[0]!
      for (const a of answers) {
        if (a._tag !== "Started") assert.deepStrictEqual(a, { _tag: "ThreadBusy", active: winner })
      }
      assert.deepStrictEqual(yield* stores.second.listByThread(tenantId, threadId), [winner], "only the winner was written")
    })

    test("createRecord keeps one active root per thread as startRoot does: a second one is refused (false)", function*(stores) {
      const t = yield* now
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const running = record(tenantId, threadId, t)
      assert.isTrue(yield* stores.first.createRecord(running))
      assert.isFalse(yield* stores.second.createRecord(record(tenantId, threadId, t)), "a second Running root")
      assert.isFalse(yield* stores.second.createRecord(record(tenantId, threadId, t, { status: "Paused" })), "a Paused root")
      const settled = record(tenantId, threadId, t, { status: "Cancelled" })
      assert.isTrue(yield* stores.second.createRecord(settled), "a settled root is not active")
      assert.deepStrictEqual(yield* stores.first.startRoot(record(tenantId, threadId, t)), { _tag: "ThreadBusy", active: running })
      assert.deepStrictEqual((yield* stores.first.listByThread(tenantId, threadId)).map((r) => r.executionId).sort(), [
        running.executionId,
        settled.executionId
      ].sort())
    })

    test("setStatusFenced moves the record under the current lease; a stale holder is refused with LeaseLostError and changes nothing", function*(stores) {
      const tenantId = ids("tenant")
      const { lease: a, r } = yield* leasedRoot(stores.first, tenantId, ids("holderA"))
      const move = (s: Both, lease: Lease, from: ExecutionStatus, to: ExecutionStatus) =>
        Effect.flatMap(now, (t) => s.setStatusFenced({ tenantId, executionId: r.executionId, from, to, now: t, lease }))
      const statusNow = Effect.map(stores.first.getRecord(tenantId, r.executionId), (o) => some(o, "the record").status)
      assert.isTrue(yield* move(stores.second, a, "Running", "Paused"))
      assert.isFalse(yield* move(stores.first, a, "Running", "Finished"), "still a compare-and-set")
      assert.strictEqual(yield* statusNow, "Paused")

      yield* TestClock.adjust(ttl)
      const expired = yield* expectTag(move(stores.first, a, "Paused", "Running"), "LeaseLostError", "an expired lease")
      assert.strictEqual(expired.epoch, a.epoch)
      assert.strictEqual(yield* statusNow, "Paused", "refused: unchanged")

      const b = some(yield* stores.second.leases.acquire(tenantId, r.executionId, ids("holderB"), ttl, yield* now), "take over")
      assert.strictEqual(b.epoch, a.epoch + 1)
      yield* expectTag(move(stores.first, a, "Paused", "Running"), "LeaseLostError", "the old holder after a takeover")
      yield* expectTag(move(stores.second, { ...a, epoch: b.epoch }, "Paused", "Running"), "LeaseLostError", "the old holder, new epoch")
      yield* expectTag(move(stores.second, { ...b, holder: a.holder }, "Paused", "Running"), "LeaseLostError", "another holder")
      assert.strictEqual(yield* statusNow, "Paused", "no stale transition landed")
      assert.isTrue(yield* move(stores.first, b, "Paused", "Running"), "the new holder moves it")

      const other = yield* leasedRoot(stores.first, tenantId, b.holder)
      assert.isFalse(yield* move(stores.second, other.lease, "Running", "Finished"), "a lease of another tree moves nothing")
      assert.strictEqual(yield* statusNow, "Running")

      assert.isTrue(yield* stores.first.leases.release(b))
      yield* expectTag(move(stores.second, b, "Running", "Finished"), "LeaseLostError", "a released lease")
      yield* expectTag(
        stores.first.setStatusFenced({
          tenantId,
          executionId: r.executionId,
          from: "Running",
          to: "Finished",
          now: yield* now,
          lease: { ...b, rootExecutionId: ids("root") }
        }),
        "LeaseLostError",
        "a tree with no lease"
      )
      assert.strictEqual(yield* statusNow, "Running")
    })

    test(`of ${racers} racers moving a record, a stale holder's transitions are all refused and the current holder's one lands`, function*(stores) {
      const tenantId = ids("tenant")
      const { lease: stale, r } = yield* leasedRoot(stores.first, tenantId, ids("holderA"))
      yield* TestClock.adjust(ttl + 1)
      const t = yield* now
      const current = some(yield* stores.second.leases.acquire(tenantId, r.executionId, ids("holderB"), ttl, t), "take over")
      const to = (i: number): ExecutionStatus => (i % 4 < 2 ? "Finished" : "Failed")
      const exits = yield* race(racers, (i) =>
        stores.at(i).setStatusFenced({
          tenantId,
          executionId: r.executionId,
          from: "Running",
          to: to(i),
          now: t,
          error: `racer ${i}`,
          lease: i % 2 === 0 ? stale : current
        }))
      const wins: Array<number> = []
      exits.forEach((exit, i) => {
        if (i % 2 === 0) {
          const errors = failures([exit])
          assert.strictEqual(errors.length, 1, `stale racer ${i} is refused`)
          assert.strictEqual(errors[0]!._tag, "LeaseLostError")
        } else if (successes([exit])[0] === true) wins.push(i)
      })
      assert.strictEqual(wins.length, 1, "exactly one current-holder transition lands")
      const after = some(yield* stores.first.getRecord(tenantId, r.executionId), "after the race")
      assert.strictEqual(after.status, to(wins[0]!))
      assert.strictEqual(after.error, `racer ${wins[0]!}`)
    })

    test("list pages a tenant's records newest first, narrowed by status, workflow and thread, each once while rows are added", function*(stores) {
      const t = yield* now
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const present: Array<ExecutionRecord> = []
      for (let i = 0; i < 11; i++) {
        // ties on createdAt, so the executionId decides between them
        const r = record(tenantId, i % 3 === 0 ? threadId : ids("thread"), t + Math.floor(i / 2), {
          status: i % 3 === 0 ? "Finished" : i % 2 === 0 ? "Paused" : "Running",
          workflowName: i % 4 === 0 ? "other" : "conformance"
        })
        assert.isTrue(yield* stores.at(i).createRecord(r))
        present.push(r)
      }
      yield* stores.first.createRecord(record(ids("tenant"), threadId, t + 5))
      const expected = [...present].sort(newestFirst)

      /** Every page of `query`; a row is added between pages each time (newer than any page: never answered by this paging). */
      const pageAll = Effect.fnUntraced(function*(query: { status?: ExecutionStatus; workflow?: string; threadId?: string }, limit: number) {
        const out: Array<ExecutionRecord> = []
        const addedNow = new Set<string>()
        let cursor: string | undefined
        for (let page = 0; ; page++) {
          assert.isBelow(page, 1_000, "paging does not end")
          const got = yield* stores.at(page).list({ tenantId, ...query, cursor, limit })
          assert.isAtMost(got.records.length, limit)
          out.push(...got.records)
          const added = record(tenantId, threadId, t + 100 + page, { status: "Finished", workflowName: "added" })
          assert.isTrue(yield* stores.at(page + 1).createRecord(added))
          addedNow.add(added.executionId)
          if (got.next === null) break
          assert.strictEqual(got.records.length, limit, "a page before the last is full")
          cursor = got.next
        }
        for (const r of out) assert.isFalse(addedNow.has(r.executionId), "a row added during the paging is not answered by it")
        // rows added by earlier pagings are the newest; they lead, and are left out of the comparison
        return out.filter((r) => r.workflowName !== "added")
      })
      assert.deepStrictEqual(yield* pageAll({}, 3), expected, "every record once, newest first")
      assert.deepStrictEqual(yield* pageAll({}, 1_000), expected, "one page")
      assert.deepStrictEqual(yield* pageAll({ status: "Paused" }, 2), expected.filter((r) => r.status === "Paused"))
      assert.deepStrictEqual(yield* pageAll({ workflow: "other" }, 2), expected.filter((r) => r.workflowName === "other"))
      assert.deepStrictEqual(
        yield* pageAll({ threadId, status: "Finished", workflow: "conformance" }, 1),
        expected.filter((r) => r.threadId === threadId && r.status === "Finished" && r.workflowName === "conformance")
      )
      const exact = yield* stores.second.list({ tenantId: ids("tenant"), limit: 5 })
      assert.deepStrictEqual(exact, { records: [], next: null }, "an unknown tenant has none")
    })

    test("every new read and write is isolated by tenant: another tenant's ids answer as unknown", function*(stores) {
      const tenantId = ids("tenant")
      const other = ids("tenant")
      const { lease, r } = yield* leasedRoot(stores.first, tenantId, ids("holder"))
      const t = yield* now
      const s = stores.second
      none(yield* s.findActiveRoot(other, r.threadId), "findActiveRoot, another tenant")
      assert.deepStrictEqual(yield* s.list({ tenantId: other, limit: 10 }), { records: [], next: null })
      assert.deepStrictEqual(yield* s.list({ tenantId: other, threadId: r.threadId, limit: 10 }), { records: [], next: null })
      assert.isFalse(yield* s.setStatus({ tenantId: other, executionId: r.executionId, from: "Running", to: "Failed", now: t }))
      // their own lease on a tree of the same id fences nothing of ours
      const theirs = some(yield* s.leases.acquire(other, r.executionId, lease.holder, ttl, t), "their lease")
      assert.isFalse(yield* s.setStatusFenced({ tenantId: other, executionId: r.executionId, from: "Running", to: "Failed", now: t, lease: theirs }))
      assert.deepStrictEqual(yield* s.startRoot({ ...r, tenantId: other }), started, "the same thread and id are free under another tenant")
      assert.deepStrictEqual(some(yield* s.getRecord(tenantId, r.executionId), "ours, unchanged"), r)
      assert.deepStrictEqual((yield* s.list({ tenantId, limit: 10 })).records, [r])
    })

    test("findByStatus pages completely, in (tenantId, executionId) order, while rows are added between pages", function*(stores) {
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
    })

    test("findByStatus answers the first records strictly after the cursor, at most `limit`", function*(stores) {
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
    })

    test("listByThread answers the thread's records oldest first, and only them", function*(stores) {
      const t = yield* now
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const newest = record(tenantId, threadId, t + 2_000)
      // one active root per thread: the older ones settled
      const oldest = record(tenantId, threadId, t, { status: "Failed" })
      const middle = record(tenantId, threadId, t + 1_000, { status: "Finished" })
      for (const r of [newest, oldest, middle]) assert.isTrue(yield* stores.first.createRecord(r))
      assert.isTrue(yield* stores.first.createRecord(record(tenantId, ids("thread"), t)))
      assert.isTrue(yield* stores.first.createRecord(record(ids("tenant"), threadId, t)))
      assert.deepStrictEqual(yield* stores.second.listByThread(tenantId, threadId), [oldest, middle, newest])
      assert.deepStrictEqual(yield* stores.second.listByThread(tenantId, ids("thread")), [])
    })

    test("savePauseAnswer keeps the first answer of a pause; listPauseAnswers answers the execution's", function*(stores) {
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
    })

    test("every read is isolated by tenant: another tenant sees nothing and changes nothing", function*(stores) {
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
    })

    test("ids up to 200 characters are kept; longer ones, or ones holding NUL, fail with InvalidInputError before any write", function*({ first: s }) {
      const t = yield* now
      const tenantId = longestId(ids("tenant"))
      const threadId = longestId(ids("thread"))
      const made = yield* s.createThread({ tenantId, threadId, ownerId: longestId(ids("owner")), now: t })
      assert.isTrue(made.created, "a 200-character thread id is kept")
      const r = record(tenantId, threadId, t, { executionId: longestId(ids("exec")) })
      const kept = { ...r, rootExecutionId: r.executionId }
      assert.isTrue(yield* s.createRecord(kept))
      assert.deepStrictEqual(some(yield* (yield* Stores).second.getRecord(tenantId, kept.executionId), "the longest ids"), kept)
      for (const [what, bad] of badIds) {
        const other = ids("thread")
        yield* expectInvalid(s.createThread({ tenantId: bad, threadId: other, now: t }), "tenantId", `createThread, tenant of ${what}`)
        yield* expectInvalid(s.createThread({ tenantId, threadId: bad, now: t }), "threadId", `createThread, thread of ${what}`)
        yield* expectInvalid(s.createThread({ tenantId, threadId: other, ownerId: bad, now: t }), "ownerId", `createThread, owner of ${what}`)
        none(yield* s.getThread(tenantId, other), `no createThread with an id of ${what} wrote the thread`)
        const fresh = record(tenantId, other, t)
        yield* expectInvalid(s.createRecord({ ...fresh, executionId: bad }), "executionId", `createRecord, id of ${what}`)
        yield* expectInvalid(s.createRecord({ ...fresh, threadId: bad }), "threadId", `createRecord, thread of ${what}`)
        yield* expectInvalid(s.createRecord({ ...fresh, tenantId: bad }), "tenantId", `createRecord, tenant of ${what}`)
        yield* expectInvalid(s.createRecord({ ...fresh, rootExecutionId: bad }), "rootExecutionId", `createRecord, root of ${what}`)
        none(yield* s.getRecord(tenantId, fresh.executionId), `no createRecord with an id of ${what} wrote the record`)
        assert.deepStrictEqual(yield* s.listByThread(tenantId, other), [])
        yield* expectInvalid(s.getRecord(tenantId, bad), "executionId", `getRecord, id of ${what}`)
        yield* expectInvalid(s.getThread(bad, threadId), "tenantId", `getThread, tenant of ${what}`)
      }
    })

    test("tenants, threads, owners and workflows that differ only by U+FFFD or a surrogate pair are kept apart, each answered as given", function*(stores) {
      const t = yield* now
      const tenants = unicodeTwins(ids("tenant"))
      const threadId = ids("thread")
      // One execution id under every twin tenant: each must answer its own record.
      const executionId = ids("exec")
      const made: Array<ExecutionRecord> = []
      for (const [i, tenantId] of tenants.entries()) {
        const owner = unicodeTwins("owner")[i]!
        const thread = yield* stores.first.createThread({ tenantId, threadId: unicodeTwins(threadId)[i]!, ownerId: owner, now: t })
        assert.isTrue(thread.created, "a twin is a thread of its own")
        const r = record(tenantId, thread.thread.threadId, t, { executionId, workflowName: unicodeTwins("conformance")[i]! })
        assert.isTrue(yield* stores.first.createRecord(r))
        made.push(r)
      }
      for (const [i, r] of made.entries()) {
        assert.deepStrictEqual(some(yield* stores.second.getRecord(r.tenantId, r.executionId), "the twin's record"), r)
        assert.strictEqual(some(yield* stores.second.getThread(r.tenantId, r.threadId), "the twin's thread").ownerId, unicodeTwins("owner")[i])
        const page = yield* stores.second.list({ tenantId: r.tenantId, workflow: r.workflowName, limit: 10 })
        assert.deepStrictEqual(page.records, [r], "each tenant lists its own record, by its own workflow name")
      }
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*({ first: s }) {
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

      const root = record(tenantId, ids("thread"), t)
      const badRoots: Array<[Partial<Record<keyof ExecutionRecord, unknown>>, string]> = [
        [{ rootExecutionId: ids("exec") }, "rootExecutionId"],
        [{ parentExecutionId: ids("exec") }, "parentExecutionId"],
        [{ depth: 2 }, "depth"],
        [{ status: "Paused" }, "status"],
        [{ threadId: "" }, "threadId"],
        [{ createdAt: -1 }, "createdAt"]
      ]
      for (const [over, field] of badRoots) {
        yield* expectInvalid(s.startRoot({ ...root, ...over } as ExecutionRecord), field, `startRoot, ${JSON.stringify(over)}`)
      }
      none(yield* s.getRecord(tenantId, root.executionId), "no bad startRoot wrote the root")
      yield* expectInvalid(s.findActiveRoot("", threadId), "tenantId", "findActiveRoot, empty tenant")
      yield* expectInvalid(s.findActiveRoot(tenantId, ""), "threadId", "findActiveRoot, empty thread")

      const lease: Lease = { tenantId, rootExecutionId: r.executionId, holder: "h", epoch: 1, expiresAt: t + ttl }
      const fenced = { ...set, lease }
      yield* expectInvalid(s.setStatusFenced({ ...fenced, lease: { ...lease, tenantId: ids("tenant") } }), "lease.tenantId", "setStatusFenced, another tenant's lease")
      yield* expectInvalid(s.setStatusFenced({ ...fenced, lease: { ...lease, epoch: 0 } }), "lease.epoch", "setStatusFenced, epoch 0")
      yield* expectInvalid(s.setStatusFenced({ ...fenced, lease: { ...lease, holder: "" } }), "lease.holder", "setStatusFenced, no holder")
      yield* expectInvalid(s.setStatusFenced({ ...fenced, to: "Nope" as ExecutionStatus }), "to", "setStatusFenced, bad to")
      yield* expectInvalid(s.setStatusFenced({ ...fenced, now: Number.NaN }), "now", "setStatusFenced, now NaN")
      assert.deepStrictEqual(some(yield* s.getRecord(tenantId, r.executionId), "record"), r, "no bad setStatusFenced changed it")

      for (const limit of [0, -1, 2.5, Number.NaN, 1001]) {
        yield* expectInvalid(s.list({ tenantId, limit }), "limit", `list, limit ${limit}`)
      }
      yield* expectInvalid(s.list({ tenantId: "", limit: 1 }), "tenantId", "list, empty tenant")
      yield* expectInvalid(s.list({ tenantId, status: "Nope" as ExecutionStatus, limit: 1 }), "status", "list, bad status")
      yield* expectInvalid(s.list({ tenantId, workflow: "", limit: 1 }), "workflow", "list, empty workflow")
      yield* expectInvalid(s.list({ tenantId, threadId: "", limit: 1 }), "threadId", "list, empty thread")
      for (const cursor of ["garbage!", "", Buffer.from("[1]").toString("base64url"), Buffer.from("{\"a\":1}").toString("base64url")]) {
        yield* expectInvalid(s.list({ tenantId, cursor, limit: 1 }), "cursor", `list, cursor ${JSON.stringify(cursor)}`)
      }

      const answer = { tenantId, executionId: r.executionId, pauseId: ids("pause"), answeredBy: "a", answeredAt: t }
      yield* expectInvalid(s.savePauseAnswer({ ...answer, pauseId: "" }), "pauseId", "savePauseAnswer, empty pause")
      yield* expectInvalid(s.savePauseAnswer({ ...answer, answeredBy: "" }), "answeredBy", "savePauseAnswer, empty answeredBy")
      yield* expectInvalid(s.savePauseAnswer({ ...answer, answeredAt: Number.NaN }), "answeredAt", "savePauseAnswer, NaN time")
      yield* expectInvalid(s.savePauseAnswer({ ...answer, tenantId: "" }), "tenantId", "savePauseAnswer, empty tenant")
      yield* expectInvalid(s.listPauseAnswers(tenantId, ""), "executionId", "listPauseAnswers, empty id")
      assert.deepStrictEqual(yield* s.listPauseAnswers(tenantId, r.executionId), [], "no bad savePauseAnswer wrote an answer")
    })

    test("deleteThread deletes the thread, its records and their pause answers at once, and nothing of another thread or tenant", function*(stores) {
      const tenantId = ids("tenant")
      const t = yield* now
      const { thread } = yield* stores.first.createThread({ tenantId, ownerId: "alice", now: t })
      const kept = (yield* stores.first.createThread({ tenantId, now: t })).thread
      const root = record(tenantId, thread.threadId, t, { status: "Finished" })
      const child = record(tenantId, thread.threadId, t + 1, { rootExecutionId: root.executionId, parentExecutionId: root.executionId, depth: 2 })
      const elsewhere = record(tenantId, kept.threadId, t)
      const otherTenant = record(ids("tenant"), thread.threadId, t)
      for (const r of [root, child, elsewhere, otherTenant]) assert.isTrue(yield* stores.first.createRecord(r))
      const answer = { tenantId, executionId: root.executionId, pauseId: ids("pause"), answeredBy: "i", answeredAt: t }
      const keptAnswer = { ...answer, executionId: elsewhere.executionId, pauseId: ids("pause") }
      yield* stores.first.savePauseAnswer(answer)
      yield* stores.first.savePauseAnswer(keptAnswer)
      assert.strictEqual(yield* stores.second.deleteThread(tenantId, thread.threadId), 2)
      assert.isTrue(Option.isNone(yield* stores.first.getThread(tenantId, thread.threadId)), "the thread is gone")
      assert.deepStrictEqual(yield* stores.first.listByThread(tenantId, thread.threadId), [])
      assert.isTrue(Option.isNone(yield* stores.first.getRecord(tenantId, root.executionId)))
      assert.deepStrictEqual(yield* stores.first.listPauseAnswers(tenantId, root.executionId), [])
      assert.isTrue(Option.isSome(yield* stores.first.getThread(tenantId, kept.threadId)), "another thread stays")
      assert.deepStrictEqual(yield* stores.first.listPauseAnswers(tenantId, elsewhere.executionId), [keptAnswer])
      assert.isTrue(Option.isSome(yield* stores.first.getRecord(otherTenant.tenantId, otherTenant.executionId)), "another tenant's stays")
      assert.strictEqual(yield* stores.first.deleteThread(tenantId, thread.threadId), 0, "again: nothing")
      yield* expectInvalid(stores.first.deleteThread("", thread.threadId), "tenantId", "deleteThread, empty tenant")
    })
  })
}
