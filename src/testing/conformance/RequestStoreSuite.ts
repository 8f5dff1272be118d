/**
 * Conformance suite for {@link RequestStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Option } from "effect"
import { type ClaimResult, type RequestClaim, RequestStore } from "../../stores/RequestStore.ts"
import { deleteAllInPages, expectInvalid, expectTag, failures, illFormedIds, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineServiceSuite } from "./SuiteDefinition.ts"

/** Times far from the delete test's (which deletes what expired by `early`). */
const base = 1_000_000_000_000
const early = 1_000
const ttl = 60_000

const existing = (result: ClaimResult) => {
  if (result._tag !== "Existing") return assert.fail(`expected Existing, got ${result._tag}`)
  return result.entry
}

/**
 * Registers the RequestStore conformance tests (call it at the top level of
 * a vitest file).
 *
 * @category conformance
 * @since 0.1.0
 */
export const requestStoreSuite = (options: SuiteOptions<RequestStore>): void => {
  const { ids, racers, register } = defineServiceSuite(options, "RequestStore", RequestStore)
  const claimOf = (over: Partial<RequestClaim> = {}): RequestClaim => ({
    tenantId: ids("tenant"),
    requestKey: ids("req"),
    fingerprint: "start:triage:abc",
    handle: { executionId: ids("exec"), threadId: ids("thread") },
    now: base,
    ttlMillis: ttl,
    ...over
  })

  register((test) => {
    test("the first claim of a key wins; a repeat on any instance gets the first handle, also before any answer", function*(stores) {
      const first = claimOf()
      assert.deepStrictEqual(yield* stores.first.claim(first), { _tag: "Claimed" })
      const again = existing(yield* stores.second.claim({ ...first, handle: { executionId: "other" }, now: base + 5 }))
      assert.deepStrictEqual(again.handle, first.handle)
      assert.isFalse(again.answered, "the first caller has not answered (it may have died after starting)")
      assert.strictEqual(again.answer, null)
      assert.strictEqual(again.createdAt, base)
      assert.strictEqual(again.expiresAt, base + ttl)
      assert.isTrue(Option.isNone(yield* stores.first.get(ids("tenant"), first.requestKey, base)), "keys are per tenant")
    })

    test(`of ${racers} racing claims of one key exactly one wins and every other gets its handle`, function*(stores) {
      const shared = claimOf()
      const exits = yield* race(racers, (i) => stores.at(i).claim({ ...shared, handle: { racer: i } }))
      const results = successes(exits)
      assert.strictEqual(results.length, racers, "no racer fails")
      const winners = results.flatMap((r, i) => (r._tag === "Claimed" ? [i] : []))
      assert.strictEqual(winners.length, 1)
      for (const r of results) if (r._tag === "Existing") assert.deepStrictEqual(r.entry.handle, { racer: winners[0] })
      assert.deepStrictEqual(some(yield* stores.second.get(shared.tenantId, shared.requestKey, base), "get").handle, { racer: winners[0] })
    })

    test("the same key for another request is refused with RequestConflictError, racing or not, and the first stays", function*(stores) {
      const shared = claimOf()
      const exits = yield* race(racers, (i) => stores.at(i).claim({ ...shared, fingerprint: `request-${i % 2}`, handle: { racer: i } }))
      const won = successes(exits).filter((r) => r._tag === "Claimed")
      assert.strictEqual(won.length, 1)
      const kept = some(yield* stores.first.get(shared.tenantId, shared.requestKey, base), "get")
      const refused = failures(exits)
      assert.isTrue(refused.length >= 1, "the other request's racers are refused")
      for (const e of refused) assert.strictEqual((e as { _tag: string })._tag, "RequestConflictError")
      for (const r of successes(exits)) if (r._tag === "Existing") assert.strictEqual(r.entry.fingerprint, kept.fingerprint)
      const other = kept.fingerprint === "request-0" ? "request-1" : "request-0"
      const e = yield* expectTag(stores.second.claim({ ...shared, fingerprint: other }), "RequestConflictError", "another request")
      assert.strictEqual(e.requestKey, shared.requestKey)
      assert.deepStrictEqual(some(yield* stores.second.get(shared.tenantId, shared.requestKey, base), "get"), kept)
    })

    test("an expired key is free: get answers none and a new claim (even of another request) wins", function*(stores) {
      const first = claimOf()
      yield* stores.first.claim(first)
      const at = base + ttl
      assert.isTrue(Option.isNone(yield* stores.second.get(first.tenantId, first.requestKey, at)), "expired at expiresAt")
      const next = { ...first, fingerprint: "another", handle: { n: 2 }, now: at }
      assert.deepStrictEqual(yield* stores.second.claim(next), { _tag: "Claimed" })
      assert.deepStrictEqual(existing(yield* stores.first.claim({ ...next, now: at + 1 })).handle, { n: 2 })
    })

    test("recordAnswer keeps the answer for the claim with that handle; later repeats get it", function*(stores) {
      const first = claimOf()
      yield* stores.first.claim(first)
      assert.isFalse(yield* stores.second.recordAnswer(first.tenantId, first.requestKey, { other: true }, "x", base + 1), "another handle")
      const answer = { _tag: "Finished", output: { log: ["a"] } }
      assert.isTrue(yield* stores.second.recordAnswer(first.tenantId, first.requestKey, first.handle, answer, base + 1))
      const repeat = existing(yield* stores.first.claim({ ...first, now: base + 2 }))
      assert.isTrue(repeat.answered)
      assert.deepStrictEqual(repeat.answer, answer)
      assert.isFalse(yield* stores.first.recordAnswer(first.tenantId, first.requestKey, first.handle, answer, base + ttl), "expired")
      assert.isFalse(yield* stores.first.recordAnswer(first.tenantId, ids("req"), first.handle, answer, base), "unknown key")
    })

    test("get answers the live key as a repeat's claim sees it — fingerprint, handle, answer once recorded — and none for an unknown, expired or other tenant's key", function*(stores) {
      const first = claimOf()
      yield* stores.first.claim(first)
      const before = some(yield* stores.second.get(first.tenantId, first.requestKey, base + 1), "get before the answer")
      assert.deepStrictEqual(before, {
        tenantId: first.tenantId,
        requestKey: first.requestKey,
        fingerprint: first.fingerprint,
        handle: first.handle,
        answer: null,
        answered: false,
        createdAt: base,
        expiresAt: base + ttl
      })
      const answer = { _tag: "Finished", output: { log: ["a"] } }
      yield* stores.first.recordAnswer(first.tenantId, first.requestKey, first.handle, answer, base + 2)
      const after = some(yield* stores.second.get(first.tenantId, first.requestKey, base + 3), "get after the answer")
      assert.deepStrictEqual(after, { ...before, answer, answered: true })
      assert.deepStrictEqual(after, existing(yield* stores.first.claim({ ...first, now: base + 3 })), "what a repeated claim answers")
      assert.isTrue(Option.isNone(yield* stores.first.get(first.tenantId, ids("req"), base)), "unknown key")
      assert.isTrue(Option.isNone(yield* stores.first.get(ids("tenant"), first.requestKey, base)), "another tenant's")
      assert.isTrue(Option.isNone(yield* stores.first.get(first.tenantId, first.requestKey, base + ttl)), "expired at expiresAt")
    })

    test("deleteExpired deletes at most `limit` expired keys per call, never a live one", function*(stores) {
      const tenantId = ids("tenant")
      const expiring = [0, 1, 2].map(() => claimOf({ tenantId, now: 0, ttlMillis: early / 2 }))
      const live = claimOf({ tenantId, now: 0, ttlMillis: base })
      for (const c of [...expiring, live]) yield* stores.first.claim(c)
      assert.strictEqual(yield* stores.second.deleteExpired(early, 2), 2)
      assert.isTrue(2 + (yield* deleteAllInPages((limit) => stores.first.deleteExpired(early, limit), 2)) >= 3)
      for (const c of expiring) assert.deepStrictEqual(yield* stores.first.claim({ ...c, now: early, handle: "again" }), { _tag: "Claimed" })
      assert.isTrue(Option.isSome(yield* stores.second.get(tenantId, live.requestKey, early)), "the live key stays")
    })

    test("bad input is refused with InvalidInputError naming the field", function*(stores) {
      const s = stores.first
      yield* expectInvalid(s.claim(claimOf({ requestKey: "" })), "requestKey", "empty key")
      yield* expectInvalid(s.claim(claimOf({ fingerprint: "" })), "fingerprint", "empty fingerprint")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.claim(claimOf({ tenantId: bad })), "tenantId", `tenant with ${what}`)
        yield* expectInvalid(s.claim(claimOf({ requestKey: bad })), "requestKey", `key with ${what}`)
        yield* expectInvalid(s.claim(claimOf({ fingerprint: bad })), "fingerprint", `fingerprint with ${what}`)
        yield* expectInvalid(s.get(bad, "k", base), "tenantId", `get, tenant with ${what}`)
      }
      yield* expectInvalid(s.claim(claimOf({ handle: 10n })), "handle", "not JSON")
      yield* expectInvalid(s.claim(claimOf({ ttlMillis: 0 })), "ttlMillis", "no ttl")
      yield* expectInvalid(s.claim(claimOf({ now: Number.NaN })), "now", "NaN now")
      yield* expectInvalid(s.deleteExpired(base, 0), "limit", "limit 0")
      yield* expectInvalid(s.get("", "k", base), "tenantId", "empty tenant")
    })

    test("deleteThread deletes every key whose handle names the thread, live or expired, and no other", function*(stores) {
      const tenantId = ids("tenant")
      const threadId = ids("thread")
      const live = claimOf({ tenantId, handle: { executionId: ids("exec"), threadId } })
      const expired = claimOf({ tenantId, handle: { pauseId: "p", executionId: ids("exec"), threadId }, now: base - ttl - 1 })
      const other = claimOf({ tenantId })
      const otherTenant = claimOf({ handle: { executionId: ids("exec"), threadId } })
      for (const c of [live, expired, other, otherTenant]) assert.deepStrictEqual(yield* stores.first.claim(c), { _tag: "Claimed" })
      assert.strictEqual(yield* stores.second.deleteThread(tenantId, threadId), 2)
      assert.isTrue(Option.isNone(yield* stores.first.get(tenantId, live.requestKey, base)), "the live key is free again")
      assert.isTrue(Option.isSome(yield* stores.first.get(tenantId, other.requestKey, base)), "another thread's key stays")
      assert.isTrue(Option.isSome(yield* stores.first.get(otherTenant.tenantId, otherTenant.requestKey, base)), "another tenant's stays")
      assert.strictEqual(yield* stores.first.deleteThread(tenantId, threadId), 0, "again: nothing")
      yield* expectInvalid(stores.first.deleteThread(tenantId, ""), "threadId", "deleteThread, empty thread")
    })
  })
}
