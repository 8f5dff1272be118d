/**
 * `ShardedStores.layer`'s options: what cannot work fails the build with
 * `BatonConfigError` naming the field; a rule answering no shard fails the
 * call typed; a shard down at build is built again on a call once
 * `retryAfter` has passed on the Clock (and not before), and a scan over
 * every shard does not wait for that build.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Layer, Logger, Option } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStores } from "../../layers/memory/index.ts"
import { PgStores } from "../../layers/pg/index.ts"
import { ShardedStores } from "../../layers/sharded/index.ts"
import { BatonConfigError, StoreError } from "../../src/stores/Errors.ts"
import { LeaseStore } from "../../src/stores/LeaseStore.ts"
import { RecordStore } from "../../src/stores/RecordStore.ts"

const memory = (name: string) => ({ name, layer: MemoryStores.layer })

/** The field of the `BatonConfigError` the build fails with. */
const refusal = (options: unknown) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(Layer.build(ShardedStores.layer(options as ShardedStores.ShardedStoresOptions))))
    const error = Option.getOrUndefined(Exit.findErrorOption(exit))
    assert.instanceOf(error, BatonConfigError, JSON.stringify(options, (_k, v) => (typeof v === "function" ? "fn" : v)))
    return { field: (error as BatonConfigError).field, message: (error as BatonConfigError).message }
  })

