/**
 * An open breaker in every instance's readiness: three instances configured
 * with `providers`, over one stores bundle (memory, SQLite) and nothing else
 * — the bundle provides the `CircuitBreakerStore`. Failures on one instance
 * open the circuit; `Baton.checkReadiness` on every instance reports
 * `provider:<key>` Degraded (never Unhealthy), half-open after the open time,
 * Healthy again after a good probe.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Schema } from "effect"
import * as CircuitBreaker from "effect/persistence/CircuitBreaker"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { SqliteStores } from "../../../layers/sqlite/index.ts"
import * as Baton from "../../../src/runtime/Baton.ts"
import type * as Health from "../../../src/runtime/Health.ts"
import * as Provider from "../../../src/runtime/limits/Provider.ts"
import * as Harness from "../../../src/testing/Harness.ts"
import { errorTag, memoryStores } from "../fixtures.ts"

class ProviderDown extends Schema.TaggedError<ProviderDown>()("ProviderDown", {}) {}

const sqliteBundle = Layer.unwrap(
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-limits-ready-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => SqliteStores.layer({ path: Path.join(dir, "stores.sqlite"), busyTimeout: 0 })))
)

const backends = [
  { name: "memory", stores: memoryStores },
  { name: "sqlite", stores: sqliteBundle }
] as const

const llm: Provider.Provider = {
  key: "llm",
  breaker: { tripPolicy: CircuitBreaker.consecutive(2), openDuration: "30 seconds" }
}

const component = (report: Health.HealthReport) => report.components.find((c) => c.name === "provider:llm")

const readiness = (h: Harness.Harness, i: number) => h.instance(i).baton.checkReadiness

const guarded = <A, E>(h: Harness.Harness, i: number, call: Effect.Effect<A, E>) =>
  h.run(i, () => Effect.provide(Provider.guard(llm, { holder: h.instance(i).instanceId })(call), h.instance(i).instance.services) as Effect.Effect<A, unknown>)

for (const backend of backends) {
  describe(`breaker readiness through Baton.checkReadiness on ${backend.name}, three instances`, () => {
    it.effect("failures open the breaker: every instance Degraded (never Unhealthy); half-open after its open time on every instance; a good probe makes them Healthy", () =>
      Effect.gen(function*() {
        const h = yield* Harness.make({ instances: 3, baton: { workflows: [], providers: [llm] } })
        for (const i of [0, 1, 2]) {
          const report = yield* readiness(h, i)
          assert.strictEqual(report.status, "Healthy", JSON.stringify(report.components))
          assert.deepStrictEqual(component(report), { name: "provider:llm", status: "Healthy", message: "circuit closed" })
        }
        for (let k = 0; k < 2; k++) assert.strictEqual(errorTag(yield* Fiber.await(yield* guarded(h, 0, Effect.fail(new ProviderDown())))), "ProviderDown")
        for (const i of [0, 1, 2]) {
          const report = yield* readiness(h, i)
          assert.strictEqual(report.status, "Degraded", `instance ${i}: ${JSON.stringify(report.components)}`)
          assert.strictEqual(component(report)?.status, "Degraded")
          assert.include(component(report)?.message, "circuit open")
          assert.isFalse(report.components.some((c) => c.status === "Unhealthy"))
        }
        yield* h.advance("30 seconds")
        for (const i of [0, 1, 2]) {
          const report = yield* readiness(h, i)
          assert.strictEqual(report.status, "Degraded", `instance ${i}`)
          assert.include(component(report)?.message, "half-open", `instance ${i} sees the half-open circuit`)
        }
        assert.strictEqual(errorTag(yield* Fiber.await(yield* guarded(h, 2, Effect.void))), "Success")
        for (const i of [0, 1, 2]) {
          const report = yield* readiness(h, i)
          assert.strictEqual(report.status, "Healthy", `instance ${i}: ${JSON.stringify(report.components)}`)
          assert.strictEqual(component(report)?.status, "Healthy")
        }
      }).pipe(Effect.provide(Layer.fresh(backend.stores))), 60_000)
  })
}

describe("the providers option", () => {
  it.effect("a provider with a breaker and no CircuitBreakerStore in context fails the Layer with BatonConfigError on providers", () =>
    Effect.gen(function*() {
      const stores = yield* Layer.build(memoryStores)
      const exit = yield* Effect.exit(Layer.build(Baton.layer({ workflows: [], providers: [llm] })).pipe(
        Effect.provide(Context.omit(CircuitBreaker.CircuitBreakerStore)(stores))
      ))
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(errorTag(exit), "BatonConfigError")
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "providers")
    }))

  it.effect("a bad provider or a bad quota fails with BatonConfigError naming the field", () =>
    Effect.gen(function*() {
      const stores = yield* Layer.build(memoryStores)
      const field = (options: Parameters<typeof Baton.layer>[0]) =>
        Layer.build(Baton.layer(options)).pipe(
          Effect.provide(stores),
          Effect.flip,
          Effect.map((e) => (e as { field?: string }).field)
        )
      assert.strictEqual(yield* field({ workflows: [], providers: [{ key: "" }] }), "providers: provider.key")
      assert.strictEqual(yield* field({ workflows: [], providers: [{ key: "a" }, { key: "a" }] }), "providers")
      assert.strictEqual(yield* field({ workflows: [], tenantQuota: 0 }), "tenantQuota")
      assert.strictEqual(yield* field({ workflows: [], tenantQuota: 2.5 }), "tenantQuota")
      assert.strictEqual(yield* field({ workflows: [], onOverQuota: "drop" as never }), "onOverQuota")
    }))
})
