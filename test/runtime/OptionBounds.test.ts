/**
 * Every period of every Layer has a floor (and a ceiling where one matters),
 * every count a range, every flag is a boolean: a value outside is refused
 * when the Layer is built (or the call made), naming the field and the range
 * it may take — never accepted to spin, never a defect.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Baton, type BatonConfig, Leader, ProviderSlots, TenantQuota } from "../../src/index.ts"
import { MemoryStores } from "../../layers/memory/index.ts"
import { SqliteClient, SqliteStores } from "../../layers/sqlite/index.ts"
import { oneStep } from "./fixtures.ts"

const tmpFile = () => Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-bounds-")), "s.sqlite")

/** "built", or the failure's tag, field and message; a defect says so. */
const outcome = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.as("built"),
    Effect.catch((e: any) => Effect.succeed(`${e?._tag} ${e?.field ?? ""}: ${e?.message}`)),
    Effect.catchDefect((d) => Effect.succeed(`defect: ${String(d)}`))
  )

const tryBuild = <A, E>(layer: Layer.Layer<A, E>) => outcome(Effect.scoped(Layer.build(layer)))

const baton = (options: Partial<BatonConfig.BatonConfigOptions>) =>
  tryBuild(Baton.layer({ workflows: [oneStep], ...options }).pipe(Layer.provide(Layer.fresh(MemoryStores.layer))))

describe("Baton.layer: every period has a floor", () => {
  it.effect("sweepInterval, waitPoll, pauseRetention, requestRetention, historyRetention of 1 nanosecond are refused", () =>
    Effect.gen(function*() {
      assert.match(yield* baton({ sweepInterval: "1 nanos" }), /^BatonConfigError sweepInterval: .*at least 100 ms/)
      assert.match(yield* baton({ waitPoll: "1 nanos" }), /^BatonConfigError waitPoll: .*at least 10 ms/)
      assert.match(yield* baton({ pauseRetention: "1 nanos" }), /^BatonConfigError pauseRetention: .*at least 1000 ms/)
      assert.match(yield* baton({ requestRetention: "1 nanos" }), /^BatonConfigError requestRetention: .*at least 1000 ms/)
      assert.match(yield* baton({ historyRetention: "1 nanos" }), /^BatonConfigError historyRetention: .*at least 1000 ms/)
      assert.match(yield* baton({ recoveryBackoff: "1 nanos" }), /^BatonConfigError recoveryBackoff: .*at least 10 ms/)
      assert.match(yield* baton({ undoBackoff: "1 nanos" }), /^BatonConfigError undoBackoff: .*at least 10 ms/)
    }))

  it.effect("the floors themselves are accepted", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* baton({ sweepInterval: "100 millis", waitPoll: "10 millis", pauseRetention: "1 second", requestRetention: "1 second", historyRetention: "1 second" }), "built")
    }))

  it.effect("a bigint (nanoseconds) is read as a duration; a negative one is refused, not a defect", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* baton({ waitPoll: 20_000_000n }), "built")
      assert.match(yield* baton({ waitPoll: -5n }), /^BatonConfigError waitPoll: /)
    }))
})

describe("the lease option: one parser, one default, for Baton, Leader, TenantQuota and ProviderSlots", () => {
  it.effect("Leader.run refuses a lease below 1 second, naming the field", () =>
    Effect.gen(function*() {
      const out = yield* outcome(Leader.run("bounds", Effect.void, { lease: "1 nanos" }).pipe(Effect.provide(Layer.fresh(MemoryStores.layer))))
      assert.match(out, /^InvalidInputError lease: .*at least 1000 ms/)
    }))

  it.effect("TenantQuota.withPermit refuses a lease of 1 nanosecond and a lease that is not a duration, as typed errors", () =>
    Effect.gen(function*() {
      const permit = (lease: any) =>
        outcome(TenantQuota.withPermit("t", { cap: 1, holder: "i", lease })(Effect.void).pipe(Effect.provide(Layer.fresh(MemoryStores.layer))))
      assert.match(yield* permit("1 nanos"), /^InvalidInputError lease: .*at least 1000 ms/)
      assert.match(yield* permit("soon"), /^InvalidInputError lease: .*not a duration/)
      assert.match(yield* outcome(TenantQuota.withPermit("t", { cap: 1, holder: "i", pollInterval: "1 nanos" })(Effect.void).pipe(Effect.provide(Layer.fresh(MemoryStores.layer)))), /^InvalidInputError pollInterval: .*at least 10 ms/)
    }))

  it.effect("ProviderSlots.withSlot refuses a lease of 1 nanosecond and a poll of 1 nanosecond", () =>
    Effect.gen(function*() {
      const slot = (options: object) =>
        outcome(ProviderSlots.withSlot("p", { max: 1, holder: "i", ...options })(Effect.void).pipe(Effect.provide(Layer.fresh(MemoryStores.layer))))
      assert.match(yield* slot({ lease: "1 nanos" }), /^InvalidInputError lease: .*at least 1000 ms/)
      assert.match(yield* slot({ pollInterval: "1 nanos" }), /^InvalidInputError pollInterval: .*at least 10 ms/)
      assert.strictEqual(yield* slot({ lease: "1 second", pollInterval: "10 millis" }), "built")
    }))
})

describe("store options that cannot work are refused at build", () => {
  it.effect("SqliteStores: wakeups \"no\" (not a boolean), busyRetries 1e12", () =>
    Effect.gen(function*() {
      assert.match(yield* tryBuild(SqliteStores.layer({ path: tmpFile(), wakeups: "no" as never })), /^BatonConfigError wakeups: .*true or false/)
      assert.match(yield* tryBuild(SqliteClient.layer({ path: tmpFile(), busyRetries: 1e12 })), /^BatonConfigError busyRetries: .*from 0 to 100000/)
      assert.match(yield* tryBuild(SqliteClient.layer({ path: tmpFile(), statementCacheSize: 1e12 })), /^BatonConfigError statementCacheSize: .*from 1 to 100000/)
      assert.match(yield* tryBuild(SqliteStores.layer({ path: tmpFile(), wakeups: { pollInterval: "1 nanos" } })), /^BatonConfigError wakeups.pollInterval: .*at least 5 ms/)
    }))
})
