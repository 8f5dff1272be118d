import { assert, describe, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import { LeaseStore, type LeaseStoreShape } from "../../src/stores/LeaseStore.ts"
import { withLeases } from "../../src/testing/conformance/SuiteDefinition.ts"

/** A store written as a class: its methods live on the prototype, not on the instance. */
class ClassStore {
  readonly name: string
  constructor(name: string) {
    this.name = name
  }
  greet(): Effect.Effect<string> {
    return Effect.succeed(`hello from ${this.name}`)
  }
}
const ClassStoreKey = Context.Service<ClassStore>("test/ClassStore")

describe("the leased suites' pick", () => {
  it.effect("keeps a class-instance store's prototype methods, and `this`, beside the lease store", () =>
    Effect.gen(function*() {
      const leases = {} as LeaseStoreShape
      const context = Context.make(ClassStoreKey, new ClassStore("a store")).pipe(Context.add(LeaseStore, leases))
      const picked = withLeases(ClassStoreKey)(context)
      assert.strictEqual(picked.leases, leases)
      assert.strictEqual(yield* picked.greet(), "hello from a store")
    }))
})
