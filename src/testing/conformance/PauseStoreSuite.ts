/**
 * Conformance suite for {@link PauseStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import type { LeaseStore } from "../../stores/LeaseStore.ts"
import type { Pause, PauseStatus } from "../../stores/Pause.ts"
import { PauseStore, type PauseStoreShape } from "../../stores/PauseStore.ts"
import {
  badIds,
  expectInvalid,
  expectTag,
  failures,
  longestId,
  none,
  nonJsonValues,
  now,
  race,
  some,
  successes,
  type SuiteOptions
} from "./Suite.ts"
import { defineLeasedSuite, type WithLeases } from "./SuiteDefinition.ts"

/** The pause store, and the lease store its fenced save checks. */
type Leased = WithLeases<PauseStoreShape>

/**
 * Registers the PauseStore conformance tests (call it at the top level of a
 * vitest file). The Layer provides `LeaseStore` too: a fenced save checks
 * the tree's lease in the same atomic step.
 *
 * @category conformance
 * @since 0.1.0
 */
export const pauseStoreSuite = (options: SuiteOptions<PauseStore | LeaseStore>): void => {
  const { ids, racers, register } = defineLeasedSuite(options, "PauseStore", PauseStore)
  const base = 1_000_000_000_000
  const ttl = 30_000

  const pending = (tenantId: string, rootExecutionId: string, at: number, over: Partial<Pause> = {}): Pause => ({
    tenantId,
    threadId: ids("thread"),
    pauseId: ids("pause"),
    rootExecutionId,
    executionId: rootExecutionId,
    interruptId: ids("interrupt"),
    payload: { question: "approve?", amount: 42, tags: ["a", "b"], nested: { ok: true, none: null } },
    status: "Pending",
    decision: null,
    createdAt: at,
    resolvedAt: null,
    resolvedBy: null,
    ...over
  })

  /** A saved pending pause of a fresh tenant and tree. */
  const saved = Effect.fnUntraced(function*(s: PauseStoreShape, over: Partial<Pause> = {}) {
    const p = pending(ids("tenant"), ids("root"), yield* now, over)
    assert.isTrue(yield* s.save(p), "save a new pause")
    return p
  })

  /** A store without a fenced save (`fenced: false`): `saveFenced` is `save`, whatever the lease. */
  const unfencedSave = Effect.fnUntraced(function*(s: Leased) {
    const tenantId = ids("tenant")
    const root = ids("root")
    const lease = some(yield* s.leases.acquire(tenantId, root, "holder-1", ttl, base), "acquire")
    some(yield* s.leases.acquire(tenantId, root, "holder-2", ttl, base + ttl + 1), "takeover")
    const p = pending(tenantId, root, base + ttl + 2)
    assert.isTrue(yield* s.saveFenced(p, lease, base + ttl + 2), "an unfenced store saves a stale holder's pause, as save does")
    assert.isFalse(yield* s.saveFenced(p, lease, base + ttl + 2), "once")
    assert.deepStrictEqual(some(yield* s.get(tenantId, p.pauseId), "get"), p)
  })

  register((test) => {
    test("save writes a Pending pause once; a second save of the id is refused and changes nothing", function*(stores) {
      const p = yield* saved(stores.first)
      assert.isFalse(yield* stores.second.save({ ...p, payload: "other", interruptId: "other" }))
      assert.deepStrictEqual(some(yield* stores.second.get(p.tenantId, p.pauseId), "get"), p)
      none(yield* stores.first.get(p.tenantId, ids("pause")), "an unknown pause")
    })

    test("saveFenced writes a Pending pause once under its tree's current lease; a stale, expired or released holder gets LeaseLostError and writes nothing", function*(stores) {
      if (!stores.first.fenced) return yield* unfencedSave(stores.first)
      const tenantId = ids("tenant")
      const root = ids("root")
      const lease = some(yield* stores.first.leases.acquire(tenantId, root, "holder-1", ttl, base), "acquire")
      const p = pending(tenantId, root, base + 1)
      assert.isTrue(yield* stores.second.saveFenced(p, lease, base + 1), "the holder's save")
      assert.isFalse(yield* stores.first.saveFenced({ ...p, payload: "other" }, lease, base + 2), "an id that exists is kept")
      assert.deepStrictEqual(some(yield* stores.first.get(tenantId, p.pauseId), "get"), p)
      const refusedWith = Effect.fnUntraced(function*(s: Leased, at: number, by: typeof lease, what: string) {
        const q = pending(tenantId, root, at)
        const error = yield* expectTag(s.saveFenced(q, by, at), "LeaseLostError", what)
        assert.strictEqual(error.holder, by.holder, `${what}: names the refused holder`)
        assert.strictEqual(error.epoch, by.epoch, `${what}: names the refused epoch`)
        none(yield* stores.first.get(tenantId, q.pauseId), `${what}: nothing written`)
      })
      yield* refusedWith(stores.first, base + ttl, lease, "at the lease's expiry")
      const next = some(yield* stores.second.leases.acquire(tenantId, root, "holder-2", ttl, base + ttl + 1), "takeover")
      yield* refusedWith(stores.first, base + ttl + 2, lease, "the old holder after a takeover")
      const fresh = pending(tenantId, root, base + ttl + 2)
      assert.isTrue(yield* stores.second.saveFenced(fresh, next, base + ttl + 2), "the new holder's save")
      assert.isTrue(yield* stores.second.leases.release(next))
      yield* refusedWith(stores.second, base + ttl + 3, next, "a released lease")
      const unleased = ids("root")
      const noLease = { ...lease, rootExecutionId: unleased }
      const q = pending(tenantId, unleased, base + 4)
      yield* expectTag(stores.first.saveFenced(q, noLease, base + 4), "LeaseLostError", "a tree never leased")
      none(yield* stores.first.get(tenantId, q.pauseId), "a tree never leased: nothing written")
      assert.deepStrictEqual(
        (yield* stores.first.listByRoot(tenantId, root, ["Pending", "Resolved", "Taken", "Cancelled"])).map((x) => x.pauseId),
        [p.pauseId, fresh.pauseId],
        "no refused save landed"
      )
    })

    test(`saveFenced: of ${racers} racers saving one pause under one lease exactly one writes`, function*(stores) {
      const tenantId = ids("tenant")
      const root = ids("root")
      const lease = some(yield* stores.first.leases.acquire(tenantId, root, "holder-1", ttl, base), "acquire")
      const p = pending(tenantId, root, base + 1)
      const exits = yield* race(racers, (i) => stores.at(i).saveFenced({ ...p, payload: { racer: i } }, lease, base + 1))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers, "no racer is refused under the live lease")
      assert.strictEqual(answers.filter((won) => won).length, 1, "exactly one fenced save writes")
    })

    test(`resolve: of ${racers} racers exactly one records its decision, the rest get NotPausedError`, function*(stores) {
      const p = yield* saved(stores.first)
      yield* TestClock.adjust(5_000)
      const t = yield* now
      const exits = yield* race(racers, (i) =>
        stores.at(i).resolve({
          tenantId: p.tenantId,
          pauseId: p.pauseId,
          decision: { approved: i % 2 === 0, by: i },
          resolvedBy: `instance${i}`,
          now: t
        }))
      const won = successes(exits)
      assert.strictEqual(won.length, 1, "exactly one resolve succeeds")
      const lost = failures(exits)
      assert.strictEqual(lost.length, racers - 1)
      for (const e of lost) {
        assert.strictEqual(e._tag, "NotPausedError")
        if (e._tag === "NotPausedError") {
          assert.strictEqual(e.pauseId, p.pauseId)
          assert.strictEqual(e.tenantId, p.tenantId)
          assert.strictEqual(e.status, "Resolved")
        }
      }
      const winner = won[0]!
      const by = (winner.decision as { by: number }).by
      const expected: Pause = {
        ...p,
        status: "Resolved",
        decision: { approved: by % 2 === 0, by },
        resolvedAt: t,
        resolvedBy: `instance${by}`
      }
      assert.deepStrictEqual(winner, expected, "resolve answers the resolved pause")
      assert.deepStrictEqual(some(yield* stores.first.get(p.tenantId, p.pauseId), "get"), expected)
    })

    test("resolve of an unknown id, or of another tenant's pause, fails with UnknownPauseError", function*(stores) {
      const p = yield* saved(stores.first)
      const t = yield* now
      const unknown = yield* expectTag(
        stores.second.resolve({ tenantId: p.tenantId, pauseId: ids("pause"), decision: 1, resolvedBy: "i", now: t }),
        "UnknownPauseError",
        "resolve, unknown id"
      )
      assert.strictEqual(unknown.tenantId, p.tenantId)
      const other = ids("tenant")
      const foreign = yield* expectTag(
        stores.second.resolve({ tenantId: other, pauseId: p.pauseId, decision: 1, resolvedBy: "i", now: t }),
        "UnknownPauseError",
        "resolve, another tenant's pause"
      )
      assert.strictEqual(foreign.tenantId, other)
      assert.strictEqual(foreign.pauseId, p.pauseId)
      assert.deepStrictEqual(some(yield* stores.first.get(p.tenantId, p.pauseId), "get"), p, "still Pending")
    })

    test(`take moves Resolved to Taken for exactly one of ${racers} racers; never a Pending one`, function*(stores) {
      const p = yield* saved(stores.first)
      assert.isFalse(yield* stores.second.take(p.tenantId, p.pauseId), "a Pending pause cannot be taken")
      assert.isFalse(yield* stores.second.take(p.tenantId, ids("pause")), "an unknown pause cannot be taken")
      const t = yield* now
      const resolved = yield* stores.first.resolve({ tenantId: p.tenantId, pauseId: p.pauseId, decision: "yes", resolvedBy: "a", now: t })
      const exits = yield* race(racers, (i) => stores.at(i).take(p.tenantId, p.pauseId))
      assert.strictEqual(successes(exits).filter((taken) => taken).length, 1, "exactly one take succeeds")
      assert.deepStrictEqual(some(yield* stores.first.get(p.tenantId, p.pauseId), "get"), { ...resolved, status: "Taken" })
      yield* expectTag(
        stores.second.resolve({ tenantId: p.tenantId, pauseId: p.pauseId, decision: "again", resolvedBy: "b", now: t }),
        "NotPausedError",
        "resolve after take"
      )
    })

    test("withdraw moves Pending or Resolved to Cancelled; not a Taken or Cancelled one", function*(stores) {
      const a = yield* saved(stores.first)
      yield* TestClock.adjust(1_000)
      const t = yield* now
      assert.isTrue(yield* stores.second.withdraw(a.tenantId, a.pauseId, t), "withdraw a Pending pause")
      const cancelled = some(yield* stores.first.get(a.tenantId, a.pauseId), "get")
      assert.strictEqual(cancelled.status, "Cancelled")
      assert.strictEqual(cancelled.resolvedAt, t)
      assert.isFalse(yield* stores.second.withdraw(a.tenantId, a.pauseId, t), "withdraw a Cancelled pause")
      const notPaused = yield* expectTag(
        stores.first.resolve({ tenantId: a.tenantId, pauseId: a.pauseId, decision: 1, resolvedBy: "x", now: t }),
        "NotPausedError",
        "resolve after withdraw"
      )
      assert.strictEqual(notPaused.status, "Cancelled")
      assert.isFalse(yield* stores.first.take(a.tenantId, a.pauseId), "take a Cancelled pause")

      const b = yield* saved(stores.first)
      yield* stores.first.resolve({ tenantId: b.tenantId, pauseId: b.pauseId, decision: 1, resolvedBy: "x", now: t })
      assert.isTrue(yield* stores.second.withdraw(b.tenantId, b.pauseId, t), "withdraw a Resolved pause")
      assert.strictEqual(some(yield* stores.first.get(b.tenantId, b.pauseId), "get").status, "Cancelled")
      assert.isFalse(yield* stores.first.take(b.tenantId, b.pauseId), "a withdrawn decision cannot be taken")

      const c = yield* saved(stores.first)
      yield* stores.first.resolve({ tenantId: c.tenantId, pauseId: c.pauseId, decision: 1, resolvedBy: "x", now: t })
      assert.isTrue(yield* stores.first.take(c.tenantId, c.pauseId))
      assert.isFalse(yield* stores.second.withdraw(c.tenantId, c.pauseId, t), "withdraw a Taken pause")
      assert.strictEqual(some(yield* stores.first.get(c.tenantId, c.pauseId), "get").status, "Taken")
      assert.isFalse(yield* stores.second.withdraw(c.tenantId, ids("pause"), t), "withdraw an unknown pause")
    })

    test("listByRoot answers the tree's pauses in the given statuses, oldest first", function*(stores) {
      const tenantId = ids("tenant")
      const root = ids("root")
      const t = yield* now
      const make = (at: number) => pending(tenantId, root, at, { executionId: ids("exec") })
      // saved out of age order
      const [p3, p1, p2, p4] = [make(t + 3), make(t + 1), make(t + 2), make(t + 4)]
      for (const p of [p3, p1, p2, p4]) assert.isTrue(yield* stores.first.save(p))
      assert.isTrue(yield* stores.first.save(pending(tenantId, ids("root"), t)), "another tree")
      assert.isTrue(yield* stores.first.save(pending(ids("tenant"), root, t)), "another tenant's tree with the same root id")
      const r2 = yield* stores.first.resolve({ tenantId, pauseId: p2.pauseId, decision: "ok", resolvedBy: "x", now: t })
      const r3 = yield* stores.first.resolve({ tenantId, pauseId: p3.pauseId, decision: "no", resolvedBy: "x", now: t })
      assert.isTrue(yield* stores.first.take(tenantId, p3.pauseId))
      assert.isTrue(yield* stores.first.withdraw(tenantId, p4.pauseId, t))
      const s = stores.second
      const list = (statuses: ReadonlyArray<PauseStatus>) => s.listByRoot(tenantId, root, statuses)
      assert.deepStrictEqual(yield* list(["Pending"]), [p1])
      assert.deepStrictEqual(yield* list(["Resolved"]), [r2])
      assert.deepStrictEqual(yield* list(["Pending", "Resolved"]), [p1, r2])
      assert.deepStrictEqual((yield* list(["Taken", "Cancelled", "Resolved", "Pending"])).map((p) => p.pauseId), [
        p1.pauseId,
        r2.pauseId,
        r3.pauseId,
        p4.pauseId
      ])
      assert.deepStrictEqual(yield* s.listByRoot(ids("tenant"), root, ["Pending"]), [], "another tenant sees none")
    })

    test("findResolvedRoots pages over the distinct trees with a decision not yet taken, in (tenant, root) order", function*(stores) {
      const t = yield* now
      const tenant = ids("tenant")
      const roots = [ids("root"), ids("root"), ids("root"), ids("root"), ids("root")]
      const resolve = (p: Pause) => stores.second.resolve({ tenantId: p.tenantId, pauseId: p.pauseId, decision: "yes", resolvedBy: "i", now: t })
      // roots[0]: two resolved pauses (listed once); [1]: resolved then taken; [2]: pending only; [3]: resolved; [4]: withdrawn.
      const ps = [
        pending(tenant, roots[0]!, t), pending(tenant, roots[0]!, t), pending(tenant, roots[1]!, t),
        pending(tenant, roots[2]!, t), pending(tenant, roots[3]!, t), pending(tenant, roots[4]!, t)
      ]
      for (const p of ps) assert.isTrue(yield* stores.first.save(p))
      for (const i of [0, 1, 2, 4, 5]) yield* resolve(ps[i]!)
      assert.isTrue(yield* stores.first.take(tenant, ps[2]!.pauseId))
      assert.isTrue(yield* stores.first.withdraw(tenant, ps[5]!.pauseId, t))
      const seen: Array<{ tenantId: string; rootExecutionId: string }> = []
      let after = Option.none<{ tenantId: string; rootExecutionId: string }>()
      while (true) {
        const page = yield* stores.at(seen.length).findResolvedRoots(2, after)
        assert.isAtMost(page.length, 2)
        seen.push(...page)
        if (page.length < 2) break
        after = Option.some(page[page.length - 1]!)
      }
      const order = (r: { tenantId: string; rootExecutionId: string }) => JSON.stringify([r.tenantId, r.rootExecutionId])
      for (let i = 1; i < seen.length; i++) {
        const a = seen[i - 1]!
        const b = seen[i]!
        assert.isTrue(a.tenantId < b.tenantId || (a.tenantId === b.tenantId && a.rootExecutionId < b.rootExecutionId), `strictly ordered at ${order(b)}`)
      }
      assert.deepStrictEqual(
        seen.filter((r) => r.tenantId === tenant).map((r) => r.rootExecutionId),
        [roots[0]!, roots[3]!].sort(),
        "each tree with a Resolved pause once; none with only taken, pending or withdrawn ones"
      )
      yield* expectInvalid(stores.first.findResolvedRoots(0, Option.none()), "limit", "a zero limit")
    })

    test("deleteSettledBefore deletes old Taken and Cancelled pauses only", function*(stores) {
      const t0 = yield* now
      const resolve = (p: Pause, at: number) =>
        stores.first.resolve({ tenantId: p.tenantId, pauseId: p.pauseId, decision: "d", resolvedBy: "x", now: at })
      const oldPending = yield* saved(stores.first)
      const oldResolved = yield* saved(stores.first)
      const oldTaken = yield* saved(stores.first)
      const oldCancelled = yield* saved(stores.first)
      const oldCancelledResolved = yield* saved(stores.first)
      const atCutoff = yield* saved(stores.first)
      const recentTaken = yield* saved(stores.first)
      yield* resolve(oldResolved, t0)
      yield* resolve(oldTaken, t0)
      assert.isTrue(yield* stores.first.take(oldTaken.tenantId, oldTaken.pauseId))
      assert.isTrue(yield* stores.first.withdraw(oldCancelled.tenantId, oldCancelled.pauseId, t0))
      yield* resolve(oldCancelledResolved, t0)
      assert.isTrue(yield* stores.first.withdraw(oldCancelledResolved.tenantId, oldCancelledResolved.pauseId, t0))
      yield* TestClock.adjust(10_000)
      const cutoff = yield* now
      yield* resolve(atCutoff, cutoff)
      assert.isTrue(yield* stores.first.take(atCutoff.tenantId, atCutoff.pauseId))
      yield* TestClock.adjust(10_000)
      yield* resolve(recentTaken, yield* now)
      assert.isTrue(yield* stores.first.take(recentTaken.tenantId, recentTaken.pauseId))
      // long after: the old Pending and Resolved ones are still waiting for their holder
      yield* TestClock.adjust("48 hours")

      const deleted = yield* stores.second.deleteSettledBefore(cutoff)
      assert.isAtLeast(deleted, 3, "the three old settled pauses (rows of other tests may go too)")
      const exists = (p: Pause) => Effect.map(stores.first.get(p.tenantId, p.pauseId), (o) => o._tag === "Some")
      assert.isFalse(yield* exists(oldTaken), "an old Taken pause is deleted")
      assert.isFalse(yield* exists(oldCancelled), "an old withdrawn Pending pause is deleted")
      assert.isFalse(yield* exists(oldCancelledResolved), "an old withdrawn Resolved pause is deleted")
      assert.isTrue(yield* exists(oldPending), "a Pending pause is never deleted")
      assert.isTrue(yield* exists(oldResolved), "a Resolved decision not yet taken is never deleted")
      assert.isTrue(yield* exists(atCutoff), "resolved exactly at the cutoff is not before it")
      assert.isTrue(yield* exists(recentTaken), "a recent Taken pause is kept")
      assert.strictEqual(yield* stores.second.deleteSettledBefore(cutoff), 0, "nothing more to delete")
      const later = yield* stores.first.deleteSettledBefore(yield* now)
      assert.isAtLeast(later, 2)
      assert.isTrue(yield* exists(oldPending), "a Pending pause is never deleted")
      assert.isTrue(yield* exists(oldResolved), "a Resolved decision not yet taken is never deleted")
      assert.isFalse(yield* exists(recentTaken))
    })

    test("every read is isolated by tenant: another tenant sees nothing and changes nothing", function*(stores) {
      const p = yield* saved(stores.first)
      const other = ids("tenant")
      const s = stores.second
      const t = yield* now
      none(yield* s.get(other, p.pauseId), "get, another tenant")
      assert.isFalse(yield* s.withdraw(other, p.pauseId, t), "withdraw, another tenant")
      assert.deepStrictEqual(yield* s.listByRoot(other, p.rootExecutionId, ["Pending", "Resolved", "Taken", "Cancelled"]), [])
      yield* stores.first.resolve({ tenantId: p.tenantId, pauseId: p.pauseId, decision: "d", resolvedBy: "x", now: t })
      assert.isFalse(yield* s.take(other, p.pauseId), "take, another tenant")
      assert.strictEqual(some(yield* s.get(p.tenantId, p.pauseId), "get").status, "Resolved", "unchanged by the other tenant")
      assert.isTrue(yield* s.save({ ...p, tenantId: other }), "the same pause id is free under another tenant")
      assert.strictEqual(some(yield* s.get(other, p.pauseId), "theirs").status, "Pending")
    })

    test("pause ids up to 200 characters are kept; longer ones, or ones holding NUL, fail with InvalidInputError before any write", function*({ first: s, second }) {
      const t = yield* now
      const p = pending(longestId(ids("tenant")), longestId(ids("root")), t, { pauseId: longestId(ids("pause")) })
      assert.isTrue(yield* s.save(p))
      assert.deepStrictEqual(some(yield* second.get(p.tenantId, p.pauseId), "the longest ids"), p)
      for (const [what, bad] of badIds) {
        const fresh = pending(p.tenantId, p.rootExecutionId, t)
        yield* expectInvalid(s.save({ ...fresh, pauseId: bad }), "pauseId", `save, pause id of ${what}`)
        yield* expectInvalid(s.save({ ...fresh, threadId: bad }), "threadId", `save, thread of ${what}`)
        yield* expectInvalid(s.save({ ...fresh, tenantId: bad }), "tenantId", `save, tenant of ${what}`)
        none(yield* s.get(p.tenantId, fresh.pauseId), `no save with an id of ${what} wrote the pause`)
        yield* expectInvalid(s.get(p.tenantId, bad), "pauseId", `get, pause id of ${what}`)
        yield* expectInvalid(
          s.resolve({ tenantId: p.tenantId, pauseId: bad, decision: 1, resolvedBy: "x", now: t }),
          "pauseId",
          `resolve, pause id of ${what}`
        )
      }
      assert.deepStrictEqual(yield* s.listByRoot(p.tenantId, p.rootExecutionId, ["Pending"]), [p])
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*({ first: s }) {
      const t = yield* now
      const p = pending(ids("tenant"), ids("root"), t)
      const bad: Array<[Partial<Record<keyof Pause, unknown>>, string]> = [
        [{ tenantId: "" }, "tenantId"],
        [{ threadId: "" }, "threadId"],
        [{ pauseId: "" }, "pauseId"],
        [{ rootExecutionId: "" }, "rootExecutionId"],
        [{ executionId: "" }, "executionId"],
        [{ interruptId: "" }, "interruptId"],
        [{ status: "Resolved" }, "status"],
        [{ createdAt: Number.NaN }, "createdAt"],
        ...nonJsonValues.map(([, payload]): [Partial<Record<keyof Pause, unknown>>, string] => [{ payload }, "payload"])
      ]
      for (const [over, field] of bad) {
        yield* expectInvalid(s.save({ ...p, ...over } as Pause), field, `save, bad ${field}`)
      }
      none(yield* s.get(p.tenantId, p.pauseId), "no bad save wrote the pause")
      const lease = { tenantId: p.tenantId, rootExecutionId: p.rootExecutionId, holder: "h", epoch: 1, expiresAt: t + ttl }
      const badFenced: Array<[unknown, number, string]> = [
        [{ ...lease, epoch: 0 }, t, "lease.epoch"],
        [{ ...lease, holder: "" }, t, "lease.holder"],
        [{ ...lease, tenantId: ids("tenant") }, t, "lease.tenantId"],
        [{ ...lease, rootExecutionId: ids("root") }, t, "lease.rootExecutionId"],
        [undefined, t, "lease.tenantId"],
        [lease, Number.NaN, "now"]
      ]
      for (const [badLease, at, field] of badFenced) {
        yield* expectInvalid(s.saveFenced(p, badLease as typeof lease, at), field, `saveFenced, bad ${field}`)
      }
      yield* expectInvalid(s.saveFenced({ ...p, status: "Resolved" }, lease, t), "status", "saveFenced, bad status")
      yield* expectInvalid(s.saveFenced({ ...p, payload: 1n }, lease, t), "payload", "saveFenced, bad payload")
      none(yield* s.get(p.tenantId, p.pauseId), "no bad saveFenced wrote the pause")

      assert.isTrue(yield* s.save(p))
      const resolve = { tenantId: p.tenantId, pauseId: p.pauseId, decision: "ok" as unknown, resolvedBy: "x", now: t }
      for (const [what, decision] of nonJsonValues) {
        yield* expectInvalid(s.resolve({ ...resolve, decision }), "decision", `resolve, decision ${what}`)
      }
      yield* expectInvalid(s.resolve({ ...resolve, tenantId: "" }), "tenantId", "resolve, empty tenant")
      yield* expectInvalid(s.resolve({ ...resolve, pauseId: "" }), "pauseId", "resolve, empty pause")
      yield* expectInvalid(s.resolve({ ...resolve, resolvedBy: "" }), "resolvedBy", "resolve, empty resolvedBy")
      yield* expectInvalid(s.resolve({ ...resolve, now: Number.NaN }), "now", "resolve, now NaN")
      yield* expectInvalid(s.withdraw(p.tenantId, p.pauseId, -1), "now", "withdraw, now -1")
      yield* expectInvalid(s.withdraw(p.tenantId, "", t), "pauseId", "withdraw, empty pause")
      yield* expectInvalid(s.take("", p.pauseId), "tenantId", "take, empty tenant")
      yield* expectInvalid(s.get(p.tenantId, ""), "pauseId", "get, empty pause")
      yield* expectInvalid(s.listByRoot(p.tenantId, "", ["Pending"]), "rootExecutionId", "listByRoot, empty root")
      yield* expectInvalid(s.listByRoot(p.tenantId, p.rootExecutionId, ["Asleep" as PauseStatus]), "statuses", "listByRoot, bad status")
      yield* expectInvalid(s.deleteSettledBefore(Number.NaN), "cutoff", "deleteSettledBefore, NaN")
      assert.deepStrictEqual(some(yield* s.get(p.tenantId, p.pauseId), "get"), p, "no bad call changed the pause")
    })

    test("deleteThread deletes every pause of the thread, whatever its status, and no other (another thread, another tenant)", function*(stores) {
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const t = yield* now
      const ofThread = [0, 1, 2].map((i) => pending(tenantId, ids("root"), t + i, { threadId }))
      const other = pending(tenantId, ids("root"), t, {})
      const otherTenant = pending(ids("tenant"), ids("root"), t, { threadId })
      for (const p of [...ofThread, other, otherTenant]) assert.isTrue(yield* stores.first.save(p))
      yield* stores.first.resolve({ tenantId, pauseId: ofThread[1]!.pauseId, decision: "yes", resolvedBy: "i", now: t + 5 })
      yield* stores.first.withdraw(tenantId, ofThread[2]!.pauseId, t + 6)
      assert.strictEqual(yield* stores.second.deleteThread(tenantId, threadId), 3, "Pending, Resolved and Cancelled alike")
      for (const p of ofThread) assert.isTrue(Option.isNone(yield* stores.first.get(tenantId, p.pauseId)), "gone")
      assert.isTrue(Option.isSome(yield* stores.first.get(tenantId, other.pauseId)), "another thread's pause stays")
      assert.isTrue(Option.isSome(yield* stores.first.get(otherTenant.tenantId, otherTenant.pauseId)), "another tenant's stays")
      assert.strictEqual(yield* stores.first.deleteThread(tenantId, threadId), 0, "again: nothing")
      yield* expectInvalid(stores.first.deleteThread(tenantId, ""), "threadId", "deleteThread, empty thread")
    })
  })
}
