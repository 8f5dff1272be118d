/**
 * Conformance suite for {@link ChildQueueStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { type ChildOutcome, ChildQueueStore, type ChildQueueStoreShape, type QueuedChild } from "../../stores/ChildQueueStore.ts"
import {
  deleteTreesAfter,
  expectInvalid,
  illFormedIds,
  type Instances,
  none,
  nonJsonValues,
  now,
  race,
  some,
  successes,
  type SuiteOptions
} from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

const ttl = 30_000

/**
 * Registers the ChildQueueStore conformance tests (call it at the top level
 * of a vitest file). `claim` takes from the whole queue, every tenant, so the
 * database must hold no claimable rows but the suite's own: every test
 * deletes the rows it queued when it ends.
 *
 * @category conformance
 * @since 0.1.0
 */
export const childQueueStoreSuite = (options: SuiteOptions<ChildQueueStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "ChildQueueStore", ChildQueueStore)

  /**
   * A test's `child` maker and its start time `t`; every tree it queued
   * into is deleted when the test ends, however it ends.
   */
  const queueOf = (stores: Instances<ChildQueueStoreShape>) =>
    Effect.gen(function*() {
      // every test starts a second later than the last ended: queue times before `t` stay ≥ 0
      yield* TestClock.adjust(1_000)
      const t = yield* now
      const track = yield* deleteTreesAfter(stores.first)
      const defaultTree = { tenantId: ids("tenant"), rootExecutionId: ids("root") }
      const child = (over: Partial<QueuedChild> = {}): QueuedChild => {
        const c: QueuedChild = {
          ...defaultTree,
          executionId: ids("child"),
          parentExecutionId: defaultTree.rootExecutionId,
          threadId: ids("thread"),
          depth: 2,
          workflowName: "conformance-child",
          input: { task: "summarise", items: [1, 2, 3], nested: { ok: true } },
          status: "Queued",
          claimedBy: null,
          queuedAt: t,
          claimExpiresAt: null,
          result: null,
          launchId: null,
          position: 0,
          configHash: null,
          ...over
        }
        track(c)
        return c
      }
      return { child, t }
    })

  const claimed = (c: QueuedChild, instanceId: string, expiresAt: number): QueuedChild => ({
    ...c,
    status: "Running",
    claimedBy: instanceId,
    claimExpiresAt: expiresAt
  })

  register((test) => {
    test("saveIfAbsent queues a child once; a second save of the id is refused and changes nothing", function*(stores) {
      const { child } = yield* queueOf(stores)
      const c = child()
      assert.isTrue(yield* stores.first.saveIfAbsent(c))
      assert.isFalse(yield* stores.second.saveIfAbsent({ ...c, input: "other", depth: 5 }))
      assert.deepStrictEqual(some(yield* stores.second.get(c.tenantId, c.executionId), "get"), c)
      none(yield* stores.first.get(c.tenantId, ids("child")), "an unknown child")
    })

    test("claim takes the deepest child first, then the longest waiting, then by id — across tenants", function*(stores) {
      const { child, t } = yield* queueOf(stores)
      const otherTree = { tenantId: ids("tenant"), rootExecutionId: ids("root") }
      const a = child({ depth: 2, queuedAt: t - 300 })
      const b = child({ ...otherTree, depth: 3, queuedAt: t - 100 })
      const c = child({ depth: 3, queuedAt: t - 200 })
      const d = child({ depth: 4, queuedAt: t })
      const e = child({ ...otherTree, depth: 2, queuedAt: t - 300 })
      const f = child({ depth: 3, queuedAt: t - 200 })
      for (const row of [e, b, d, a, f, c]) assert.isTrue(yield* stores.first.saveIfAbsent(row))
      const order: Array<QueuedChild> = []
      for (let i = 0; i < 6; i++) {
        yield* TestClock.adjust(1)
        const at = yield* now
        const instance = `instance${i % 2}`
        const got = some(yield* stores.at(i).claim(instance, ttl, at), `claim ${i + 1}`)
        const expected = [d, c, f, b, a, e][i]!
        assert.deepStrictEqual(got, claimed(expected, instance, at + ttl), `claim ${i + 1} takes the right child`)
        order.push(got)
      }
      none(yield* stores.first.claim("instance9", ttl, yield* now), "every child is claimed")
      for (const got of order) {
        assert.deepStrictEqual(some(yield* stores.second.get(got.tenantId, got.executionId), "get"), got)
      }
    })

    test("claim with workflows takes only rows of those workflows, in the same order; the others stay queued", function*(stores) {
      const { child, t } = yield* queueOf(stores)
      const w = (name: string) => ({ name, configHash: "h1" })
      const summarise = child({ workflowName: "conformance-summarise", depth: 4, queuedAt: t - 100 })
      const mine = child({ workflowName: "conformance-child", depth: 2, queuedAt: t - 50 })
      const older = child({ workflowName: "conformance-child", depth: 2, queuedAt: t - 200 })
      for (const row of [summarise, mine, older]) assert.isTrue(yield* stores.first.saveIfAbsent(row))
      none(yield* stores.first.claim("w0", ttl, t, []), "no workflow: nothing to claim")
      none(yield* stores.first.claim("w0", ttl, t, [w("conformance-other")]), "no row of that workflow")
      const first = some(yield* stores.second.claim("w1", ttl, t, [w("conformance-child"), w("conformance-other")]), "claim 1")
      assert.deepStrictEqual(first, claimed(older, "w1", t + ttl), "the longest waiting of its workflows, not the deeper row of another")
      const second = some(yield* stores.first.claim("w1", ttl, t, [w("conformance-child")]), "claim 2")
      assert.deepStrictEqual(second, claimed(mine, "w1", t + ttl))
      none(yield* stores.first.claim("w1", ttl, t, [w("conformance-child")]), "its workflow's rows are all claimed")
      assert.strictEqual(some(yield* stores.first.get(summarise.tenantId, summarise.executionId), "get").status, "Queued", "the other workflow's row stays queued")
      assert.deepStrictEqual(some(yield* stores.second.claim("w2", ttl, t, [w("conformance-summarise")]), "claim 3"), claimed(summarise, "w2", t + ttl))
      yield* expectInvalid(stores.first.claim("w3", ttl, t, [w("")]), "workflows[0].name", "an empty workflow name")
      yield* expectInvalid(stores.first.claim("w3", ttl, t, [{ name: "conformance-child", configHash: "" }]), "workflows[0].configHash", "an empty config hash")
    })

    test("claim with workflows matches a row's config hash too (a row without one by name): another graph of the name leaves it queued", function*(stores) {
      const { child, t } = yield* queueOf(stores)
      const v2 = child({ configHash: "hash-v2", queuedAt: t - 300 })
      const v1 = child({ configHash: "hash-v1", queuedAt: t - 200 })
      const unhashed = child({ queuedAt: t - 100 })
      for (const row of [v2, v1, unhashed]) assert.isTrue(yield* stores.first.saveIfAbsent(row))
      assert.strictEqual(some(yield* stores.second.get(v1.tenantId, v1.executionId), "get").configHash, "hash-v1", "the hash is kept")
      const old = [{ name: "conformance-child", configHash: "hash-v1" }]
      assert.deepStrictEqual(some(yield* stores.first.claim("old", ttl, t, old), "claim 1"), claimed(v1, "old", t + ttl), "its own hash, not the longer waiting row of another")
      assert.deepStrictEqual(some(yield* stores.second.claim("old", ttl, t, old), "claim 2"), claimed(unhashed, "old", t + ttl), "a row without a hash, by name")
      none(yield* stores.first.claim("old", ttl, t, old), "the other graph's row is not for it")
      assert.strictEqual(some(yield* stores.first.get(v2.tenantId, v2.executionId), "get").status, "Queued")
      const current = [{ name: "conformance-child", configHash: "hash-v2" }]
      assert.deepStrictEqual(some(yield* stores.second.claim("new", ttl, t, current), "claim 3"), claimed(v2, "new", t + ttl))
    })

    test(`of ${racers} racing claimers each queued child goes to exactly one`, function*(stores) {
      const { child, t } = yield* queueOf(stores)
      // fewer children than racers, so some racers find the queue empty
      const rows = Array.from({ length: Math.min(6, racers - 1) }, (_, i) => child({ depth: 2 + (i % 3) }))
      for (const row of rows) assert.isTrue(yield* stores.first.saveIfAbsent(row))
      const exits = yield* race(racers, (i) => stores.at(i).claim(`racer${i}`, ttl, t))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers)
      const got = answers.flatMap((o, i) => (Option.isSome(o) ? [[i, o.value] as const] : []))
      assert.strictEqual(got.length, rows.length, "as many claims succeed as there are children")
      assert.deepStrictEqual(
        got.map(([, c]) => c.executionId).sort(),
        rows.map((r) => r.executionId).sort(),
        "each child is claimed exactly once"
      )
      for (const [i, c] of got) {
        assert.strictEqual(c.claimedBy, `racer${i}`)
        const stored = some(yield* stores.first.get(c.tenantId, c.executionId), "get")
        assert.strictEqual(stored.claimedBy, `racer${i}`, "the stored claimer is the one that was answered")
        assert.strictEqual(stored.status, "Running")
      }
    })

    test("an expired claim is reclaimable; the first claimer can then neither renew nor complete", function*(stores) {
      const { child } = yield* queueOf(stores)
      const c = child()
      assert.isTrue(yield* stores.first.saveIfAbsent(c))
      const first = some(yield* stores.first.claim("a", ttl, yield* now), "a claims")
      yield* TestClock.adjust(ttl - 1)
      none(yield* stores.second.claim("b", ttl, yield* now), "a live claim is not reclaimable")
      yield* TestClock.adjust(1)
      const t = yield* now
      const again = some(yield* stores.second.claim("b", ttl, t), "b reclaims at expiry")
      assert.deepStrictEqual(again, claimed(c, "b", t + ttl))
      assert.strictEqual(first.executionId, again.executionId)
      assert.isFalse(yield* stores.first.renewClaim(c.tenantId, c.executionId, "a", ttl, t), "a's renew")
      assert.isFalse(
        yield* stores.first.complete({ tenantId: c.tenantId, executionId: c.executionId, instanceId: "a", outcome: "Answered", result: 1 }),
        "a's complete"
      )
      assert.deepStrictEqual(some(yield* stores.first.get(c.tenantId, c.executionId), "get"), again, "unchanged by a")
      assert.isTrue(
        yield* stores.second.complete({ tenantId: c.tenantId, executionId: c.executionId, instanceId: "b", outcome: "Answered", result: 2 })
      )
    })

    test("renewClaim extends a live claim of the same instance only", function*(stores) {
      const { child } = yield* queueOf(stores)
      const c = child()
      assert.isTrue(yield* stores.first.saveIfAbsent(c))
      some(yield* stores.first.claim("a", ttl, yield* now), "a claims")
      assert.isFalse(yield* stores.second.renewClaim(c.tenantId, c.executionId, "b", ttl, yield* now), "another instance")
      yield* TestClock.adjust(ttl / 2)
      const t = yield* now
      assert.isTrue(yield* stores.second.renewClaim(c.tenantId, c.executionId, "a", ttl, t))
      assert.strictEqual(some(yield* stores.first.get(c.tenantId, c.executionId), "get").claimExpiresAt, t + ttl)
      yield* TestClock.adjust(ttl - 1)
      none(yield* stores.second.claim("b", ttl, yield* now), "the renewed claim holds")
      yield* TestClock.adjust(1)
      assert.isFalse(yield* stores.first.renewClaim(c.tenantId, c.executionId, "a", ttl, yield* now), "renew at expiry")
      assert.isFalse(yield* stores.first.renewClaim(c.tenantId, ids("child"), "a", ttl, yield* now), "an unknown child")
    })

    test("complete records the outcome only for the claimer; a completed child is never claimed again", function*(stores) {
      const { child } = yield* queueOf(stores)
      const outcomes: ReadonlyArray<ChildOutcome> = ["Answered", "Paused", "Failed"]
      const rows = outcomes.map(() => child())
      for (const row of rows) assert.isTrue(yield* stores.first.saveIfAbsent(row))
      const [first] = rows
      assert.isFalse(
        yield* stores.first.complete({ tenantId: first!.tenantId, executionId: first!.executionId, instanceId: "a", outcome: "Answered", result: 1 }),
        "a Queued child has no claimer"
      )
      const t = yield* now
      for (const [i, outcome] of outcomes.entries()) {
        const got = some(yield* stores.at(i).claim("a", ttl, t), `claim ${i}`)
        const input = { tenantId: got.tenantId, executionId: got.executionId, outcome, result: { outcome, n: i, list: [null] } }
        assert.isFalse(yield* stores.second.complete({ ...input, instanceId: "b" }), "not the claimer")
        assert.strictEqual(some(yield* stores.first.get(got.tenantId, got.executionId), "get").status, "Running")
        assert.isTrue(yield* stores.second.complete({ ...input, instanceId: "a" }), "the claimer completes")
        const done = some(yield* stores.first.get(got.tenantId, got.executionId), "completed")
        assert.strictEqual(done.status, outcome)
        assert.deepStrictEqual(done.result, input.result)
        assert.deepStrictEqual(done.input, got.input)
      }
      yield* TestClock.adjust(ttl * 2)
      none(yield* stores.first.claim("c", ttl, yield* now), "completed children are not claimable, even past their claim")
    })

    test("a launch: listLaunch answers its children by position, countOpen what is still Queued or Running, failQueued ends a root's Queued ones", function*(stores) {
      const { child } = yield* queueOf(stores)
      const launchId = ids("launch")
      // saved out of order: read back by position
      const kids = [2, 0, 1].map((position) => child({ launchId, position }))
      const other = child({ launchId: ids("launch") })
      for (const k of [...kids, other]) assert.isTrue(yield* stores.first.saveIfAbsent(k))
      const listed = yield* stores.second.listLaunch(kids[0]!.tenantId, launchId)
      assert.deepStrictEqual(listed.map((k) => k.position), [0, 1, 2])
      assert.deepStrictEqual(listed.map((k) => k.executionId), [kids[1]!, kids[2]!, kids[0]!].map((k) => k.executionId))
      assert.strictEqual(yield* stores.second.countOpen(kids[0]!.tenantId, launchId), 3)
      assert.deepStrictEqual(yield* stores.first.listLaunch(ids("tenant"), launchId), [], "another tenant sees no launch")
      // claim and complete every child of the launch (the other launch's child may be claimed too)
      let open = 3
      while (open > 0) {
        const got = some(yield* stores.first.claim("a", ttl, yield* now), "claim")
        if (got.launchId !== launchId) continue
        assert.isTrue(yield* stores.first.complete({ tenantId: got.tenantId, executionId: got.executionId, instanceId: "a", outcome: "Answered", result: got.position }))
        open--
        assert.strictEqual(yield* stores.second.countOpen(got.tenantId, launchId), open)
      }
      assert.deepStrictEqual((yield* stores.second.listLaunch(kids[0]!.tenantId, launchId)).map((k) => k.result), [0, 1, 2])
      // failQueued: only Queued rows of the root end Failed, with the result
      const queued = child({ launchId: ids("launch") })
      assert.isTrue(yield* stores.first.saveIfAbsent(queued))
      const ended = yield* stores.second.failQueued(queued.tenantId, queued.rootExecutionId, { tag: "ExecutionCancelledError" })
      assert.isAtLeast(ended, 1)
      const row = some(yield* stores.first.get(queued.tenantId, queued.executionId), "get")
      assert.strictEqual(row.status, "Failed")
      assert.deepStrictEqual(row.result, { tag: "ExecutionCancelledError" })
      assert.strictEqual(some(yield* stores.first.get(kids[0]!.tenantId, kids[0]!.executionId), "get").status, "Answered", "an ended child stays as it ended")
    })

    test("releaseClaim hands the claimer's Running child back to the queue; nobody else's", function*(stores) {
      const { child, t } = yield* queueOf(stores)
      const c = child({ depth: 9 })
      assert.isTrue(yield* stores.first.saveIfAbsent(c))
      const got = some(yield* stores.first.claim("a", ttl, t), "claim")
      assert.strictEqual(got.executionId, c.executionId)
      assert.isFalse(yield* stores.second.releaseClaim(c.tenantId, c.executionId, "b"), "not b's claim")
      assert.isTrue(yield* stores.second.releaseClaim(c.tenantId, c.executionId, "a"))
      assert.deepStrictEqual(some(yield* stores.first.get(c.tenantId, c.executionId), "get"), c, "Queued and unclaimed again")
      assert.isFalse(yield* stores.first.releaseClaim(c.tenantId, c.executionId, "a"), "a queued child has no claim to release")
      const again = some(yield* stores.second.claim("b", ttl, t), "claim again")
      assert.strictEqual(again.executionId, c.executionId)
      assert.strictEqual(again.claimedBy, "b")
    })

    test("requeuePaused hands a Paused row back to the queue (unclaimed, result cleared), once; no other status, no other tenant", function*(stores) {
      const { child, t } = yield* queueOf(stores)
      const c = child({ depth: 9 })
      assert.isTrue(yield* stores.first.saveIfAbsent(c))
      assert.isFalse(yield* stores.second.requeuePaused(c.tenantId, c.executionId), "a Queued row is not Paused")
      some(yield* stores.first.claim("a", ttl, t), "claim")
      assert.isFalse(yield* stores.second.requeuePaused(c.tenantId, c.executionId), "a Running row is not Paused")
      assert.isTrue(yield* stores.first.complete({ tenantId: c.tenantId, executionId: c.executionId, instanceId: "a", outcome: "Paused", result: { pauses: 1 } }))
      assert.isFalse(yield* stores.second.requeuePaused(ids("tenant"), c.executionId), "another tenant's id is unknown")
      const racing = yield* Effect.all([stores.first.requeuePaused(c.tenantId, c.executionId), stores.second.requeuePaused(c.tenantId, c.executionId)], { concurrency: 2 })
      assert.deepStrictEqual(racing.filter(Boolean).length, 1, "of two racing callers one requeues it")
      assert.deepStrictEqual(some(yield* stores.first.get(c.tenantId, c.executionId), "get"), c, "Queued, unclaimed, no result")
      assert.strictEqual(yield* stores.first.countOpen(c.tenantId, "none"), 0)
      const again = some(yield* stores.second.claim("b", ttl, t), "claimed again")
      assert.strictEqual(again.executionId, c.executionId)
      assert.strictEqual(again.claimedBy, "b")
      assert.isTrue(yield* stores.second.complete({ tenantId: c.tenantId, executionId: c.executionId, instanceId: "b", outcome: "Answered", result: { ok: 1 } }))
      assert.isFalse(yield* stores.first.requeuePaused(c.tenantId, c.executionId), "an Answered row stays")
    })

    test("deleteRoot removes the tree's children only and answers how many", function*(stores) {
      const { child } = yield* queueOf(stores)
      const rows = [child(), child(), child()]
      const tenantId = rows[0]!.tenantId
      const root = rows[0]!.rootExecutionId
      const otherRoot = child({ rootExecutionId: ids("root") })
      const otherTenant = child({ tenantId: ids("tenant") })
      for (const row of [...rows, otherRoot, otherTenant]) assert.isTrue(yield* stores.first.saveIfAbsent(row))
      some(yield* stores.first.claim("a", ttl, yield* now), "one of them is running")
      assert.strictEqual(yield* stores.second.deleteRoot(tenantId, root), 3)
      for (const row of rows) none(yield* stores.first.get(row.tenantId, row.executionId), "deleted")
      assert.isTrue(Option.isSome(yield* stores.first.get(otherRoot.tenantId, otherRoot.executionId)), "another root is kept")
      assert.isTrue(Option.isSome(yield* stores.first.get(otherTenant.tenantId, otherTenant.executionId)), "another tenant is kept")
      assert.strictEqual(yield* stores.second.deleteRoot(tenantId, root), 0)
    })

    test("every read is isolated by tenant: another tenant sees nothing and changes nothing", function*(stores) {
      const { child } = yield* queueOf(stores)
      const c = child()
      assert.isTrue(yield* stores.first.saveIfAbsent(c))
      const got = some(yield* stores.first.claim("a", ttl, yield* now), "claim")
      const other = ids("tenant")
      const s = stores.second
      none(yield* s.get(other, c.executionId), "get, another tenant")
      assert.isFalse(yield* s.renewClaim(other, c.executionId, "a", ttl, yield* now), "renewClaim, another tenant")
      assert.isFalse(
        yield* s.complete({ tenantId: other, executionId: c.executionId, instanceId: "a", outcome: "Failed", result: null }),
        "complete, another tenant"
      )
      assert.strictEqual(yield* s.deleteRoot(other, c.rootExecutionId), 0)
      assert.deepStrictEqual(some(yield* s.get(c.tenantId, c.executionId), "unchanged"), got)
      const theirs = child({ tenantId: other, executionId: c.executionId, rootExecutionId: c.rootExecutionId })
      assert.isTrue(yield* s.saveIfAbsent(theirs), "the same id is free under another tenant")
      assert.deepStrictEqual(some(yield* s.get(other, c.executionId), "theirs"), theirs)
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*(stores) {
      const { child } = yield* queueOf(stores)
      const s = stores.first
      const c = child()
      const t = yield* now
      const bad: Array<[Partial<Record<keyof QueuedChild, unknown>>, string]> = [
        [{ tenantId: "" }, "tenantId"],
        [{ executionId: "" }, "executionId"],
        [{ rootExecutionId: "" }, "rootExecutionId"],
        [{ parentExecutionId: "" }, "parentExecutionId"],
        [{ threadId: "" }, "threadId"],
        [{ workflowName: "" }, "workflowName"],
        ...illFormedIds.flatMap(([, bad]): Array<[Partial<Record<keyof QueuedChild, unknown>>, string]> => [
          [{ tenantId: bad }, "tenantId"],
          [{ executionId: bad }, "executionId"],
          [{ threadId: bad }, "threadId"],
          [{ workflowName: bad }, "workflowName"]
        ]),
        [{ depth: 1 }, "depth"],
        [{ depth: 2.5 }, "depth"],
        [{ status: "Running" }, "status"],
        [{ queuedAt: Number.NaN }, "queuedAt"],
        ...nonJsonValues.map(([, input]): [Partial<Record<keyof QueuedChild, unknown>>, string] => [{ input }, "input"])
      ]
      for (const [over, field] of bad) {
        yield* expectInvalid(s.saveIfAbsent({ ...c, ...over } as QueuedChild), field, `saveIfAbsent, bad ${field}`)
      }
      none(yield* s.get(c.tenantId, c.executionId), "no bad save queued the child")

      assert.isTrue(yield* s.saveIfAbsent(c))
      yield* expectInvalid(s.claim("", ttl, t), "instanceId", "claim, empty instance")
      for (const [what, bad] of illFormedIds) yield* expectInvalid(s.claim(bad, ttl, t), "instanceId", `claim, instance with ${what}`)
      for (const bad of [0, -1, Number.NaN]) yield* expectInvalid(s.claim("a", bad, t), "ttlMillis", `claim, ttl ${bad}`)
      yield* expectInvalid(s.claim("a", ttl, Number.NaN), "now", "claim, now NaN")
      assert.strictEqual(some(yield* s.get(c.tenantId, c.executionId), "get").status, "Queued", "no bad claim took it")

      const got = some(yield* s.claim("a", ttl, t), "claim")
      yield* expectInvalid(s.renewClaim(c.tenantId, c.executionId, "a", 0, t), "ttlMillis", "renewClaim, ttl 0")
      yield* expectInvalid(s.renewClaim(c.tenantId, c.executionId, "", ttl, t), "instanceId", "renewClaim, empty instance")
      yield* expectInvalid(s.renewClaim("", c.executionId, "a", ttl, t), "tenantId", "renewClaim, empty tenant")
      const complete = { tenantId: c.tenantId, executionId: c.executionId, instanceId: "a", outcome: "Answered" as ChildOutcome, result: 1 as unknown }
      yield* expectInvalid(s.complete({ ...complete, outcome: "Done" as ChildOutcome }), "outcome", "complete, bad outcome")
      yield* expectInvalid(s.complete({ ...complete, instanceId: "" }), "instanceId", "complete, empty instance")
      yield* expectInvalid(s.complete({ ...complete, executionId: "" }), "executionId", "complete, empty id")
      for (const [what, result] of nonJsonValues) {
        yield* expectInvalid(s.complete({ ...complete, result }), "result", `complete, result ${what}`)
      }
      yield* expectInvalid(s.get("", c.executionId), "tenantId", "get, empty tenant")
      yield* expectInvalid(s.deleteRoot(c.tenantId, ""), "rootExecutionId", "deleteRoot, empty root")
      assert.deepStrictEqual(some(yield* s.get(c.tenantId, c.executionId), "get"), got, "no bad call changed the claim")
    })
  })
}