describe("ShardedStores options", () => {
  it.effect("bad options fail the build with BatonConfigError naming the field", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* refusal({ shards: [], route: { default: "a" } })).field, "shards")
      assert.strictEqual((yield* refusal({ route: { default: "a" } })).field, "shards")
      assert.strictEqual((yield* refusal({ shards: [memory("a"), memory("a")], route: { default: "a" } })).field, "shards[1].name")
      assert.strictEqual((yield* refusal({ shards: [memory("")], route: { default: "" } })).field, "shards[0].name")
      assert.strictEqual((yield* refusal({ shards: [{ name: "a" }], route: { default: "a" } })).field, "shards[0].layer")
      const unknownDefault = yield* refusal({ shards: [memory("a"), memory("b")], route: { default: "z" } })
      assert.strictEqual(unknownDefault.field, "route.default")
      assert.include(unknownDefault.message, `one of "a", "b"`)
      assert.strictEqual((yield* refusal({ shards: [memory("a")], route: { tenants: { acme: "b" }, default: "a" } })).field, "route.tenants.acme")
      assert.strictEqual((yield* refusal({ shards: [memory("a")], route: "a" })).field, "route")
      assert.strictEqual((yield* refusal({ shards: [memory("a")], route: { default: "a", tenant: {} } })).field, "route.tenant")
      assert.strictEqual((yield* refusal({ shards: [memory("a")], route: { default: "a" }, retryAftr: 1 })).field, "retryAftr")
      assert.strictEqual((yield* refusal({ shards: [memory("a")], route: { default: "a" }, retryAfter: "soon" })).field, "retryAfter")
      // A bundle refusing its own options is a mistake, not a shard down: the build fails, naming the shard and the field.
      const typo = yield* refusal({ shards: [{ name: "a", layer: PgStores.layer({ ulr: "x" } as never) }], route: { default: "a" } })
      assert.strictEqual(typo.field, "shards[0].layer: ulr")
    }))

  it.effect("a rule function answering no shard fails the call with a StoreError of kind Config naming what it answered", () =>
    Effect.gen(function*() {
      const leases = Context.get(yield* Layer.build(ShardedStores.layer({ shards: [memory("a")], route: (t) => (t === "@baton" ? "a" : "nowhere") })), LeaseStore)
      const exit = yield* Effect.exit(leases.get("acme", "root-1"))
      const error = Option.getOrUndefined(Exit.findErrorOption(exit))
      assert.instanceOf(error, StoreError)
      assert.strictEqual((error as StoreError).kind, "Config")
      assert.include((error as StoreError).message, `answered "nowhere" for tenant "acme"`)
      // The runtime's own tenant (the leader's lease) is always on the home shard, whatever the function answers.
      const anywhere = Context.get(yield* Layer.build(ShardedStores.layer({ shards: [memory("a"), memory("b")], route: () => "nowhere" })), LeaseStore)
      assert.isTrue(Option.isNone(yield* anywhere.get("@baton", "@baton/leader/retention")))
    }))

  it.effect("a shard down at build fails at once until retryAfter has passed, then a call builds it again", () =>
    Effect.gen(function*() {
      let builds = 0
      // The second build (the server back) takes until `connected` is opened: a slow connect.
      const connected = yield* Deferred.make<void>()
      const flaky = Layer.unwrap(Effect.suspend(() => {
        builds++
        return builds === 1
          ? Effect.succeed(Layer.effectDiscard(Effect.fail(new StoreError({ store: "PgClient", operation: "connect", kind: "Connection", reason: "connection refused" }))))
          : Effect.as(Deferred.await(connected), MemoryStores.layer)
      }))
      const context = yield* Layer.build(ShardedStores.layer({
        shards: [memory("a"), { name: "b", layer: flaky as Layer.Layer<ShardedStores.Stores, StoreError> }],
        route: { tenants: { globex: "b" }, default: "a" },
        retryAfter: "10 seconds"
      }))
      const leases = Context.get(context, LeaseStore)
      assert.strictEqual(builds, 1)
      const early = yield* Effect.exit(leases.get("globex", "root-1"))
      assert.include(String(Option.getOrUndefined(Exit.findErrorOption(early))?.message), `shard "b" (tenant globex) is unavailable`)
      assert.strictEqual(builds, 1, "not built again before retryAfter")
      assert.isTrue(Option.isNone(yield* leases.get("acme", "root-1")), "the other shard answers meanwhile")
      yield* TestClock.adjust("10 seconds")
      // A scan over every shard answers from the shards up at once, and builds the down one in the background.
      const records = Context.get(context, RecordStore)
      assert.deepStrictEqual(yield* records.findByStatus("Running", 10, Option.none()), [], "the scan answers without shard b")
      for (let i = 0; i < 10 && builds < 2; i++) yield* Effect.yieldNow
      assert.strictEqual(builds, 2, "the scan started shard b's build, and did not wait for it")
      yield* Deferred.succeed(connected, undefined)
      assert.isTrue(Option.isNone(yield* leases.get("globex", "root-1")), "built again, it answers")
      assert.strictEqual(builds, 2)
    }))

  it.effect("a shard that stays down is warned about once, then at most once a minute on the Clock with the count said since; back, it is said once", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      let up = false
      const flaky = Layer.unwrap(Effect.sync(() =>
        up
          ? MemoryStores.layer
          : Layer.effectDiscard(Effect.fail(new StoreError({ store: "PgClient", operation: "connect", kind: "Connection", reason: "connection refused" })))
      ))
      const records = Context.get(
        yield* Layer.build(ShardedStores.layer({
          shards: [memory("a"), { name: "b", layer: flaky as Layer.Layer<ShardedStores.Stores, StoreError> }],
          route: { tenants: { globex: "b" }, default: "a" },
          retryAfter: "1 second"
        })),
        RecordStore
      )
      const scan = Effect.provide(records.findByStatus("Running", 10, Option.none()), Logger.layer([Logger.make(({ message }) => logs.push(String(message)))]))
      const said = () => logs.filter((l) => l.includes(`without shard "b"`))
      // A scan a second for a minute (as the sweep and the child-claim fan-out do): one warning.
      for (let i = 0; i < 60; i++) {
        assert.deepStrictEqual(yield* scan, [])
        yield* TestClock.adjust("1 second")
      }
      assert.strictEqual(said().length, 1, said().join("\n"))
      assert.include(said()[0]!, `RecordStore.findByStatus answers without shard "b"`)
      // Its builds, tried again each retryAfter, are warned about as rarely: once at the first build, once since.
      const down = () => logs.filter((l) => l.includes(`shard "b" is down`))
      assert.isAtMost(down().length, 1, down().join("\n"))
      // A minute on, it is said again, with how often it failed meanwhile.
      yield* scan
      assert.strictEqual(said().length, 2, said().join("\n"))
      assert.include(said()[1]!, "59 more times")
      // The shard back: said once.
      up = true
      yield* TestClock.adjust("2 seconds")
      yield* scan
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      yield* scan
      assert.strictEqual(logs.filter((l) => l.includes(`reaches shard "b" again`)).length, 1, logs.join("\n"))
      assert.strictEqual(logs.filter((l) => l.includes(`shard "b" is built again`)).length, 1, logs.join("\n"))
    }))
})
