/**
 * Conformance suite for {@link ExecutionHistoryStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Effect, Option } from "effect"
import {
  exportJsonLines,
  ExecutionHistoryStore,
  type ExecutionHistoryStoreShape,
  type ExecutionSnapshot
} from "../../stores/ExecutionHistoryStore.ts"
import type { Lease } from "../../stores/Lease.ts"
import type { LeaseStore } from "../../stores/LeaseStore.ts"
import { deleteAllInPages, expectInvalid, expectTag, illFormedIds, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineLeasedSuite, freshLease, type WithLeases } from "./SuiteDefinition.ts"

/** Times far from the retention test's (which deletes below `oldEnough`). */
const base = 1_000_000_000_000
const oldEnough = 1_000_000

/**
 * Registers the ExecutionHistoryStore conformance tests (call it at the top
 * level of a vitest file). The Layer provides `LeaseStore` too: a snapshot is
 * saved under the tree's lease.
 *
 * @category conformance
 * @since 0.1.0
 */
export const executionHistoryStoreSuite = (options: SuiteOptions<ExecutionHistoryStore | LeaseStore>): void => {
  const { ids, racers, register } = defineLeasedSuite(options, "ExecutionHistoryStore", ExecutionHistoryStore)
  const ttl = 30_000

  const snapshotOf = (lease: Lease, over: Partial<ExecutionSnapshot> = {}): ExecutionSnapshot => ({
    tenantId: lease.tenantId,
    executionId: lease.rootExecutionId,
    threadId: ids("thread"),
    workflowName: "triage",
    workflowVersion: "1",
    configHash: "abc123",
    inputHash: "f00d",
    status: "Finished",
    error: null,
    startedAt: base,
    endedAt: base + 5_000,
    steps: [
      { node: "draft", idempotencyKey: "k/1", attempt: 1, instanceId: "i-1", startedAt: base + 1, endedAt: null, outcome: "Unfinished" },
      { node: "draft", idempotencyKey: "k/1", attempt: 2, instanceId: "i-2", startedAt: base + 40_000, endedAt: base + 40_010, outcome: "Succeeded" }
    ],
    pauses: [{
      pauseId: "p-1",
      executionId: lease.rootExecutionId,
      payload: { question: "send?" },
      status: "Taken",
      decision: { approved: true },
      createdAt: base + 2,
      resolvedAt: base + 3,
      resolvedBy: "i-2"
    }],
    spend: null,
    endedBy: { holder: lease.holder, epoch: lease.epoch },
    // What a replay reads: kept whole like the rest.
    input: { topic: "tides" },
    output: { topic: "tides", summary: "…" },
    answers: [
      { node: "draft", visit: 1, ordinal: 0, provider: "llm", model: "m-1", answer: { text: "a", tokens: [1, 2] } },
      { node: "draft", visit: 1, ordinal: 1, provider: "llm", model: null, unrecordable: "JSON cannot write it (BigInt)" }
    ],
    ...over
  })

  /** A fresh tree's lease, held by `holder`, taken at `at`. */
  const leased = (stores: WithLeases<ExecutionHistoryStoreShape>, tenant: string, holder = "holder-1", at = base) =>
    freshLease(stores, tenant, ids("exec"), holder, ttl, at)

  register((test) => {
    test("a snapshot saved under the tree's lease reads back whole on every instance; a second save keeps the first", function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const snapshot = snapshotOf(lease)
      assert.isTrue(yield* stores.first.saveIfAbsent(snapshot, lease, base + 10))
      assert.isFalse(yield* stores.second.saveIfAbsent({ ...snapshot, status: "Failed", error: "boom" }, lease, base + 11))
      for (const s of [stores.first, stores.second]) {
        assert.deepStrictEqual(some(yield* s.get(lease.tenantId, lease.rootExecutionId), "get"), snapshot)
      }
      assert.isTrue(Option.isNone(yield* stores.first.get(ids("tenant"), lease.rootExecutionId)), "another tenant sees nothing")
    })

    test(`of ${racers} racing saves of one execution exactly one writes`, function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const exits = yield* race(racers, (i) => stores.at(i).saveIfAbsent(snapshotOf(lease, { error: `racer ${i}` }), lease, base + 10))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers, "no racer fails")
      const winners = answers.flatMap((won, i) => (won ? [i] : []))
      assert.strictEqual(winners.length, 1)
      const kept = some(yield* stores.second.get(lease.tenantId, lease.rootExecutionId), "get")
      assert.strictEqual(kept.error, `racer ${winners[0]}`)
    })

    test("a holder whose lease passed to another (or expired, or was released) is refused with LeaseLostError and writes nothing", function*(stores) {
      const tenant = ids("tenant")
      const old = yield* leased(stores.first, tenant, "old-holder")
      const expired = base + ttl
      yield* expectTag(stores.first.saveIfAbsent(snapshotOf(old), old, expired), "LeaseLostError", "save at the lease's expiry")
      const next = some(yield* stores.second.leases.acquire(tenant, old.rootExecutionId, "new-holder", ttl, expired + 1), "takeover")
      assert.strictEqual(next.epoch, old.epoch + 1)
      yield* expectTag(stores.first.saveIfAbsent(snapshotOf(old), old, expired + 2), "LeaseLostError", "stale holder")
      assert.isTrue(Option.isNone(yield* stores.first.get(tenant, old.rootExecutionId)), "nothing written")
      assert.isTrue(yield* stores.second.saveIfAbsent(snapshotOf(next), next, expired + 3))
      const released = yield* leased(stores.first, tenant)
      assert.isTrue(yield* stores.first.leases.release(released))
      yield* expectTag(stores.second.saveIfAbsent(snapshotOf(released), released, base + 1), "LeaseLostError", "released lease")
    })

    test("list: one tenant's snapshots in (endedAt, executionId) order, by workflow and time range, page by page", function*(stores) {
      const tenant = ids("tenant")
      const saved: Array<ExecutionSnapshot> = []
      for (let i = 0; i < 5; i++) {
        const lease = yield* leased(stores.at(i), tenant)
        const s = snapshotOf(lease, { endedAt: base + 100 * (i % 3), workflowName: i === 4 ? "other" : "triage" })
        assert.isTrue(yield* stores.at(i).saveIfAbsent(s, lease, base))
        saved.push(s)
      }
      const elsewhere = yield* leased(stores.first, ids("tenant"))
      yield* stores.first.saveIfAbsent(snapshotOf(elsewhere), elsewhere, base)
      const order = [...saved].sort((a, b) => a.endedAt - b.endedAt || (a.executionId < b.executionId ? -1 : 1)).map((s) => s.executionId)
      const pages: Array<string> = []
      let after: ExecutionSnapshot | undefined
      for (let n = 0; n < 4; n++) {
        const page = yield* stores.at(n).list({ tenantId: tenant, limit: 2, after })
        pages.push(...page.map((s) => s.executionId))
        if (page.length < 2) break
        after = page[page.length - 1]
      }
      assert.deepStrictEqual(pages, order, "every snapshot once, in order, across pages and instances")
      const triage = yield* stores.second.list({ tenantId: tenant, workflowName: "triage", limit: 10 })
      assert.deepStrictEqual(triage.map((s) => s.executionId), order.filter((id) => saved.find((s) => s.executionId === id)!.workflowName === "triage"))
      const ranged = yield* stores.first.list({ tenantId: tenant, from: base + 100, to: base + 200, limit: 10 })
      assert.deepStrictEqual(ranged.map((s) => s.executionId), saved.filter((s) => s.endedAt === base + 100).map((s) => s.executionId).sort())
    })

    test("deleteEndedBefore deletes at most `limit` per call, only what ended before the cutoff", function*(stores) {
      const tenant = ids("tenant")
      const kept: Array<string> = []
      const gone: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const lease = yield* leased(stores.at(i), tenant, "h", 0)
        const endedAt = i < 3 ? oldEnough - 10 + i : oldEnough + i
        yield* stores.at(i).saveIfAbsent(snapshotOf(lease, { startedAt: 0, endedAt }), lease, 0)
        ;(i < 3 ? gone : kept).push(lease.rootExecutionId)
      }
      assert.strictEqual(yield* stores.first.deleteEndedBefore(oldEnough, 2), 2, "a full page")
      assert.isTrue(2 + (yield* deleteAllInPages((limit) => stores.second.deleteEndedBefore(oldEnough, limit), 2)) >= 3)
      for (const id of gone) assert.isTrue(Option.isNone(yield* stores.first.get(tenant, id)), `${id} deleted`)
      for (const id of kept) assert.isTrue(Option.isSome(yield* stores.first.get(tenant, id)), `${id} kept`)
    })

    test("exportJsonLines writes every snapshot of a query as one JSON object a line", function*(stores) {
      const tenant = ids("tenant")
      const saved: Array<ExecutionSnapshot> = []
      for (let i = 0; i < 3; i++) {
        const lease = yield* leased(stores.first, tenant)
        const s = snapshotOf(lease, { endedAt: base + i })
        yield* stores.first.saveIfAbsent(s, lease, base)
        saved.push(s)
      }
      let out = ""
      const n = yield* exportJsonLines({ tenantId: tenant, pageSize: 2 }, (chunk) => Effect.sync(() => void (out += chunk))).pipe(
        Effect.provideService(ExecutionHistoryStore, stores.second)
      )
      assert.strictEqual(n, 3)
      assert.isTrue(out.endsWith("\n"))
      assert.deepStrictEqual(out.trimEnd().split("\n").map((l) => JSON.parse(l)), saved)
    })

    test("bad input is refused with InvalidInputError naming the field", function*(stores) {
      const lease = yield* leased(stores.first, ids("tenant"))
      const h = stores.first
      yield* expectInvalid(h.saveIfAbsent(snapshotOf(lease, { status: "Running" as never }), lease, base), "snapshot.status", "running status")
      yield* expectInvalid(h.saveIfAbsent(snapshotOf(lease, { executionId: ids("exec") }), lease, base), "lease", "another tree's lease")
      yield* expectInvalid(h.saveIfAbsent(snapshotOf(lease, { spend: 10n as never }), lease, base), "snapshot", "not JSON")
      yield* expectInvalid(h.list({ tenantId: lease.tenantId, limit: 0 }), "limit", "limit 0")
      yield* expectInvalid(h.list({ tenantId: "", limit: 1 }), "tenantId", "no tenant")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(h.list({ tenantId: bad, limit: 1 }), "tenantId", `tenant with ${what}`)
        yield* expectInvalid(h.list({ tenantId: lease.tenantId, workflowName: bad, limit: 1 }), "workflowName", `workflow with ${what}`)
        yield* expectInvalid(h.get(lease.tenantId, bad), "executionId", `id with ${what}`)
      }
      yield* expectInvalid(h.deleteEndedBefore(Number.NaN, 1), "cutoff", "NaN cutoff")
      yield* expectInvalid(h.get(lease.tenantId, ""), "executionId", "empty id")
    })

    test("deleteExecutions deletes the snapshots named, of one tenant only", function*(stores) {
      const tenantId = ids("tenant")
      const leases = [yield* leased(stores.first, tenantId), yield* leased(stores.first, tenantId), yield* leased(stores.first, tenantId)]
      for (const l of leases) assert.isTrue(yield* stores.first.saveIfAbsent(snapshotOf(l), l, base + 10))
      const otherTenant = yield* leased(stores.first, ids("tenant"))
      assert.isTrue(yield* stores.first.saveIfAbsent(snapshotOf(otherTenant), otherTenant, base + 10))
      const named = [leases[0]!.rootExecutionId, leases[1]!.rootExecutionId, otherTenant.rootExecutionId]
      assert.strictEqual(yield* stores.second.deleteExecutions(tenantId, named), 2, "the two of this tenant")
      assert.isTrue(Option.isNone(yield* stores.first.get(tenantId, leases[0]!.rootExecutionId)))
      assert.isTrue(Option.isSome(yield* stores.first.get(tenantId, leases[2]!.rootExecutionId)), "one not named stays")
      assert.isTrue(Option.isSome(yield* stores.first.get(otherTenant.tenantId, otherTenant.rootExecutionId)), "another tenant's stays")
      assert.strictEqual(yield* stores.first.deleteExecutions(tenantId, named), 0, "again: nothing")
      assert.strictEqual(yield* stores.first.deleteExecutions(tenantId, []), 0)
      yield* expectInvalid(stores.first.deleteExecutions(tenantId, [""]), "executionIds", "an empty id")
    })
  })
}
