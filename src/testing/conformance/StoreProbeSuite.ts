/**
 * Conformance suite for {@link StoreProbe}.
 *
 * @since 0.1.0
 */
import { assert } from "../internal/vitest.ts"
import { Context, Effect } from "effect"
import { type StoreFacts, StoreProbe } from "../../stores/StoreProbe.ts"
import type { SuiteOptions } from "./Suite.ts"
import { defineSuite } from "./SuiteDefinition.ts"

/** Checks the fields of `facts` against what its tag promises. */
const wellFormed = (facts: StoreFacts) => {
  switch (facts._tag) {
    case "Memory":
      return assert.deepStrictEqual(Object.keys(facts), ["_tag"])
    case "Sqlite":
      assert.isString(facts.path)
      for (const field of [facts.fileSystem, facts.mountPoint]) assert.oneOf(typeof field, ["string", "undefined"])
      return assert.strictEqual(facts.fileSystem === undefined, facts.mountPoint === undefined, "a file system comes with its mount point")
    case "Postgres":
      assert.oneOf(facts.pooling, ["direct", "session", "transaction"])
      assert.isTrue(facts.keepaliveSeconds === undefined || (Number.isInteger(facts.keepaliveSeconds) && facts.keepaliveSeconds > 0), String(facts.keepaliveSeconds))
      return assert.isAbove(facts.serverVersion, 0)
    default:
      return assert.fail(`unknown facts ${JSON.stringify(facts)}`)
  }
}

/**
 * Registers the StoreProbe conformance tests (call it at the top level of a
 * vitest file): a probe answers well-formed facts, the same on every
 * instance over one backend, and the same when asked again.
 *
 * @category conformance
 * @since 0.1.0
 */
export const storeProbeSuite = (options: SuiteOptions<StoreProbe>): void => {
  const { register } = defineSuite(options, {
    contract: "StoreProbe",
    pick: (ctx) => Context.get(ctx, StoreProbe),
    ping: (s) => s.probe
  })

  register((test) => {
    test("the facts are well-formed for their kind of store", function*(stores) {
      wellFormed(yield* stores.first.probe)
    })

    test("every instance over the same stores sees the same facts, and again when asked twice", function*(stores) {
      const [a, b, again] = yield* Effect.all([stores.first.probe, stores.second.probe, stores.first.probe])
      assert.deepStrictEqual(b, a)
      assert.deepStrictEqual(again, a)
    })
  })
}
