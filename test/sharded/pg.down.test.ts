/**
 * A Postgres shard that goes down after it was built: shard c reaches its
 * database through a TCP proxy on 127.0.0.1 that the test stops (its
 * listener closed, its connections cut), as a server lost mid-run. Its
 * tenant's calls then fail with a typed, truthful `StoreError` (retryable,
 * naming the shard); the other shards' tenants start and finish executions.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option } from "effect"
import { ShardedStores } from "../../layers/sharded/index.ts"
import { StoreError } from "../../src/stores/Errors.ts"
import * as Harness from "../../src/testing/Harness.ts"
import { approval, makeSideEffects, oneStep } from "../runtime/fixtures.ts"
import { proxy } from "./pgProxy.ts"
import { ensureDatabases, shardBundles, shardSchema, shardUrl } from "./pgShards.ts"

await ensureDatabases()
const schema = shardSchema("sharded_down")

describe("a Postgres shard lost after it was built", () => {
  it.effect("fails its tenant's calls with a retryable StoreError naming the shard; the other tenants' executions start and finish", () =>
    Effect.gen(function*() {
      const cut = yield* proxy(shardUrl("c"))
      const stores = ShardedStores.layer({
        shards: shardBundles(schema, "c", cut.url),
        route: { tenants: { acme: "a", globex: "b", initech: "c" }, default: "a" }
      })
      return yield* Effect.gen(function*() {
        const fx = makeSideEffects()
        const wf = approval(fx)
        const h = yield* Harness.make({ instances: 2, baton: { workflows: [oneStep, wf] } })
        const before = yield* Fiber.join(yield* h.run(0, (b) => b.execute(oneStep, { log: [] }, { tenantId: "initech" })))
        assert.strictEqual(before._tag, "Finished", "initech runs while its shard is up")

        cut.stop()
        // The call retries its store on the Clock (a lost connection is retryable) until it gives up: move the Clock on.
        let ended = false
        const call = yield* h.run(0, (b) => b.execute(oneStep, { log: [] }, { tenantId: "initech" }).pipe(Effect.ensuring(Effect.sync(() => (ended = true)))))
        for (let i = 0; i < 600 && !ended; i++) yield* h.advance("1 second")
        const down = yield* Effect.exit(Fiber.join(call))
        const error = Option.getOrUndefined(Exit.findErrorOption(down))
        assert.instanceOf(error, StoreError, "initech's call fails typed")
        assert.isTrue((error as StoreError).isRetryable, `retryable: ${(error as StoreError).message}`)
        assert.include((error as StoreError).message, `on shard "c"`)

        for (const tenantId of ["acme", "globex"]) {
          const out = yield* Fiber.join(yield* h.run(1, (b) => b.execute(oneStep, { log: [] }, { tenantId })))
          assert.strictEqual(out._tag, "Finished", tenantId)
        }
        // And a pass that pauses, resumed on the other instance, on each of the other shards.
        for (const tenantId of ["acme", "globex"]) {
          const first = yield* Fiber.join(yield* h.run(0, (b) => b.execute(wf, { log: [] }, { tenantId })))
          assert.strictEqual(first._tag, "Paused", tenantId)
          if (first._tag !== "Paused") return
          const second = yield* Fiber.join(yield* h.run(1, (b) => b.resume({ pauseId: first.pauses[0]!.pauseId, decision: "yes", tenantId })))
          assert.strictEqual(second._tag, "Finished", tenantId)
        }
      }).pipe(Effect.provide(stores))
    }))
})
