/**
 * Conformance suite for {@link TreeStore}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Option } from "effect"
import type { LeaseStore } from "../../stores/LeaseStore.ts"
import { reservedPrefix, TreeStore } from "../../stores/TreeStore.ts"
import { expectInvalid, expectTag, illFormedIds, none, nonJsonValues, race, some, successes, type SuiteOptions } from "./Suite.ts"
import { defineLeasedSuite } from "./SuiteDefinition.ts"

/**
 * Registers the TreeStore conformance tests (call it at the top level of a
 * vitest file). The Layer provides `LeaseStore` too: a fenced write checks
 * the tree's lease in the same atomic step.
 *
 * @category conformance
 * @since 0.1.0
 */
export const treeStoreSuite = (options: SuiteOptions<TreeStore | LeaseStore>): void => {
  const { ids, racers, register } = defineLeasedSuite(options, "TreeStore", TreeStore)
  const base = 1_000_000_000_000
  const ttl = 30_000
  const tree = () => ({ tenant: ids("tenant"), root: ids("root") })

  register((test) => {
    test(`saveIfAbsent: of ${racers} racers for one key exactly one writes, and its value stays`, function*(stores) {
      const { root, tenant } = tree()
      const exits = yield* race(racers, (i) => stores.at(i).saveIfAbsent(tenant, root, "step/1/result", { racer: i }))
      const answers = successes(exits)
      assert.strictEqual(answers.length, racers)
      const winners = answers.flatMap((won, i) => (won ? [i] : []))
      assert.strictEqual(winners.length, 1, "exactly one saveIfAbsent writes")
      for (const s of [stores.first, stores.second]) {
        assert.deepStrictEqual(some(yield* s.get(tenant, root, "step/1/result"), "get"), { racer: winners[0]! })
      }
    })

    test("saveIfAbsent of a key that exists is refused and keeps the first value; JSON values round-trip", function*(stores) {
      const { root, tenant } = tree()
      const value = { text: "héllo ✓", n: -1.5, list: [1, "two", null, { deep: [true] }], none: null }
      assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, "k", value))
      assert.isFalse(yield* stores.second.saveIfAbsent(tenant, root, "k", "other"))
      assert.deepStrictEqual(some(yield* stores.second.get(tenant, root, "k"), "get"), value)
      for (const scalar of ["a string", 0, false, null]) {
        const k = ids("key")
        assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, k, scalar))
        assert.deepStrictEqual(some(yield* stores.second.get(tenant, root, k), `get ${JSON.stringify(scalar)}`), scalar)
      }
      none(yield* stores.first.get(tenant, root, "absent"), "a key never written")
    })

    test("keys under @baton/ are the runtime's: user writes fail with ReservedKeyError; saveReservedIfAbsent writes them", function*(stores) {
      const { root, tenant } = tree()
      const key = `${reservedPrefix}cancel-request`
      const refused = yield* expectTag(stores.first.saveIfAbsent(tenant, root, key, { by: "user" }), "ReservedKeyError", "user write")
      assert.strictEqual(refused.key, key)
      none(yield* stores.first.get(tenant, root, key), "the refused write wrote nothing")
      assert.isTrue(yield* stores.second.saveReservedIfAbsent(tenant, root, "cancel-request", { by: "runtime" }))
      assert.isFalse(yield* stores.first.saveReservedIfAbsent(tenant, root, "cancel-request", { by: "again" }))
      assert.deepStrictEqual(some(yield* stores.first.get(tenant, root, key), "get"), { by: "runtime" })
      yield* expectTag(stores.second.saveIfAbsent(tenant, root, key, "x"), "ReservedKeyError", "user write of an existing reserved key")
      assert.deepStrictEqual(
        yield* stores.first.list(tenant, root, reservedPrefix),
        [{ key, value: { by: "runtime" } }]
      )
    })

    test(`saveReservedIfAbsent: of ${racers} racers exactly one writes`, function*(stores) {
      const { root, tenant } = tree()
      const exits = yield* race(racers, (i) => stores.at(i).saveReservedIfAbsent(tenant, root, "unwinding", { racer: i }))
      assert.strictEqual(successes(exits).filter((won) => won).length, 1)
    })

    test("list answers the keys starting with the prefix, in key order", function*(stores) {
      const { root, tenant } = tree()
      for (const [k, v] of [["b/2", 2], ["a/1", 1], ["b/1", 1], ["c", 3], ["b", 0], ["b/10", 10]] as const) {
        assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, k, v))
      }
      assert.isTrue(yield* stores.first.saveReservedIfAbsent(tenant, root, "compensated/x", true))
      assert.isTrue(yield* stores.first.saveIfAbsent(tenant, ids("root"), "b/3", 3), "another tree")
      const s = stores.second
      assert.deepStrictEqual(yield* s.list(tenant, root, "b/"), [
        { key: "b/1", value: 1 },
        { key: "b/10", value: 10 },
        { key: "b/2", value: 2 }
      ])
      assert.deepStrictEqual((yield* s.list(tenant, root, "")).map((e) => e.key), [
        "@baton/compensated/x",
        "a/1",
        "b",
        "b/1",
        "b/10",
        "b/2",
        "c"
      ])
      assert.deepStrictEqual(yield* s.list(tenant, root, "d"), [])
      assert.deepStrictEqual(yield* s.list(tenant, root, "b/1"), [{ key: "b/1", value: 1 }, { key: "b/10", value: 10 }])
    })

    test("getMany answers the entries of the keys that exist, in key order, reserved ones too, in one call", function*(stores) {
      const { root, tenant } = tree()
      yield* stores.first.saveIfAbsent(tenant, root, "b", { n: 2 })
      yield* stores.first.saveIfAbsent(tenant, root, "a", [1, "one"])
      yield* stores.second.saveReservedIfAbsent(tenant, root, "flag", true)
      // Another tree's key of the same name is not this tree's.
      yield* stores.first.saveIfAbsent(tenant, ids("root"), "c", 3)
      assert.deepStrictEqual(yield* stores.second.getMany(tenant, root, ["b", `${reservedPrefix}flag`, "c", "a"]), [
        { key: `${reservedPrefix}flag`, value: true },
        { key: "a", value: [1, "one"] },
        { key: "b", value: { n: 2 } }
      ])
      assert.deepStrictEqual(yield* stores.first.getMany(tenant, root, ["a", "a"]), [{ key: "a", value: [1, "one"] }], "a key asked twice, once")
      assert.deepStrictEqual(yield* stores.first.getMany(tenant, root, ["zz"]), [])
      assert.deepStrictEqual(yield* stores.first.getMany(tenant, root, []), [])
      assert.deepStrictEqual(yield* stores.first.getMany(ids("tenant"), root, ["a", "b"]), [], "isolated by tenant")
    })

    test("list treats the prefix literally (no pattern characters)", function*(stores) {
      const { root, tenant } = tree()
      for (const k of ["a%b", "axb", "a_c", "ayc", "a\\d", "a*"]) {
        assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, k, k))
      }
      assert.deepStrictEqual((yield* stores.second.list(tenant, root, "a%")).map((e) => e.key), ["a%b"])
      assert.deepStrictEqual((yield* stores.second.list(tenant, root, "a_")).map((e) => e.key), ["a_c"])
      assert.deepStrictEqual((yield* stores.second.list(tenant, root, "a\\")).map((e) => e.key), ["a\\d"])
      assert.deepStrictEqual((yield* stores.second.list(tenant, root, "a*")).map((e) => e.key), ["a*"])
    })

    test("deleteRoot removes every key of the tree (reserved ones too) and answers how many", function*(stores) {
      const { root, tenant } = tree()
      const otherRoot = ids("root")
      for (const k of ["x", "y", "z"]) assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, k, k))
      assert.isTrue(yield* stores.first.saveReservedIfAbsent(tenant, root, "unwinding", "r"))
      assert.isTrue(yield* stores.first.saveIfAbsent(tenant, otherRoot, "x", "kept"))
      assert.strictEqual(yield* stores.second.deleteRoot(tenant, root), 4)
      assert.deepStrictEqual(yield* stores.first.list(tenant, root, ""), [])
      none(yield* stores.first.get(tenant, root, "x"), "deleted")
      assert.deepStrictEqual(some(yield* stores.first.get(tenant, otherRoot, "x"), "another tree"), "kept")
      assert.strictEqual(yield* stores.second.deleteRoot(tenant, root), 0, "nothing left")
      assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, "x", "again"), "a deleted key can be written again")
    })

    test("findRootsWith pages over the trees of every tenant that hold a findable reserved key, in (tenant, root) order; a deleted tree is not answered", function*(stores) {
      const tenant = ids("tenant")
      const roots = [ids("root"), ids("root"), ids("root"), ids("root")].sort()
      const [r1, r2, r3, r4] = roots as [string, string, string, string]
      for (const r of [r1, r3, r4]) assert.isTrue(yield* stores.first.saveReservedIfAbsent(tenant, r, "cancel-request", { at: r }))
      // Other keys do not make a tree findable.
      assert.isTrue(yield* stores.first.saveReservedIfAbsent(tenant, r2, "unwinding", 1))
      assert.isTrue(yield* stores.first.saveIfAbsent(tenant, r2, "cancel-request", "a user's key"))
      const other = ids("tenant")
      assert.isTrue(yield* stores.first.saveReservedIfAbsent(other, r2, "cancel-request", 1))
      // The store may hold other tests' trees: read from just before this tenant, and only its trees.
      const start = Option.some({ tenantId: tenant, rootExecutionId: "\u0001" })
      const mine = (page: ReadonlyArray<{ readonly tenantId: string; readonly rootExecutionId: string }>) =>
        page.filter((r) => r.tenantId === tenant).map((r) => r.rootExecutionId)
      assert.deepStrictEqual(mine(yield* stores.second.findRootsWith("cancel-request", 100, start)), [r1, r3, r4])
      // Pages of one, each strictly after the last.
      const first = yield* stores.second.findRootsWith("cancel-request", 1, start)
      assert.deepStrictEqual(first, [{ tenantId: tenant, rootExecutionId: r1 }])
      const next = yield* stores.second.findRootsWith("cancel-request", 2, Option.some(first[0]!))
      assert.deepStrictEqual(next, [{ tenantId: tenant, rootExecutionId: r3 }, { tenantId: tenant, rootExecutionId: r4 }])
      const found = (yield* stores.second.findRootsWith("cancel-request", 100, Option.some({ tenantId: other, rootExecutionId: "\u0001" })))
        .filter((r) => r.tenantId === other)
      assert.deepStrictEqual(found, [{ tenantId: other, rootExecutionId: r2 }], "another tenant's tree too")
      assert.strictEqual(yield* stores.first.deleteRoot(tenant, r3), 1)
      assert.deepStrictEqual(mine(yield* stores.second.findRootsWith("cancel-request", 100, start)), [r1, r4], "a deleted tree goes")
      yield* expectInvalid(stores.first.findRootsWith("unwinding", 10, Option.none()), "name", "findRootsWith, a name not findable")
      yield* expectInvalid(stores.first.findRootsWith("cancel-request", 0, Option.none()), "limit", "findRootsWith, limit 0")
      yield* expectInvalid(stores.first.findRootsWith("cancel-request", 10, Option.some({ tenantId: "", rootExecutionId: r1 })), "after.tenantId", "findRootsWith, empty cursor tenant")
    })

    test("every read is isolated by tenant: another tenant sees nothing and changes nothing", function*(stores) {
      const { root, tenant } = tree()
      const other = ids("tenant")
      assert.isTrue(yield* stores.first.saveIfAbsent(tenant, root, "k", "mine"))
      const s = stores.second
      none(yield* s.get(other, root, "k"), "get, another tenant")
      assert.deepStrictEqual(yield* s.list(other, root, ""), [])
      assert.strictEqual(yield* s.deleteRoot(other, root), 0)
      assert.isTrue(yield* s.saveIfAbsent(other, root, "k", "theirs"), "the same key is free under another tenant")
      assert.deepStrictEqual(some(yield* s.get(tenant, root, "k"), "mine"), "mine")
      assert.deepStrictEqual(some(yield* s.get(other, root, "k"), "theirs"), "theirs")
      assert.strictEqual(yield* s.deleteRoot(other, root), 1)
      assert.deepStrictEqual(some(yield* s.get(tenant, root, "k"), "mine, after the other tenant's deleteRoot"), "mine")
    })

    test("saveReservedFenced writes only under the current lease, checked with the write: a stale, expired or released holder gets LeaseLostError and writes nothing", function*(stores) {
      const { root, tenant } = tree()
      const lease = some(yield* stores.first.leases.acquire(tenant, root, "holder-1", ttl, base), "acquire")
      assert.isTrue(yield* stores.second.saveReservedFenced(tenant, root, "compensated/a", { by: 1 }, lease, base + 1))
      assert.isFalse(yield* stores.first.saveReservedFenced(tenant, root, "compensated/a", { by: 2 }, lease, base + 2), "a key that exists is kept")
      assert.deepStrictEqual(some(yield* stores.first.get(tenant, root, `${reservedPrefix}compensated/a`), "kept"), { by: 1 })
      // Into another tree of the tenant (a parent refusing its child's hand-off), under the writer's own lease.
      const child = ids("root")
      assert.isTrue(yield* stores.first.saveReservedFenced(tenant, child, "handoff", { refusedBy: root }, lease, base + 3))
      yield* expectTag(stores.first.saveReservedFenced(tenant, root, "unwinding", 1, lease, base + ttl), "LeaseLostError", "at the lease's expiry")
      const next = some(yield* stores.second.leases.acquire(tenant, root, "holder-2", ttl, base + ttl + 1), "takeover")
      yield* expectTag(stores.first.saveReservedFenced(tenant, root, "unwinding", 1, lease, base + ttl + 2), "LeaseLostError", "the old holder")
      assert.isTrue(yield* stores.second.saveReservedFenced(tenant, root, "unwinding", 2, next, base + ttl + 2))
      assert.isTrue(yield* stores.second.leases.release(next))
      yield* expectTag(stores.second.saveReservedFenced(tenant, root, "compensated/b", 1, next, base + ttl + 3), "LeaseLostError", "a released lease")
      const noLease = { ...lease, rootExecutionId: ids("root") }
      yield* expectTag(stores.first.saveReservedFenced(tenant, root, "compensated/c", 1, noLease, base + 4), "LeaseLostError", "no lease at all")
      assert.deepStrictEqual(
        (yield* stores.first.list(tenant, root, reservedPrefix)).map((e) => e.key),
        [`${reservedPrefix}compensated/a`, `${reservedPrefix}unwinding`],
        "no refused write landed"
      )
      assert.deepStrictEqual(some(yield* stores.first.get(tenant, root, `${reservedPrefix}unwinding`), "unwinding"), 2)
    })

    test(`saveReservedFenced: of ${racers} racers under one lease exactly one writes`, function*(stores) {
      const { root, tenant } = tree()
      const lease = some(yield* stores.first.leases.acquire(tenant, root, "holder-1", ttl, base), "acquire")
      const exits = yield* race(racers, (i) => stores.at(i).saveReservedFenced(tenant, root, "unwinding", { racer: i }, lease, base + 1))
      const winners = successes(exits).filter((won) => won)
      assert.strictEqual(winners.length, 1, "exactly one fenced save writes")
    })

    test("bad input fails with InvalidInputError naming the argument, and writes nothing", function*({ first: s }) {
      const { root, tenant } = tree()
      yield* expectInvalid(s.saveIfAbsent("", root, "k", 1), "tenantId", "saveIfAbsent, empty tenant")
      yield* expectInvalid(s.saveIfAbsent(tenant, "", "k", 1), "rootExecutionId", "saveIfAbsent, empty root")
      yield* expectInvalid(s.saveIfAbsent(tenant, root, "", 1), "key", "saveIfAbsent, empty key")
      for (const [what, bad] of illFormedIds) {
        yield* expectInvalid(s.saveIfAbsent(bad, root, "k", 1), "tenantId", `saveIfAbsent, tenant with ${what}`)
        yield* expectInvalid(s.saveIfAbsent(tenant, bad, "k", 1), "rootExecutionId", `saveIfAbsent, root with ${what}`)
        yield* expectInvalid(s.saveIfAbsent(tenant, root, bad, 1), "key", `saveIfAbsent, key with ${what}`)
        yield* expectInvalid(s.getMany(tenant, root, ["k", bad]), "keys", `getMany, a key with ${what}`)
        yield* expectInvalid(s.list(tenant, root, bad), "prefix", `list, prefix with ${what}`)
      }
      yield* expectInvalid(s.getMany("", root, ["k"]), "tenantId", "getMany, empty tenant")
      yield* expectInvalid(s.getMany(tenant, root, ["k", ""]), "keys", "getMany, an empty key")
      yield* expectInvalid(s.getMany(tenant, root, "k" as never), "keys", "getMany, keys not a list")
      yield* expectInvalid(s.getMany(tenant, root, Array.from({ length: 101 }, (_, i) => `k${i}`)), "keys", "getMany, over 100 keys")
      for (const [what, value] of nonJsonValues) {
        yield* expectInvalid(s.saveIfAbsent(tenant, root, "k", value), "value", `saveIfAbsent, value ${what}`)
        yield* expectInvalid(s.saveReservedIfAbsent(tenant, root, "r", value), "value", `saveReservedIfAbsent, value ${what}`)
      }
      yield* expectInvalid(s.saveReservedIfAbsent(tenant, root, "", 1), "name", "saveReservedIfAbsent, empty name")
      yield* expectInvalid(s.saveReservedIfAbsent("", root, "r", 1), "tenantId", "saveReservedIfAbsent, empty tenant")
      const lease = { tenantId: tenant, rootExecutionId: root, holder: "h", epoch: 1, expiresAt: base + ttl }
      yield* expectInvalid(s.saveReservedFenced(tenant, root, "", 1, lease, base), "name", "saveReservedFenced, empty name")
      yield* expectInvalid(s.saveReservedFenced(tenant, root, "r", 1, { ...lease, epoch: 0 }, base), "lease.epoch", "saveReservedFenced, epoch 0")
      yield* expectInvalid(s.saveReservedFenced(tenant, root, "r", 1, { ...lease, holder: "" }, base), "lease.holder", "saveReservedFenced, no holder")
      yield* expectInvalid(s.saveReservedFenced(tenant, root, "r", 1, { ...lease, tenantId: ids("tenant") }, base), "lease.tenantId", "saveReservedFenced, another tenant's lease")
      yield* expectInvalid(s.saveReservedFenced(tenant, root, "r", 1, lease, Number.NaN), "now", "saveReservedFenced, now NaN")
      yield* expectInvalid(s.saveReservedFenced(tenant, root, "r", 1n as never, lease, base), "value", "saveReservedFenced, not JSON")
      yield* expectInvalid(s.get(tenant, root, ""), "key", "get, empty key")
      yield* expectInvalid(s.get(tenant, "", "k"), "rootExecutionId", "get, empty root")
      yield* expectInvalid(s.list("", root, ""), "tenantId", "list, empty tenant")
      yield* expectInvalid(s.deleteRoot(tenant, ""), "rootExecutionId", "deleteRoot, empty root")
      assert.deepStrictEqual(yield* s.list(tenant, root, ""), [], "no bad call wrote a key")
      assert.isTrue(Option.isNone(yield* s.get(tenant, root, "k")))
    })
  })
}
